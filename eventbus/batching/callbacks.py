"""Batch callbacks: what may be one, how each becomes a ready-made job, and the job that calls
a function callback in a worker.

A callback is a registered job instance (pushed as it is; ``self.batch()`` reads the batch) or
a function registered with ``@listener``, called by :class:`CallBatchCallback` with the batch
and, when it takes a second argument, the failure that made it due. Either way it carries its
batch's reference marked ``#callback``: it reads the batch without being counted in it.
``before`` callbacks run at dispatch, in the dispatching process.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Sequence
from typing import Any

from eventbus import registry
from eventbus.batching.batch import find
from eventbus.batching.records import CALLBACK_MARK
from eventbus.dispatching import run_inline
from eventbus.dispatching.chains import step_for
from eventbus.errors import ConfigurationError, EventBusError, FailedJobError
from eventbus.payload import Payload
from eventbus.runtime import connection as get_connection

log = logging.getLogger(__name__)

Step = dict[str, Any]


def check_callback(callback: Any) -> None:
    """A callback is a registered job instance or a function registered with ``@listener``."""
    if isinstance(callback, type) or not callable(callback) and not registry.is_registered(
            registry.dotted_name(type(callback))):
        raise ConfigurationError(f"a batch callback must be a job instance or a @listener function, "
                                 f"not {callback!r}")
    if callable(callback) and not hasattr(callback, "handle"):
        registry.resolve_listener(registry.dotted_name(callback))  # refuses unregistered functions


def callback_step(callback: Any, ref: str, queue: str | None, connection: str, kind: str) -> Step:
    """A callback as a ready-made job that can read its batch but is not counted in it."""
    job = callback if hasattr(callback, "handle") else CallBatchCallback(registry.dotted_name(callback), kind)
    return step_for(job, queue, connection, batch_id=ref + CALLBACK_MARK)


@registry.serializable
class CallBatchCallback:
    """Calls a ``@listener`` function with the batch (and, if it takes one, the failure that
    made the callback due), in a worker."""

    _queue_job: Any = None

    def __init__(self, listener: str, kind: str = "") -> None:
        self.listener = listener
        self.kind = kind
        self.display_name = f"{listener} (batch {kind or 'callback'})"

    def handle(self) -> None:
        entry = registry.resolve_listener(self.listener)
        if isinstance(entry.target, type) or entry.method:
            raise EventBusError(f"batch callback {self.listener} must be a function")
        ref = self._queue_job.payload().batch_id if self._queue_job is not None else None
        current = find(ref) if ref else None
        if takes_two(entry.target):
            failure = getattr(self, "failure", None)
            entry.target(current, FailedJobError(failure) if failure else None)
        else:
            entry.target(current)


def takes_two(function: Any) -> bool:
    """Whether a callback takes a second positional argument (the failure)."""
    try:
        params = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in params)


def run_before_callbacks(steps: Sequence[Step]) -> None:
    """Run ``before`` callbacks here and now, on the sync connection; one that raises is
    logged and the dispatch goes on (Laravel reports it and goes on)."""
    for step in steps:
        payload = Payload.from_dict(step["payload"])
        try:
            run_inline(get_connection("sync"), payload.to_json(), None)
        except Exception:
            log.exception("the before() callback %s of a batch raised", payload.display_name)
