"""``fake_events`` and ``fake_queue``: real implementations of the bus and queue seams."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from eventbus import dispatching
from eventbus.event_bus import EventBus, bus, key_name
from eventbus.dispatching import Destination
from eventbus.payload import Payload
from eventbus.testing.batches import BatchAssertions
from eventbus.state import MemoryStateStore
from eventbus.testing.chains import ChainAssertions
from eventbus.testing.pushed import PushedJob

Predicate = Callable[[Any], bool] | None


def _name(thing: Any) -> str:
    return thing if isinstance(thing, str) else getattr(thing, "__qualname__", repr(thing))


def _check_times(what: str, matched: int, times: int | None, seen: list[str]) -> None:
    listing = "\n  ".join(seen) if seen else "(nothing)"
    if times is None and matched == 0:
        raise AssertionError(f"expected {what}, but it was not. Seen instead:\n  {listing}")
    if times is not None and matched != times:
        raise AssertionError(f"expected {what} {times} time(s), but it was {matched} time(s). "
                             f"Seen:\n  {listing}")


class EventFake:
    """Records emitted events instead of running listeners (all events, or only ``only``)."""

    def __init__(self, only: tuple[Any, ...] = (), target: EventBus = bus) -> None:
        self.only = only
        self.bus = target
        self.emitted: list[tuple[Any, tuple[Any, ...]]] = []

    # Interceptor protocol
    def intercepts(self, event: Any) -> bool:
        if not self.only:
            return True
        if isinstance(event, str):
            return event in self.only
        return any(isinstance(o, type) and isinstance(event, o) for o in self.only)

    def record(self, event: Any, payload: tuple[Any, ...]) -> None:
        self.emitted.append((event, payload))

    # queries
    def _matches(self, event_type: Any, event: Any) -> bool:
        if isinstance(event_type, str):
            return event == event_type or (not isinstance(event, str) and key_name(type(event)) == event_type)
        return isinstance(event, event_type)

    def emitted_of(self, event_type: Any, predicate: Predicate = None) -> list[Any]:
        """The events (or, for named events, their payloads) matching ``event_type``."""
        out = []
        for event, payload in self.emitted:
            if self._matches(event_type, event):
                item = payload if isinstance(event, str) else event
                if predicate is None or predicate(item):
                    out.append(item)
        return out

    def _seen(self) -> list[str]:
        return [repr(e) if not isinstance(e, str) else f"{e!r} {p!r}" for e, p in self.emitted]

    # assertions
    def assert_emitted(self, event_type: Any, predicate: Predicate = None, times: int | None = None) -> None:
        matched = len(self.emitted_of(event_type, predicate))
        what = f"{_name(event_type)} to be emitted" + (" matching the predicate" if predicate else "")
        _check_times(what, matched, times, self._seen())

    def assert_not_emitted(self, event_type: Any, predicate: Predicate = None) -> None:
        found = self.emitted_of(event_type, predicate)
        if found:
            raise AssertionError(f"{_name(event_type)} was emitted {len(found)} time(s): {found!r}")

    def assert_nothing_emitted(self) -> None:
        if self.emitted:
            raise AssertionError("expected no events, but saw:\n  " + "\n  ".join(self._seen()))

    def assert_listening(self, event_type: Any, listener: Any) -> None:
        regs = self.bus.listening().get(key_name(event_type), [])
        targets = [getattr(r.listener, "__eventbus_target__", r.listener) for r in regs]
        if listener not in targets and not any(getattr(t, "__func__", None) is listener for t in targets):
            names = ", ".join(r.describe() for r in regs) or "(none)"
            raise AssertionError(f"{_name(listener)} is not listening to {_name(event_type)}; "
                                 f"its listeners are: {names}")


class QueueFake(BatchAssertions, ChainAssertions):
    """Records pushed jobs instead of sending them to a driver (batches: :class:`BatchAssertions`;
    chains: :class:`ChainAssertions`).

    Unique jobs take their locks in the fake's own store, which nothing releases (no job runs):
    a second dispatch of a unique job is dropped, as production drops it while the first waits.
    """

    def __init__(self) -> None:
        self.pushed: list[PushedJob] = []
        self.unique_locks = MemoryStateStore()

    def __call__(self, command: Any, destination: Destination, payload: Payload) -> bool:
        self.pushed.append(PushedJob(command, destination, payload))
        return True

    def _is(self, job_type: Any, item: PushedJob) -> bool:
        return item.job_class is job_type or (isinstance(job_type, type) and isinstance(item.command, job_type))

    def pushed_of(self, job_type: Any, predicate: Predicate = None, queue: str | None = None) -> list[Any]:
        """The commands pushed of ``job_type`` (queued listeners match their listener class)."""
        return [p.command for p in self.pushed
                if self._is(job_type, p) and (queue is None or p.queue == queue)
                and (predicate is None or predicate(p.command))]

    def _seen(self) -> list[str]:
        return [f"{_name(p.job_class)} on {p.destination.connection}:{p.queue}"
                for p in self.pushed]

    def assert_pushed(self, job_type: Any, predicate: Predicate = None, times: int | None = None) -> None:
        matched = len(self.pushed_of(job_type, predicate))
        what = f"{_name(job_type)} to be pushed" + (" matching the predicate" if predicate else "")
        _check_times(what, matched, times, self._seen())

    def assert_pushed_on(self, queue: str, job_type: Any, predicate: Predicate = None) -> None:
        _check_times(f"{_name(job_type)} to be pushed on queue {queue!r}",
                     len(self.pushed_of(job_type, predicate, queue)), None, self._seen())

    def assert_not_pushed(self, job_type: Any, predicate: Predicate = None) -> None:
        found = self.pushed_of(job_type, predicate)
        if found:
            raise AssertionError(f"{_name(job_type)} was pushed {len(found)} time(s)")

    def assert_nothing_pushed(self) -> None:
        if self.pushed:
            raise AssertionError("expected no jobs, but saw:\n  " + "\n  ".join(self._seen()))


@contextlib.contextmanager
def fake_events(*only: Any, target: EventBus = bus) -> Iterator[EventFake]:
    """Record events instead of running listeners; with ``only``, just those events."""
    fake = EventFake(only, target)
    target.interceptors.append(fake)
    try:
        yield fake
    finally:
        target.interceptors.remove(fake)


@contextlib.contextmanager
def fake_queue() -> Iterator[QueueFake]:
    """Record pushed jobs (dispatch, queued listeners, queued notifications) instead of queueing."""
    fake = QueueFake()
    dispatching.push_interceptors.append(fake)
    try:
        yield fake
    finally:
        dispatching.push_interceptors.remove(fake)
