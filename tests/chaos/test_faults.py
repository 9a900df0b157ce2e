"""The faults of issue 9, each reproduced by a scenario. Every test is expected to fail until its
fault is fixed (``xfail(strict=True)``): once a fix lands the test passes, pytest reports it as
an unexpected pass, and the marker comes off. Only AssertionError counts as the expected failure,
so a broken harness still fails loudly."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from chaos.conftest import assert_checks
from chaos.scene import Result

pytestmark = [pytest.mark.chaos, pytest.mark.integration]

Run = Callable[[str], Result]


def fault(number: int, why: str) -> pytest.MarkDecorator:
    return pytest.mark.xfail(strict=True, raises=AssertionError, reason=f"fault {number}: {why}")


@fault(1, "a job's own timeout is not checked against retry_after: it runs on two workers at once")
def test_fault1_job_timeout_not_below_retry_after_is_refused_at_dispatch_or_runs_once(scenario: Run) -> None:
    assert_checks(scenario("job-timeout-over-retry-after"))


@fault(1, "the worker does not check a payload's timeout against retry_after before running it")
def test_fault1_raw_payload_timeout_not_below_retry_after_is_refused_or_runs_once(scenario: Run) -> None:
    assert_checks(scenario("raw-timeout-over-retry-after"))


@fault(1, "the worker's check ignores the watchdog grace: timeout + grace outlives the reservation")
def test_fault1_timeout_plus_grace_not_below_retry_after_is_refused(scenario: Run) -> None:
    assert_checks(scenario("grace-over-retry-after"))


def test_fault2_stale_worker_cannot_make_a_failed_job_vanish(scenario: Run) -> None:
    assert_checks(scenario("stale-worker-failure"))


@fault(3, "the acknowledgement runs inside the alarm: a network black hole turns a finished job into a retry")
def test_fault3_ack_stalled_by_a_blackhole(scenario: Run) -> None:
    assert_checks(scenario("ack-stall-blackhole"))


@fault(3, "the acknowledgement runs inside the alarm: a frozen server fails a finished job as timed out")
def test_fault3_ack_stalled_by_a_frozen_server(scenario: Run) -> None:
    assert_checks(scenario("ack-stall-sigstop"))


@fault(4, "a killed worker's job goes back to the tail of the ready list, behind the whole backlog")
def test_fault4_killed_job_runs_again_within_retry_after_plus_2s(scenario: Run) -> None:
    assert_checks(scenario("redis-requeue-behind-backlog"))


@fault(5, "after an outage the pop retry backs off up to 30 s without probing")
def test_fault5_workers_resume_within_2s_of_the_server_answering(scenario: Run) -> None:
    assert_checks(scenario("redis-outage"), "resume")


@fault(6, "a row whose attempts overflow makes every pop fail; workers exit and nothing behind it runs")
def test_fault6_postgres_poison_row_fails_alone(scenario: Run) -> None:
    assert_checks(scenario("pg-poison-head"))


@fault(7, "the SQL driver stamps reservations with each worker's own clock")
@pytest.mark.parametrize("driver", ["sqlite", "postgres"])
def test_fault7_clock_skew_runs_no_job_twice(scenario: Run, driver: str) -> None:
    assert_checks(scenario(f"clock-skew-{driver}"))


@fault(8, "failing a job while the failed store is down raises out of the worker")
def test_fault8_failing_survives_a_failed_store_outage(scenario: Run) -> None:
    assert_checks(scenario("failed-store-outage"))


def test_fault9_nan_and_infinity_are_refused(scenario: Run) -> None:
    assert_checks(scenario("nan-payloads"))


@fault(10, "a resumed worker's watchdog exits while the main loop holds a job it just popped")
def test_fault10_resumed_worker_releases_what_it_holds_before_exiting(scenario: Run) -> None:
    assert_checks(scenario("resumed-worker-exit"))


@fault(11, "eventbus work does not warn when Redis runs without persistence")
def test_fault11_worker_warns_when_redis_has_no_persistence(scenario: Run) -> None:
    assert_checks(scenario("redis-persistence-warning"))
