"""``CallQueuedListener``: the job that runs a queued listener in the worker.

It stores the listener by registered name (never a code reference), the method to call, and the
arguments the listener would have received (the event, serialized by the registry), plus the queue
options the listener had when the event was emitted.
"""

from __future__ import annotations

from typing import Any

from eventbus import registry, serializable
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
        self.tries = options.get("tries")
        self.backoff = options.get("backoff")
        self.timeout = options.get("timeout")
        self.retry_until = options.get("retry_until")
        self.max_exceptions = options.get("max_exceptions")
        self.fail_on_timeout = bool(options.get("fail_on_timeout", False))

    @property
    def listener_target(self) -> Any:
        """The listener class or function this job will call."""
        return registry.resolve(self.listener)

    @property
    def event(self) -> Any:
        """The event (the first argument the listener receives)."""
        return self.args[0] if self.args else None

    def _instance(self) -> Any:
        target = self.listener_target
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
        fn = getattr(instance, self.method) if instance is not None else self.listener_target
        return fn(*self.args)

    def failed(self, exc: BaseException) -> Any:
        instance = self._instance()
        hook = getattr(instance, "failed", None) if instance is not None else None
        if callable(hook):
            return hook(*self.args, exc)
        return None
