"""Issue 27's scheduler defects, each reproduced by a scenario of
:mod:`chaos.scheduler_scenarios` before its fix (quick tier here; ``run.py --full`` for more).

- point 2: a ``without_overlapping`` entry whose scheduler died between taking the lock and
  pushing stopped for a day (the lock lived 86,400 s, no log line, ``schedule list`` silent);
- point 3: ``schedule work`` exited 1 on a 2-second Redis outage.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from chaos.conftest import assert_checks
from chaos.scene import Result

pytestmark = [pytest.mark.chaos, pytest.mark.integration]

Run = Callable[[str], Result]


def test_an_overlap_lock_left_by_a_killed_scheduler_lives_minutes_and_is_shown(scenario: Run) -> None:
    assert_checks(scenario("schedule-overlap-crash"))


def test_schedule_work_rides_out_a_redis_outage(scenario: Run) -> None:
    assert_checks(scenario("schedule-work-outage"))
