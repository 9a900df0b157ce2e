"""``CallQueuedListener``: the job that runs a queued listener in the worker.

It stores the listener by registered name (never a code reference), the method to call, and the
arguments the listener would have received (the event, serialized by the registry). The queue
options the listener had when the event was emitted (tries, backoff, timeout, ...) travel once, in
the payload's envelope where the worker reads them, not a second time inside the command.
"""

from __future__ import annotations

from typing import Any

from eventbus import registry, serializable
from eventbus.errors import UnsafePayloadError
from eventbus.jobs import InteractsWithQueue


@serializable
class CallQueuedListener(InteractsWithQueue):
    """Runs ``listener.method(*args)`` in the worker; ``failed(*args, exc)`` when it fails for good."""

    def __init__(self, listener: str, method: str, args: list[Any], *, display_name: str,
                 options: dict[str, Any]) -> None:
        self.listener = listener
        self.method = method
        self.args = args
        self.display_name = display_name
        self._dispatch_options = dict(options)  # runtime only: read into the envelope at push

    def _dispatch_option(self, name: str) -> Any:
        return getattr(self, "_dispatch_options", {}).get(name)

    @property
    def tries(self) -> Any:
        return self._dispatch_option("tries")

    @property
    def backoff(self) -> Any:
        return self._dispatch_option("backoff")

    @property
    def timeout(self) -> Any:
        return self._dispatch_option("timeout")

    @property
    def retry_until(self) -> Any:
        return self._dispatch_option("retry_until")

    @property
    def max_exceptions(self) -> Any:
        return self._dispatch_option("max_exceptions")

    @property
    def fail_on_timeout(self) -> bool:
        return bool(self._dispatch_option("fail_on_timeout"))

    def tags(self) -> list[str]:
        """The event's class, the listener's own ``tags(event)``, then the event's ``tags()``
        (each when it has one); the models the event carries are added at dispatch.
        The listener's tags were read when the event was emitted (the listener instance does
        not travel)."""
        event = self.event
        found = [registry.dotted_name(type(event))] if type(event).__module__ != "builtins" else []
        found.extend(self._dispatch_option("tags") or ())
        own = getattr(type(event), "tags", None)
        if callable(own):
            found.extend(event.tags())
        return list(dict.fromkeys(found))

    @property
    def listener_target(self) -> Any:
        """The listener class or function this job will call."""
        return registry.resolve_listener(self.listener).target

    def _entry(self) -> registry.ListenerEntry:
        """The registered listener, refusing any method but the one recorded by ``@listener``.

        A payload is data from outside: it may name only a listener and the method its
        registration allows (``handle`` for a class, none for a function), never a private or
        dunder name, never a method of some other registered class.
        """
        entry = registry.resolve_listener(self.listener)
        if self.method != entry.method or self.method.startswith("_"):
            raise UnsafePayloadError(f"refusing to call {self.listener}.{self.method or '(function)'}: "
                                     f"@listener registered only {entry.method or 'the function itself'}")
        return entry

    @property
    def event(self) -> Any:
        """The event (the first argument the listener receives)."""
        return self.args[0] if self.args else None

    def _instance(self) -> Any:
        target = self._entry().target
        if not isinstance(target, type):
            return None
        instance = target()
        try:
            instance._queue_job = self._queue_job
        except AttributeError:  # slotted listener: it cannot reach its queue job
            pass
        return instance

    def handle(self) -> Any:
        instance = self._instance()
        fn = getattr(instance, self.method) if instance is not None else self._entry().target
        return fn(*self.args)

    def middleware(self) -> list[Any]:
        """The listener's own job middleware: ``middleware(event)`` on a listener class."""
        instance = self._instance()
        own = getattr(instance, "middleware", None) if instance is not None else None
        return list(own(*self.args)) if callable(own) else []

    def failed(self, exc: BaseException) -> Any:
        instance = self._instance()
        hook = getattr(instance, "failed", None) if instance is not None else None
        if callable(hook):
            return hook(*self.args, exc)
        return None
