"""What happens to one reserved job: Laravel's ``Worker::process`` as a few named decisions.

Order on success: ``JobProcessing`` -> run -> ``JobProcessed``. On an exception: fail the job if
it will exceed its tries, its ``retry_until`` or its ``max_exceptions`` (or it timed out and
``fail_on_timeout`` is set), emit ``JobExceptionOccurred``, and release it with its backoff unless
it was failed, deleted or released already. Failing a job: record it in the failed store, delete
it (only while this worker holds it), call ``failed(exc)`` once, emit ``JobFailed``.

The collaborators are handed in, never looked up: the failed job store (``None`` keeps nothing,
as the sync driver does), the event bus, and ``continue_chain``, which pushes the next job of a
chain once a job succeeded (the worker and the sync dispatch pass the dispatcher's).
"""

from __future__ import annotations

import dataclasses
import enum
import logging
import time
from collections.abc import Callable
from typing import Any

from eventbus import handler as handlers
from eventbus import registry
from eventbus.event_bus import EventBus
from eventbus.event_bus import bus as default_bus
from eventbus.errors import (
    DeserializationError,
    JobTimeoutError,
    MaxAttemptsExceededError,
    ModelNotFoundError,
)
from eventbus.events import (
    JobExceptionOccurred,
    JobFailed,
    JobProcessed,
    JobProcessing,
    JobReleasedAfterException,
)
from eventbus.failed.base import FailedJobStore, describe_exception
from eventbus.queue.base import QueueJob
from eventbus.timeouts import interrupt_after

log = logging.getLogger(__name__)

ChainPusher = Callable[[list[dict[str, Any]]], None]
SuccessHook = Callable[[QueueJob], None]
FailureHook = Callable[[QueueJob, BaseException], None]


def _nothing(*args: Any) -> None:
    return None


class Outcome(enum.Enum):
    DONE = "DONE"
    RELEASED = "RELEASED"
    FAIL = "FAIL"


@dataclasses.dataclass(frozen=True)
class ProcessOptions:
    """The worker's defaults; a job's own ``tries``/``backoff``/``timeout`` win over these."""

    tries: int = 1
    backoff: tuple[float, ...] = (0.0,)
    timeout: float = 60.0


@dataclasses.dataclass(frozen=True)
class Collaborators:
    """What processing a job needs from outside: where failures go, where events go, chains."""

    failed: FailedJobStore | None
    bus: EventBus
    continue_chain: ChainPusher
    #: What a success or a final failure sets off beyond the job (batches, chain callbacks).
    after_success: SuccessHook = _nothing
    after_failure: FailureHook = _nothing

    def emit(self, event: Any) -> None:
        self.bus.emit(event)


def process(job: QueueJob, options: ProcessOptions, *, failed: FailedJobStore | None,
            continue_chain: ChainPusher, bus: EventBus = default_bus,
            on_start: Callable[[float], None] | None = None, after_success: SuccessHook = _nothing,
            after_failure: FailureHook = _nothing) -> tuple[Outcome, BaseException | None]:
    """Run one reserved job under the rules above. Never raises for the job's own exceptions.

    ``on_start(timeout)`` is told the attempt's timeout once the payload has been verified and
    validated, just before the job runs (the worker's watchdog needs it).
    """
    ctx = Collaborators(failed, bus, continue_chain, after_success, after_failure)
    job.on_fail = lambda j, exc: fail_job(j, exc, ctx)
    try:
        ctx.emit(JobProcessing(job.connection_name, job))
        handler = accept(job)
        if fail_if_already_exceeds_max_attempts(job, options, ctx):
            return Outcome.FAIL, None
        timeout = timeout_for(job, options)
        if on_start is not None:
            on_start(timeout)
        started = time.perf_counter()
        with interrupt_after(timeout, job.payload().display_name):
            run_handler(job, handler, ctx)
        ctx.emit(JobProcessed(job.connection_name, job, time.perf_counter() - started))
        return outcome_of(job), None
    except DeserializationError as exc:  # includes refused (unsafe) payloads: never retried
        fail_job(job, exc, ctx)
        return Outcome.FAIL, exc
    except ModelNotFoundError as exc:  # retrying cannot bring the model back
        if deletes_when_missing_models(job):
            job.delete()
            return Outcome.DONE, None
        fail_job(job, exc, ctx)
        return Outcome.FAIL, exc
    except Exception as exc:
        handle_job_exception(job, exc, options, ctx)
        return outcome_of(job), exc


def accept(job: QueueJob) -> Any:
    """The job's handler, in a safe order: parse, check the signature, then validate the envelope.

    Any failure raises DeserializationError (UnsafePayloadError for a refusal): the job fails at
    once, it is never retried.
    """
    handlers.verify_signature(job.document(), job_uuid=job.stored_uuid or job.job_id)
    return handlers.resolve(job.payload())


def run_handler(job: QueueJob, handler: Any, ctx: Collaborators) -> None:
    """Run the command; then continue its chain unless it failed or was released (Laravel's order)."""
    data = job.document()["data"]
    handler.call(job, data)
    if not job.released and not job.failed:
        chained = data.get("chained") or []
        if chained:
            ctx.continue_chain(chained)
        ctx.after_success(job)
        if not job.is_done:
            job.delete()


def deletes_when_missing_models(job: QueueJob) -> bool:
    """The command class says ``delete_when_missing_models = True`` (Laravel's option)."""
    try:
        cls = registry.resolve(job.payload().command_name)
    except DeserializationError:
        return False
    return bool(getattr(cls, "delete_when_missing_models", False))


def outcome_of(job: QueueJob) -> Outcome:
    if job.failed:
        return Outcome.FAIL
    if job.released:
        return Outcome.RELEASED
    return Outcome.DONE


def timeout_for(job: QueueJob, options: ProcessOptions) -> float:
    own = job.payload().timeout
    return float(own) if own is not None else options.timeout


def max_tries_for(job: QueueJob, options: ProcessOptions) -> int:
    own = job.payload().max_tries
    return int(own) if own is not None else options.tries


def retry_until_passed(job: QueueJob) -> bool | None:
    """True/False when the job has a retry_until moment, None when it has none."""
    until = job.payload().retry_until
    return None if until is None else time.time() > float(until)


def fail_if_already_exceeds_max_attempts(job: QueueJob, options: ProcessOptions, ctx: Collaborators) -> bool:
    """A job that a killed worker never finished comes back with too many attempts: fail it."""
    passed = retry_until_passed(job)
    max_tries = max_tries_for(job, options)
    if passed is False or (passed is None and (max_tries == 0 or job.attempts <= max_tries)):
        return False
    fail_job(job, MaxAttemptsExceededError(
        f"{job.payload().display_name} has been attempted too many times ({job.attempts}) "
        "or its retry_until has passed; it may have timed out or its worker was killed",
        job_uuid=job.uuid, queue=job.queue_name), ctx)
    return True


def fail_if_will_exceed_max_attempts(job: QueueJob, options: ProcessOptions, exc: BaseException,
                                     ctx: Collaborators) -> None:
    passed = retry_until_passed(job)
    max_tries = max_tries_for(job, options)
    if passed is False or (passed is None and (max_tries == 0 or job.attempts < max_tries)):
        return
    fail_job(job, exc, ctx)


def fail_if_will_exceed_max_exceptions(job: QueueJob, exc: BaseException, ctx: Collaborators) -> None:
    max_exceptions = job.payload().max_exceptions
    if max_exceptions is None or job.failed:
        return
    if job.queue.record_exception(job.uuid) >= int(max_exceptions):
        fail_job(job, exc, ctx)


def fail_on_timeout(job: QueueJob, exc: BaseException, ctx: Collaborators) -> None:
    if isinstance(exc, JobTimeoutError) and job.payload().fail_on_timeout and not job.failed:
        fail_job(job, exc, ctx)


def backoff_for(job: QueueJob, options: ProcessOptions) -> float:
    """The delay before the next attempt: backoff[attempts - 1], the last one repeating."""
    own = job.payload().backoff
    steps = list(own) if own else list(options.backoff) or [0.0]
    return float(steps[min(job.attempts - 1, len(steps) - 1)])


def handle_job_exception(job: QueueJob, exc: BaseException, options: ProcessOptions,
                         ctx: Collaborators) -> None:
    if not job.failed:
        fail_on_timeout(job, exc, ctx)
    if not job.failed:
        fail_if_will_exceed_max_attempts(job, options, exc, ctx)
    if not job.failed:
        fail_if_will_exceed_max_exceptions(job, exc, ctx)
    ctx.emit(JobExceptionOccurred(job.connection_name, job, exc))
    if not job.is_done:
        delay = backoff_for(job, options)
        if job.release(delay):
            ctx.emit(JobReleasedAfterException(job.connection_name, job, delay))


def fail_job(job: QueueJob, exc: BaseException, ctx: Collaborators) -> None:
    """Fail ``job`` for good: record it, delete it, call ``failed()`` once, emit ``JobFailed``.

    The record is written first, so a crash after it loses nothing. When the delete finds that
    this worker no longer holds the reservation (it expired and another worker took the job), the
    record is withdrawn and nothing else happens: the job belongs to the other worker now.
    """
    if job.failed:
        return
    job.mark_failed()
    store = ctx.failed
    record = None
    if store is not None:
        record = store.log(job.connection_name, job.queue_name, job.raw, describe_exception(exc),
                           job.uuid)
    if not job.delete():
        if store is not None and record is not None:
            store.forget(record.uuid)
        log.warning("job %s was taken over by another worker before it could be failed", job.uuid)
        return
    job.queue.forget_exceptions(job.uuid)
    call_failed_hook(job, exc)
    try:
        ctx.after_failure(job, exc)
    except Exception:
        log.exception("could not record the failure of %s in its batch or chain", job.uuid)
    ctx.emit(JobFailed(job.connection_name, job, exc))


def call_failed_hook(job: QueueJob, exc: BaseException) -> None:
    try:
        handler = accept(job)
    except DeserializationError:
        return  # a payload that cannot be read has no hook to call
    payload = job.payload()
    hook = getattr(handler, "failed", None)
    if not callable(hook):
        return
    try:
        hook(job.document()["data"], exc, job)
    except DeserializationError:
        pass  # the command cannot be rebuilt: the job's own failure already says why
    except Exception:
        log.exception("the failed() hook of %s raised", payload.display_name)


def run_sync_job(job: QueueJob, *, continue_chain: ChainPusher, bus: EventBus = default_bus,
                 after_success: SuccessHook = _nothing, after_failure: FailureHook = _nothing) -> None:
    """The sync driver: run now; on exception call failed(), emit JobFailed, then re-raise.

    Like Laravel's SyncQueue there are no retries: tries, backoff and timeout do not apply, and
    nothing is stored.
    """
    ctx = Collaborators(None, bus, continue_chain, after_success, after_failure)
    job.on_fail = lambda j, exc: fail_job(j, exc, ctx)
    try:
        ctx.emit(JobProcessing(job.connection_name, job))
        started = time.perf_counter()
        run_handler(job, accept(job), ctx)
        ctx.emit(JobProcessed(job.connection_name, job, time.perf_counter() - started))
    except Exception as exc:
        ctx.emit(JobExceptionOccurred(job.connection_name, job, exc))
        fail_job(job, exc, ctx)
        raise
