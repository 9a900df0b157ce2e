"""``@listener``: declare a function or class as a listener of one or more events.

The event comes from the decorator (``@listener(OrderShipped)``, ``@listener("order.*")``) or
from the annotation of the first parameter (of ``handle`` for a class); a union annotation
listens to each member. A class is instantiated for each call. Queued listeners are never run by
``emit``: a :class:`CallQueuedListener` job is pushed instead, after ``should_queue(event)``
agreed, with the decorator's options overridden by the class's attributes.
"""

from __future__ import annotations

import dataclasses
import inspect
import types
import typing
from collections.abc import Callable
from typing import Any, TypeVar, overload

from eventbus import registry
from eventbus.dispatching import Destination, push_command
from eventbus.dispatching.transactions import defer_if_in_transaction
from eventbus.errors import SerializationError
from eventbus.event_bus import EventBus, EventKey, Registration, bus
from listeners.queued import CallQueuedListener

L = TypeVar("L")

QUEUE_OPTIONS = ("connection", "queue", "delay", "tries", "backoff", "timeout", "retry_until",
                 "max_exceptions", "fail_on_timeout", "after_commit")


@dataclasses.dataclass(frozen=True)
class ListenerOptions:
    queued: bool = False
    connection: str | None = None
    queue: str | None = None
    delay: Any = None
    tries: int | None = None
    backoff: Any = None
    timeout: float | None = None
    retry_until: Any = None
    max_exceptions: int | None = None
    fail_on_timeout: bool = False
    after_commit: bool = False

    def for_instance(self, instance: Any) -> dict[str, Any]:
        """Decorator defaults, overridden by the listener's own attributes (or methods)."""
        values: dict[str, Any] = {}
        for name in QUEUE_OPTIONS:
            value = getattr(instance, name, None) if instance is not None else None
            if callable(value) and not isinstance(value, type):
                value = value()
            values[name] = value if value is not None else getattr(self, name)
        return values


def events_from_annotation(fn: Callable[..., Any], skip_self: bool) -> list[EventKey]:
    """The event classes named by the first parameter's annotation (each member of a union)."""
    params = list(inspect.signature(fn).parameters.values())[1 if skip_self else 0:]
    if not params:
        raise TypeError(f"{fn.__qualname__} takes no event parameter; name the event: @listener(Event)")
    try:
        hint = typing.get_type_hints(fn).get(params[0].name)
    except NameError as exc:  # a class defined inside a function, named in a string annotation
        raise TypeError(f"cannot resolve the event annotation of {fn.__qualname__} ({exc}); "
                        "name the event: @listener(OrderShipped)") from exc
    if hint is None:
        raise TypeError(f"cannot tell which event {fn.__qualname__} listens to: annotate its first "
                        "parameter or name the event, @listener(OrderShipped)")
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return [h for h in typing.get_args(hint) if h is not type(None)]
    return [hint]


class ListenerWrapper:
    """The receiver registered on the bus for one decorated function or class."""

    def __init__(self, target: Any, options: ListenerOptions, wildcard: bool) -> None:
        self.target = target
        self.options = options
        self.wildcard = wildcard
        self.is_class = isinstance(target, type)
        self.name = registry.dotted_name(target)
        self.__eventbus_target__ = target
        self.__eventbus_description__ = self._describe()

    def _describe(self) -> str:
        if not self.options.queued:
            return f"{self.name} (sync)"
        conn = self.options.connection or "default connection"
        return f"{self.name} (queued on {conn}, queue {self.options.queue or 'default'})"

    def __call__(self, *args: Any) -> Any:
        instance = self.target() if self.is_class else None
        if not self.options.queued:
            fn = instance.handle if instance is not None else self.target
            return fn(*args)
        return self.queue(instance, list(args))

    def queue(self, instance: Any, args: list[Any]) -> None:
        should = getattr(instance, "should_queue", None)
        if callable(should) and not should(*args):
            return None
        opts = self.options.for_instance(instance)
        with_delay = getattr(instance, "with_delay", None)
        if callable(with_delay):
            opts["delay"] = with_delay(*args)
        if self.target.__module__ == "__main__":
            raise SerializationError(
                f"cannot queue listener {self.target.__qualname__}: it is defined in __main__ (the "
                "script you ran), which a worker cannot import; move it into a module")
        own_tags = getattr(instance, "tags", None)
        if callable(own_tags):
            opts["tags"] = list(own_tags(*args))
        job = CallQueuedListener(self.name, "handle" if self.is_class else "", args,
                                 display_name=self.name, options=opts)
        dest = Destination.of(job, queue=opts["queue"], delay=opts["delay"], connection=opts["connection"])
        def push() -> None:
            push_command(job, dest, display_name=self.name)

        if opts["after_commit"]:
            defer_if_in_transaction(push)
        else:
            push()
        return None


@overload
def listener(target: L) -> L: ...
@overload
def listener(*events: EventKey, queued: bool = ..., on: EventBus | None = ..., **options: Any) -> Callable[[L], L]: ...


def listener(*events: Any, queued: bool = False, on: EventBus | None = None, **options: Any) -> Any:
    """Register a listener. ``@listener``, ``@listener(Event, ...)``, ``@listener(queued=True, ...)``.

    Options for queued listeners: ``connection``, ``queue``, ``delay``, ``tries``, ``backoff``,
    ``timeout``, ``retry_until``, ``max_exceptions``, ``fail_on_timeout``, ``after_commit``.
    """
    unknown = set(options) - set(QUEUE_OPTIONS)
    if unknown:
        raise TypeError(f"unknown listener option(s): {', '.join(sorted(unknown))} "
                        f"(known: {', '.join(QUEUE_OPTIONS)})")
    if len(events) == 1 and callable(events[0]) and not _is_event_key(events[0]) and not options:
        return _register(events[0], (), ListenerOptions(queued=queued), on or bus)
    opts = ListenerOptions(queued=queued, **options)
    return lambda target: _register(target, events, opts, on or bus)


def _is_event_key(obj: Any) -> bool:
    """A class without ``handle`` is an event; a class with it is a listener."""
    return isinstance(obj, str) or (isinstance(obj, type) and not hasattr(obj, "handle"))


def _register(target: L, events: tuple[EventKey, ...], options: ListenerOptions, on: EventBus) -> L:
    is_class = isinstance(target, type)
    handle: Any = getattr(target, "handle", None) if is_class else target
    if not callable(handle):
        raise TypeError(f"listener class {registry.dotted_name(target)} needs a handle(event) method")
    keys = list(events) or events_from_annotation(handle, is_class)
    registry.register_listener(target, "handle" if is_class else "")
    regs: list[Registration] = []
    for key in keys:
        wrapper = ListenerWrapper(target, options, wildcard=isinstance(key, str) and "*" in key)
        regs.append(on.listen(key, wrapper))
    existing = getattr(target, "__eventbus_registrations__", [])
    try:
        target.__eventbus_registrations__ = [*existing, *regs]  # type: ignore[attr-defined]
    except AttributeError:
        pass
    return target
