"""Emitting events to listeners, in registration order.

Listeners are stored as receivers of blinker signals (one signal per event class or name, in a
private :class:`blinker.Namespace`, connected with ``weak=False`` because generated receivers have
no other owner). blinker does not promise an order, and we do: every registration gets a sequence
number, and ``emit`` calls the receivers of every class in the event's MRO (so a listener of a base
class hears subclasses), plus matching wildcard patterns, sorted by that number.

Contract: sync listeners run in registration order; one returning ``False`` stops the rest; the
first exception stops dispatch and propagates to the caller of ``emit``.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import inspect
import itertools
import threading
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import blinker

from eventbus import aio

Listener = Callable[..., Any]
EventKey = type | str


@dataclasses.dataclass(frozen=True)
class Registration:
    """One listener registered for one event key. ``wildcard`` listeners get the name first."""

    seq: int
    key: EventKey
    listener: Listener
    wildcard: bool = False

    def __call__(self, sender: Any, **kwargs: Any) -> Any:  # blinker receiver signature
        return self.listener(sender)

    def describe(self) -> str:
        text = getattr(self.listener, "__eventbus_description__", None)
        if text:
            return str(text)
        target = getattr(self.listener, "__func__", self.listener)
        name = getattr(target, "__qualname__", repr(target))
        return f"{getattr(target, '__module__', '?')}.{name}"


class Interceptor(Protocol):
    """Something that takes events instead of the listeners (see ``eventbus.testing``)."""

    def intercepts(self, event: Any) -> bool: ...
    def record(self, event: Any, payload: tuple[Any, ...]) -> None: ...


def key_name(key: EventKey) -> str:
    return key if isinstance(key, str) else f"{key.__module__}.{key.__qualname__}"


class EventBus:
    """Holds listeners and emits events to them. ``eventbus.emit`` uses the default instance."""

    def __init__(self) -> None:
        self._signals = blinker.Namespace()
        self._seq = itertools.count()
        self._keys: dict[str, EventKey] = {}
        self._wildcards: list[Registration] = []
        self._cache: dict[Any, tuple[Registration, ...]] = {}
        self._lock = threading.RLock()
        self.interceptors: list[Interceptor] = []

    # -- registration -------------------------------------------------------------------------
    def listen(self, event: EventKey, listener: Listener) -> Registration:
        """Register ``listener`` for an event class, an event name, or a pattern like ``order.*``."""
        if not isinstance(event, (type, str)):
            raise TypeError(f"listen() takes an event class or name, not {event!r}")
        with self._lock:
            reg = Registration(next(self._seq), event, listener,
                               wildcard=isinstance(event, str) and "*" in event)
            if reg.wildcard:
                self._wildcards.append(reg)
            else:
                name = key_name(event)
                self._keys[name] = event
                self._signals.signal(name).connect(reg, weak=False)
            self._cache.clear()
            return reg

    def forget(self, event: EventKey, listener: Listener | None = None) -> None:
        """Remove the listeners of ``event`` (only ``listener`` when given)."""
        with self._lock:
            for reg in list(self._registrations(event)):
                if listener is None or reg.listener is listener:
                    if reg.wildcard:
                        self._wildcards.remove(reg)
                    else:
                        self._signals.signal(key_name(event)).disconnect(reg)
            self._cache.clear()

    def forget_all(self) -> None:
        with self._lock:
            for name in list(self._keys):
                self.forget(self._keys[name])
            self._wildcards.clear()
            self._keys.clear()
            self._cache.clear()

    def subscribe(self, subscriber: Any) -> Any:
        """Let a subscriber (class or instance with ``subscribe(bus)``) register its listeners."""
        instance = subscriber() if isinstance(subscriber, type) else subscriber
        instance.subscribe(self)
        return instance

    def _registrations(self, event: EventKey) -> Iterator[Registration]:
        if isinstance(event, str) and "*" in event:
            yield from (r for r in self._wildcards if r.key == event)
            return
        signal = self._signals.get(key_name(event))
        if signal is not None:
            yield from signal.receivers_for(blinker.ANY)  # type: ignore[misc]

    def wants(self, event_class: type) -> bool:
        """Whether emitting an event of ``event_class`` would reach anyone (a listener or an
        interceptor): the hot paths skip building events nobody receives."""
        return bool(self.interceptors) or bool(self._listeners_for(event_class, ""))

    def has_listeners(self, event: EventKey) -> bool:
        return bool(self._listeners_for(event, key_name(event)))

    def listening(self) -> dict[str, list[Registration]]:
        """Every event key with its listeners, in registration order (for ``eventbus events``)."""
        out: dict[str, list[Registration]] = {}
        for name, key in sorted(self._keys.items()):
            regs = sorted(self._registrations(key), key=lambda r: r.seq)
            if regs:
                out[name] = regs
        for reg in sorted(self._wildcards, key=lambda r: r.seq):
            out.setdefault(str(reg.key), []).append(reg)
        return out

    # -- emitting -----------------------------------------------------------------------------
    def _listeners_for(self, event_key: Any, name: str) -> tuple[Registration, ...]:
        cached = self._cache.get(event_key)
        if cached is not None:
            return cached
        with self._lock:
            regs: list[Registration] = []
            names = [name] if isinstance(event_key, str) else [key_name(c) for c in event_key.__mro__]
            for n in names:
                signal = self._signals.get(n)
                if signal is not None:
                    regs.extend(signal.receivers_for(blinker.ANY))  # type: ignore[arg-type]
            regs.extend(r for r in self._wildcards if any(fnmatch.fnmatchcase(n, str(r.key)) for n in names))
            result = tuple(sorted(regs, key=lambda r: r.seq))
            self._cache[event_key] = result
            return result

    def _prepare(self, event: Any, payload: tuple[Any, ...]) -> tuple[str, tuple[Registration, ...]] | None:
        for interceptor in self.interceptors:
            if interceptor.intercepts(event):
                interceptor.record(event, payload)
                return None
        if isinstance(event, str):
            return event, self._listeners_for(event, event)
        cls = type(event)
        return key_name(cls), self._listeners_for(cls, "")

    @staticmethod
    def _call(reg: Registration, name: str, event: Any, payload: tuple[Any, ...]) -> Any:
        if reg.wildcard:
            return reg.listener(name, *(payload if isinstance(event, str) else (event,)))
        if isinstance(event, str):
            return reg.listener(*payload)
        return reg.listener(event)

    def emit(self, event: Any, *payload: Any) -> list[Any]:
        """Call the event's listeners in order; return their results.

        A listener returning ``False`` stops the rest. An ``async def`` listener is run to
        completion on this thread's loop (use :meth:`aemit` inside a running loop).
        """
        prepared = self._prepare(event, payload)
        if prepared is None:
            return []
        name, regs = prepared
        results: list[Any] = []
        for reg in regs:
            result = aio.resolve(self._call(reg, name, event, payload))
            if result is False:
                break
            results.append(result)
        return results

    def emit_until(self, event: Any, *payload: Any) -> Any:
        """Call listeners until one returns something other than ``None``; return that."""
        prepared = self._prepare(event, payload)
        if prepared is None:
            return None
        name, regs = prepared
        for reg in regs:
            result = aio.resolve(self._call(reg, name, event, payload))
            if result is not None:
                return result
        return None

    async def aemit(self, event: Any, *payload: Any) -> list[Any]:
        """Like :meth:`emit`, awaiting async listeners one after another in the caller's loop."""
        prepared = self._prepare(event, payload)
        if prepared is None:
            return []
        name, regs = prepared
        results: list[Any] = []
        for reg in regs:
            result = self._call(reg, name, event, payload)
            if inspect.isawaitable(result):
                result = await result
            if result is False:
                break
            results.append(result)
        return results


bus = EventBus()


def emit(event: Any, *payload: Any) -> list[Any]:
    """Emit ``event`` on the default bus. See :meth:`EventBus.emit`."""
    return bus.emit(event, *payload)


def emit_until(event: Any, *payload: Any) -> Any:
    return bus.emit_until(event, *payload)


def listen(event: EventKey, listener: Listener) -> Registration:
    return bus.listen(event, listener)


def forget(event: EventKey, listener: Listener | None = None) -> None:
    bus.forget(event, listener)


def subscribe(subscriber: Any) -> Any:
    return bus.subscribe(subscriber)
