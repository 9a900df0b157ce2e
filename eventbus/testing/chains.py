"""Chain assertions of the queue fake (Laravel's ``Bus::assertChained``,
``Queue::assertPushedWithChain``): a chain is pushed as its first job, which carries the others.

An expected job is a class (any job of it matches), an instance (a job of the same class with the
same state, as it would be serialized), or a function of the job returning a bool.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from eventbus import serializer
from eventbus.testing.pushed import PushedJob
from eventbus.worker.handler import CallQueuedHandler

Expected = Any


def command_of(step: dict[str, Any]) -> Any:
    """The job a chain step will run, rebuilt from its payload as a worker rebuilds it."""
    return CallQueuedHandler.resolve_command(step["payload"]["data"])


def state_of(job: Any) -> dict[str, Any]:
    """A job's state as it is serialized (models by key), for comparing two jobs."""
    return {key: serializer.encode(value) for key, value in serializer.object_state(job).items()}


def matches(expected: Expected, job: Any) -> bool:
    if isinstance(expected, type):
        return isinstance(job, expected)
    if inspect.isfunction(expected) or inspect.ismethod(expected):
        return bool(expected(job))
    return type(job) is type(expected) and state_of(job) == state_of(expected)


def matches_all(expected: Sequence[Expected], jobs: Sequence[Any]) -> bool:
    return len(expected) == len(jobs) and all(matches(e, j) for e, j in zip(expected, jobs))


def name_of(thing: Any) -> str:
    if isinstance(thing, type):
        return thing.__qualname__
    if inspect.isfunction(thing) or inspect.ismethod(thing):
        return f"<{thing.__qualname__}>"
    return type(thing).__qualname__


class ChainAssertions:
    """What :class:`~eventbus.testing.QueueFake` asserts about chains."""

    pushed: list[PushedJob]

    def chains(self) -> list[list[Any]]:
        """Every pushed job followed by the jobs of the chain it carries (none: just the job)."""
        return [[item.command, *(command_of(step) for step in item.payload.chained)]
                for item in self.pushed]

    def _seen_chains(self) -> str:
        return "\n  ".join(" -> ".join(name_of(job) for job in chain) for chain in self.chains()) \
            or "(nothing)"

    def _pushed(self, job_type: Expected, predicate: Callable[[Any], bool] | None) -> list[list[Any]]:
        return [chain for chain in self.chains()
                if matches(job_type, chain[0]) and (predicate is None or predicate(chain[0]))]

    def assert_chained(self, jobs: Sequence[Expected]) -> None:
        """A chain of exactly ``jobs``, in order, was dispatched."""
        if not any(matches_all(jobs, chain) for chain in self.chains()):
            wanted = " -> ".join(name_of(job) for job in jobs)
            raise AssertionError(f"expected the chain {wanted} to be pushed. Pushed:\n  {self._seen_chains()}")

    def assert_pushed_with_chain(self, job_type: Expected, chain: Sequence[Expected],
                                 predicate: Callable[[Any], bool] | None = None) -> None:
        """``job_type`` was pushed carrying exactly ``chain`` after it."""
        if not any(matches_all(chain, found[1:]) for found in self._pushed(job_type, predicate)):
            wanted = " -> ".join(name_of(job) for job in (job_type, *chain))
            raise AssertionError(f"expected {name_of(job_type)} pushed with the chain {wanted}. "
                                 f"Pushed:\n  {self._seen_chains()}")

    def assert_pushed_without_chain(self, job_type: Expected,
                                    predicate: Callable[[Any], bool] | None = None) -> None:
        """``job_type`` was pushed on its own, carrying no chain."""
        if not any(len(found) == 1 for found in self._pushed(job_type, predicate)):
            raise AssertionError(f"expected {name_of(job_type)} pushed without a chain. "
                                 f"Pushed:\n  {self._seen_chains()}")
