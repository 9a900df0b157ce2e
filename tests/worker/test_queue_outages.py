"""A queue whose server does not answer is skipped while the worker's other queues answer."""

from __future__ import annotations

import pytest

from eventbus.errors import ConnectionUnavailableError
from eventbus.worker.outages import MAX_BACKOFF_S, QueueOutages


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def asker(down: set[str], jobs: dict[str, str], asked: list[str], clock: Clock | None = None,
          takes_s: float = 0.0):  # type: ignore[no-untyped-def]
    def ask(queue: str) -> str | None:
        asked.append(queue)
        if clock is not None:
            clock.now += takes_s
        if queue in down:
            raise ConnectionUnavailableError(f"{queue} is down")
        return jobs.get(queue)
    return ask


def test_a_queue_that_does_not_answer_is_skipped_while_the_next_ones_answer() -> None:
    clock, asked = Clock(), []
    outages = QueueOutages(clock)
    ask = asker({"a"}, {"b": "job-b"}, asked)
    assert outages.first(["a", "b", "c"], ask) == "job-b"
    assert outages.first(["a", "b", "c"], ask) == "job-b"
    assert asked == ["a", "b", "b"]  # "a" waits for its next try
    assert outages.usable(["a", "b"]) == ["b"]
    clock.now += 0.1
    assert outages.usable(["a", "b"]) == ["a", "b"]


def test_when_no_queue_answers_the_error_goes_to_the_caller_and_nothing_is_skipped() -> None:
    outages = QueueOutages(Clock())
    with pytest.raises(ConnectionUnavailableError, match="b is down"):
        outages.first(["a", "b"], asker({"a", "b"}, {}, []))
    assert outages.usable(["a", "b"]) == ["a", "b"]
    assert outages.next_try_in() == 0.0


def test_the_backoff_doubles_and_is_never_shorter_than_twice_the_failed_request() -> None:
    clock = Clock()
    outages = QueueOutages(clock)
    waits = []
    for _ in range(8):
        outages.first(["a", "b"], asker({"a"}, {}, []))
        waits.append(round(outages.next_try_in(), 3))
        clock.now += outages.next_try_in()
    assert waits == [0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0, 2.0] and max(waits) == MAX_BACKOFF_S
    slow = QueueOutages(clock)
    slow.first(["a", "b"], asker({"a"}, {}, [], clock, takes_s=5.0))  # a socket timeout per try
    assert slow.next_try_in() == pytest.approx(10.0)


def test_a_queue_that_answers_again_is_asked_every_turn() -> None:
    clock, asked = Clock(), []
    outages = QueueOutages(clock)
    outages.first(["a", "b"], asker({"a"}, {}, asked))
    clock.now += 1
    outages.first(["a", "b"], asker(set(), {}, asked))
    outages.first(["a", "b"], asker(set(), {}, asked))
    assert asked == ["a", "b", "a", "b", "a", "b"]
