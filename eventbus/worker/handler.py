"""``CallQueuedHandler``: the one handler that runs every queued command, whatever the driver.

It refuses any payload whose ``job`` is not a known handler name, whose signature does not match
(when ``EVENTBUS_KEY`` is set), or whose command names a class outside the registry. Continuing a
chain is not its business: the code that runs the job (:mod:`eventbus.worker.processing`) does that once
the handler returned, and then deletes the job.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from eventbus import aio, encryption, registry, serializer
from eventbus.dispatching import debounce, unique
from eventbus.errors import DeserializationError, ModelNotFoundError, UnsafePayloadError
from eventbus.event_bus import bus
from eventbus.events import JobDebounced
from eventbus.middleware.pipeline import middleware_for, run_through
from eventbus.payload import HANDLER_NAME, Payload, verify
from eventbus.queue.base import QueueJob
from eventbus.runtime import has_job_scopes, job_scope, settings

log = logging.getLogger(__name__)


class CallQueuedHandler:
    """Decode a command and run it. The caller deletes the queue entry afterwards, unless the
    command released, deleted or failed it (after pushing the next job of its chain).

    Both run inside the integrations' job scopes (:func:`eventbus.runtime.around_jobs`), which
    are entered before the command is decoded, so models load inside an app context or a
    per-job session that is closed when the job ends.
    """

    def call(self, job: QueueJob, data: dict[str, Any]) -> None:
        if not has_job_scopes():
            return self._run(job, data)
        with job_scope():
            return self._run(job, data)

    def _run(self, job: QueueJob, data: dict[str, Any]) -> None:
        lock = job.payload().unique
        try:
            command, middleware = self.decode(job, data)
        except ModelNotFoundError:
            unique.release(lock, job.uuid)  # deleted or failed: either way it never runs (Laravel's)
            raise
        if debounce.superseded(command, job.payload().command_name, job.uuid, job.connection_name):
            self.drop_superseded(job)
            return
        final: Callable[[Any], Any] = run_command
        if lock is not None and lock["untilProcessing"]:
            final = functools.partial(release_then_run, lock, job.uuid)
        run_through(command, middleware, final)
        if lock is not None and not job.released:  # done, or skipped by its middleware
            unique.release(lock, job.uuid)

    @staticmethod
    def drop_superseded(job: QueueJob) -> None:
        """A later dispatch of this debounced job replaced it: delete it without running it."""
        log.info("job %s (%s) was superseded by a later dispatch; deleted without running",
                 job.payload().display_name, job.uuid)
        bus.emit(JobDebounced(job.connection_name, job))
        job.delete()

    def failed(self, data: dict[str, Any], exc: BaseException, job: QueueJob | None = None) -> None:
        """Release a unique job's lock, then call the command's ``failed(exc)`` hook, if it has one."""
        if job is not None:
            unique.release(job.payload().unique, job.uuid)
        with job_scope():
            command = self.resolve_command(data)
            command._queue_job = job
            hook = getattr(command, "failed", None)
            if callable(hook):
                aio.resolve(hook(exc))

    def decode(self, job: QueueJob, data: dict[str, Any]) -> tuple[Any, list[Any]]:
        """The command and the middleware it runs through. A payload that cannot be decoded is
        refused here (:meth:`QueueJob.refuse`), before any of it runs: an unknown class, a
        listener that was never registered (a queued listener's ``middleware()`` looks it up)."""
        try:
            command = self.resolve_command(data)
            command._queue_job = job
            return command, middleware_for(command, settings().middleware)
        except DeserializationError as exc:
            job.refuse(exc)
            raise

    @staticmethod
    def resolve_command(data: dict[str, Any]) -> Any:
        cls = registry.resolve(str(data["commandName"]))
        command = data["command"]  # read, never changed: unsealing and decoding build new dicts
        if encryption.is_sealed(command):
            command = encryption.unseal(command, settings().verification_keys)
        decode = serializer.decode
        return serializer.restore_object(cls, {k: decode(v) for k, v in command.items()})


#: The built-in handler (``eventbus.CallQueuedHandler@call``).
call_queued_handler = CallQueuedHandler()


def run_command(command: Any) -> Any:
    """The innermost step of the pipeline: the command's own ``handle()`` (the pipeline awaits
    what an ``async def handle`` returns)."""
    return command.handle()


def release_then_run(lock: dict[str, Any], owner: str, command: Any) -> Any:
    """``unique_until_processing``: the lock goes when the job reaches ``handle``, past its
    middleware (a job its middleware puts back keeps it), so another may wait while it runs."""
    unique.release(lock, owner)
    return run_command(command)


def register_handler(name: str, handler: Any) -> None:
    """Allow payloads whose ``job`` is ``name``; ``handler.call(job, data)`` will run them."""
    if not callable(getattr(handler, "call", None)):
        raise TypeError(f"handler {name!r} needs a call(job, data) method")
    registry.register_handler_object(name, handler)


def verify_signature(doc: dict[str, Any], *, job_uuid: str | None = None) -> None:
    """With ``EVENTBUS_KEY`` set, refuse a document whose signature does not match.

    Called on the parsed document before any of its fields is read: an attacker's payload must
    not get to choose a timeout, a class name or anything else before it is known to be ours.
    """
    keys = settings().verification_keys
    if keys and not verify(doc, keys):
        raise UnsafePayloadError("refusing payload: its signature does not match EVENTBUS_KEY "
                                 "(nor EVENTBUS_PREVIOUS_KEYS)", job_uuid=job_uuid)


def resolve(payload: Payload) -> Any:
    """The handler a (verified, validated) payload names. Unknown names are refused."""
    if payload.job == HANDLER_NAME:
        return call_queued_handler
    if registry.is_handler(payload.job):
        return registry.handler(payload.job)
    raise UnsafePayloadError(f"refusing payload: unknown handler {payload.job!r} "
                             f"(only {HANDLER_NAME} and registered handlers run)", job_uuid=payload.uuid)
