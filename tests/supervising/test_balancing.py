"""The balancing arithmetic: backlogs, runtimes and current counts in, new counts out."""

from __future__ import annotations

import pytest

from eventbus.supervising import QueueLoad, auto_counts, simple_counts
from eventbus.supervising.balancing import times_to_clear, wanted_processes


def step(loads: list[QueueLoad], current: dict[str, int], *, low: int = 1, high: int = 4,
         shift: int = 1) -> dict[str, int]:
    return auto_counts(loads, current, min_processes=low, max_processes=high, max_shift=shift)


def test_time_to_clear_is_backlog_times_average_runtime() -> None:
    assert times_to_clear([QueueLoad("a", 300, 0.1), QueueLoad("b", 10, 2.0)]) == {"a": 30.0, "b": 20.0}


def test_a_queue_without_a_known_runtime_counts_at_the_average_of_the_others() -> None:
    assert times_to_clear([QueueLoad("a", 10, 1.0), QueueLoad("b", 10, 3.0), QueueLoad("c", 10)]) == \
        {"a": 10.0, "b": 30.0, "c": 20.0}
    assert times_to_clear([QueueLoad("a", 5), QueueLoad("b", 15)]) == {"a": 5.0, "b": 15.0}  # by size


def test_each_queue_wants_its_share_of_the_time_to_clear_rounded_up() -> None:
    loads = [QueueLoad("a", 300, 0.1), QueueLoad("b", 10, 1.0), QueueLoad("c", 0, 5.0)]
    assert wanted_processes(loads, min_processes=1, max_processes=10) == {"a": 8, "b": 3, "c": 1}


def test_one_busy_queue_grows_by_the_shift_per_step_up_to_max() -> None:
    loads = [QueueLoad("load", 300, 0.1)]
    counts = {"load": 1}
    seen = []
    for _ in range(5):
        counts = step(loads, counts)
        seen.append(counts["load"])
    assert seen == [2, 3, 4, 4, 4]
    assert step(loads, {"load": 1}, shift=2) == {"load": 3}


def test_an_empty_queue_shrinks_by_the_shift_per_step_down_to_min() -> None:
    empty = [QueueLoad("load", 0, 0.1)]
    assert step(empty, {"load": 4}) == {"load": 3}
    assert step(empty, {"load": 4}, shift=3) == {"load": 1}
    assert step(empty, {"load": 1}) == {"load": 1}
    assert step(empty, {"load": 4}, low=2, shift=5) == {"load": 2}


def test_processes_move_to_the_queue_that_takes_longest_to_clear() -> None:
    loads = [QueueLoad("mail", 0, 0.5), QueueLoad("reports", 100, 2.0)]
    counts = {"mail": 3, "reports": 1}
    counts = step(loads, counts, high=4)
    assert counts == {"mail": 2, "reports": 2}  # the shrinking queue first frees the room
    counts = step(loads, counts, high=4)
    assert counts == {"mail": 1, "reports": 3}
    assert step(loads, counts, high=4) == {"mail": 1, "reports": 3}  # min stays on mail


def test_growth_never_passes_max_processes_in_all() -> None:
    loads = [QueueLoad("a", 100, 1.0), QueueLoad("b", 100, 1.0)]
    assert step(loads, {"a": 2, "b": 2}, high=4, shift=3) == {"a": 2, "b": 2}
    grown = step(loads, {"a": 1, "b": 1}, high=5, shift=3)
    assert sum(grown.values()) == 5 and grown["a"] >= 2 and grown["b"] >= 2


def test_every_queue_keeps_min_processes() -> None:
    loads = [QueueLoad("a", 0), QueueLoad("b", 1000, 1.0), QueueLoad("c", 0)]
    assert step(loads, {"a": 0, "b": 1, "c": 0}, low=1, high=3) == {"a": 1, "b": 1, "c": 1}
    assert step(loads, {"a": 0, "b": 0, "c": 0}, low=0, high=3) == {"a": 0, "b": 1, "c": 0}


@pytest.mark.parametrize(("queues", "processes", "expected"), [
    (["a"], 4, {"a": 4}),
    (["a", "b"], 4, {"a": 2, "b": 2}),
    (["a", "b", "c"], 5, {"a": 2, "b": 2, "c": 1}),
    (["a", "b", "c"], 2, {"a": 1, "b": 1, "c": 1}),  # every queue at least one
])
def test_simple_splits_max_processes_evenly(queues: list[str], processes: int, expected: dict[str, int]) -> None:
    assert simple_counts(queues, processes) == expected
