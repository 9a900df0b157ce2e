"""Issue 27, defect 1: a batch hung for ever, or finished without its callbacks, when a worker
or Redis died between the separate writes that recorded a job's outcome. Each scenario (see
:mod:`chaos.batch_scenarios`) reproduced it before the fix (they were ``xfail(strict=True)``
until it landed): the success sweeps left 4 of 10 batches hanging and 3 finished without their
callbacks, the failure sweeps 5 of 10 hanging, the killed failed() hook its batch hanging, the
Redis sweep 5 of 16 unfinished, the quick storm 2 of 30."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from chaos.conftest import assert_checks
from chaos.scene import Result

pytestmark = [pytest.mark.chaos, pytest.mark.integration]

Run = Callable[[str], Result]


@pytest.mark.parametrize("driver", ["redis", "sqlite"])
def test_a_worker_killed_at_any_write_of_a_success_leaves_the_batch_to_finish(scenario: Run, driver: str) -> None:
    assert_checks(scenario(f"batch-kill-success-{driver}"))


@pytest.mark.parametrize("driver", ["redis", "sqlite"])
def test_a_worker_killed_at_any_write_of_a_failure_leaves_the_batch_to_finish(scenario: Run, driver: str) -> None:
    assert_checks(scenario(f"batch-kill-failure-{driver}"))


@pytest.mark.parametrize("driver", ["redis", "sqlite"])
def test_a_worker_killed_in_a_slow_failed_hook_leaves_the_batch_to_finish(scenario: Run, driver: str) -> None:
    assert_checks(scenario(f"batch-kill-failed-hook-{driver}"))


def test_redis_killed_at_any_write_leaves_the_batch_to_finish(scenario: Run) -> None:
    assert_checks(scenario("batch-redis-down"))


def test_a_storm_of_kills_over_many_batches_finishes_every_batch_with_its_callbacks_once(scenario: Run) -> None:
    assert_checks(scenario("batch-storm"))
