"""Issue 27, defect 4: a Redis Cluster master holding the jobs' state keys goes down; queues on
healthy masters keep working and no job pays for its bookkeeping (tests/chaos/cluster_state.py).

Before the fix, 14 of 36 jobs' ``failed()`` hooks ran and 29 records reached the failed store
(rate-limited and overlap-locked jobs failed for good, unique and batched jobs that had run
were failed or ran again), and no batch finished."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from chaos.conftest import assert_checks
from chaos.scene import Result

pytestmark = [pytest.mark.chaos, pytest.mark.integration]

Run = Callable[[str], Result]
JOBS = ("no-failures", "unique-once", "limited-once", "exclusive-once", "throttled-once", "plain-once",
        "batched-once", "unique-locks-released")


def test_a_state_store_error_inside_a_job_is_never_the_jobs_own_failure(scenario: Run) -> None:
    assert_checks(scenario("cluster-state-master-down"), *JOBS)


def test_batches_finish_once_their_store_answers_again(scenario: Run) -> None:
    assert_checks(scenario("cluster-state-master-down"), "batches-finished")
