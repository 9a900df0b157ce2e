"""The faults of issue 9, each reproduced by a scenario that failed until its fault was fixed.

A fault found later gets its scenario here first, marked with :func:`fault` (``xfail(strict=True)``,
only AssertionError counting as the expected failure, so a broken harness still fails loudly);
once the fix lands the test passes, pytest reports an unexpected pass, and the marker comes off."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from chaos.conftest import assert_checks
from chaos.scene import Result

pytestmark = [pytest.mark.chaos, pytest.mark.integration]

Run = Callable[[str], Result]


def fault(number: int, why: str) -> pytest.MarkDecorator:
    return pytest.mark.xfail(strict=True, raises=AssertionError, reason=f"fault {number}: {why}")


def test_fault1_job_timeout_not_below_retry_after_is_refused_at_dispatch_or_runs_once(scenario: Run) -> None:
    assert_checks(scenario("job-timeout-over-retry-after"))


def test_fault1_raw_payload_timeout_not_below_retry_after_is_refused_or_runs_once(scenario: Run) -> None:
    assert_checks(scenario("raw-timeout-over-retry-after"))


def test_fault1_timeout_plus_grace_not_below_retry_after_is_refused(scenario: Run) -> None:
    assert_checks(scenario("grace-over-retry-after"))


def test_fault2_stale_worker_cannot_make_a_failed_job_vanish(scenario: Run) -> None:
    assert_checks(scenario("stale-worker-failure"))


def test_fault3_ack_stalled_by_a_blackhole(scenario: Run) -> None:
    assert_checks(scenario("ack-stall-blackhole"))


def test_fault3_ack_stalled_by_a_frozen_server(scenario: Run) -> None:
    assert_checks(scenario("ack-stall-sigstop"))


def test_fault4_killed_job_runs_again_within_retry_after_plus_2s(scenario: Run) -> None:
    assert_checks(scenario("redis-requeue-behind-backlog"))


def test_fault5_workers_resume_within_2s_of_the_server_answering(scenario: Run) -> None:
    assert_checks(scenario("redis-outage"), "resume")


def test_fault6_postgres_poison_row_fails_alone(scenario: Run) -> None:
    assert_checks(scenario("pg-poison-head"))


@pytest.mark.parametrize("driver", ["sqlite", "postgres"])
def test_fault7_clock_skew_runs_no_job_twice(scenario: Run, driver: str) -> None:
    assert_checks(scenario(f"clock-skew-{driver}"))


def test_fault8_failing_survives_a_failed_store_outage(scenario: Run) -> None:
    assert_checks(scenario("failed-store-outage"))


def test_fault9_nan_and_infinity_are_refused(scenario: Run) -> None:
    assert_checks(scenario("nan-payloads"))


def test_fault10_resumed_worker_releases_what_it_holds_before_exiting(scenario: Run) -> None:
    assert_checks(scenario("resumed-worker-exit"))


def test_fault11_worker_warns_when_redis_has_no_persistence(scenario: Run) -> None:
    assert_checks(scenario("redis-persistence-warning"))
