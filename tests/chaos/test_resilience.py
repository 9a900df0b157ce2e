"""Faults the at-least-once core rides out today: each scenario must lose nothing, duplicate no
more than the jobs in flight at each fault, and strand nothing."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from chaos.conftest import assert_checks
from chaos.scene import Result

pytestmark = [pytest.mark.chaos, pytest.mark.integration]

Run = Callable[[str], Result]


@pytest.mark.parametrize("driver", ["redis", "sqlite", "postgres"])
def test_sigkill_storm_of_a_process_pool(scenario: Run, driver: str) -> None:
    result = scenario(f"sigkill-storm-{driver}")
    assert_checks(result)
    assert "caught 0 jobs" not in result.summary(), "the kills must catch jobs in flight to mean anything"


def test_redis_kill9_and_restart_with_aof(scenario: Run) -> None:
    assert_checks(scenario("redis-kill9-aof"))


def test_redis_outage_loses_nothing(scenario: Run) -> None:
    assert_checks(scenario("redis-outage"), "lost", "duplicates", "stranded", "no-failures", "workers-alive")


def test_connection_resets_through_a_proxy(scenario: Run) -> None:
    assert_checks(scenario("connection-resets"))


def test_blackhole_through_a_proxy(scenario: Run) -> None:
    assert_checks(scenario("blackhole"))


def test_redis_server_frozen_with_sigstop(scenario: Run) -> None:
    assert_checks(scenario("redis-sigstop"))


def test_postgres_backends_terminated(scenario: Run) -> None:
    assert_checks(scenario("pg-backend-termination"))


def test_frozen_worker_past_retry_after(scenario: Run) -> None:
    assert_checks(scenario("frozen-worker"))


def test_jobs_that_ignore_the_timeout_interrupt(scenario: Run) -> None:
    assert_checks(scenario("stubborn-timeouts"))


@pytest.mark.parametrize("driver", ["redis", "sqlite"])
def test_poison_at_the_head_of_the_queue(scenario: Run, driver: str) -> None:
    assert_checks(scenario(f"poison-head-{driver}"))
