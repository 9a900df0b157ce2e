"""What happens to one reserved job: Laravel's ``Worker::process`` as a few named decisions.

Order on success: ``JobProcessing`` -> run -> acknowledge (continue the chain, delete the job)
-> ``JobProcessed``. On an exception: fail the job if it will exceed its tries, its
``retry_until`` or its ``max_exceptions`` (or it timed out and ``fail_on_timeout`` is set), emit
``JobExceptionOccurred``, and release it with its backoff unless it was failed, deleted or
released already. Failing a job: record it in the failed store and delete it in one fenced step
(only while this worker holds it), call ``failed(exc)`` once, emit ``JobFailed``.

Only the job's own code runs under its timeout (the ``SIGALRM`` interrupt and the worker's
watchdog): the acknowledgement and every other call to a server come after both are disarmed,
bounded by the driver's own socket timeouts, so a server that stalls cannot turn a finished job
into a timed-out one.

The collaborators are handed in, never looked up: the failed job store (``None`` keeps nothing,
as the sync driver does), the event bus, ``continue_chain``, which pushes the next job of a
chain once a job succeeded (the worker and the sync dispatch pass the dispatcher's), and
``watch``, the worker's watchdog.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import logging
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

from eventbus import registry
from eventbus.errors import (
    ConfigurationError,
    ConnectionUnavailableError,
    DeserializationError,
    FailedJobError,
    JobTimeoutError,
    MaxAttemptsExceededError,
    ModelNotFoundError,
)
from eventbus.event_bus import EventBus
from eventbus.event_bus import bus as default_bus
from eventbus.events import (
    JobExceptionOccurred,
    JobFailed,
    JobProcessed,
    JobProcessing,
    JobReleasedAfterException,
)
from eventbus.failed.base import FailedJobStore, FailOutcome, describe_exception, record_for
from eventbus.queue.base import QueueJob
from eventbus.runtime import settings
from eventbus.worker import handler as handlers
from eventbus.worker.timeouts import fits_reservation, interrupt_after, timeout_conflict

log = logging.getLogger(__name__)

ChainPusher = Callable[[list[dict[str, Any]]], None]
#: ``watch(timeout)``: a context in which the job's own code runs (the worker's watchdog ends a
#: process whose job does not stop within its grace after ``timeout``).
Watch = Callable[[float], AbstractContextManager[None]]


#: Kept beside a job that succeeded while its bookkeeping store did not answer (see
#: :func:`settle_success`): when it comes back, only the bookkeeping is done.
BOOKKEEPING_PENDING = "eventbus: the job succeeded; its batch and chain bookkeeping is still to be recorded"


def unwatched(timeout: float) -> AbstractContextManager[None]:
    return contextlib.nullcontext()


SuccessHook = Callable[[QueueJob], None]
FailureHook = Callable[[QueueJob, BaseException], None]
RanHook = Callable[[QueueJob], bool]


def _never(job: QueueJob) -> bool:
    return False


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
    #: How long the watchdog lets a job run on after its timeout: a job's timeout plus this must
    #: stay below the retry_after of a connection whose reservations expire.
    grace: float = 0.0


@dataclasses.dataclass(frozen=True)
class Collaborators:
    """What processing a job needs from outside: where failures go, where events go, chains,
    and the watch under which the job's own code runs."""

    failed: FailedJobStore | None
    bus: EventBus
    continue_chain: ChainPusher
    options: ProcessOptions = ProcessOptions()
    watch: Watch = unwatched
    #: What a success or a final failure sets off beyond the job (batches, chain callbacks),
    #: called before the job is deleted (and, for a failure, before its record is written), so
    #: that a worker dying in between leaves the job to do it again: both must be idempotent.
    after_success: SuccessHook = _nothing
    after_failure: FailureHook = _nothing
    #: Whether a job that comes back (its attempt count above one) ran to the end already and only
    #: its acknowledgement was lost: then it is acknowledged, not run again (batch callbacks).
    ran_already: RanHook = _never

    def emit(self, event: Any) -> None:
        self.bus.emit(event)

    def fail(self, job: QueueJob, exc: BaseException) -> None:
        """Fail ``job`` for good with these collaborators (what ``job.fail(exc)`` calls)."""
        fail_job(job, exc, self)


def process(job: QueueJob, options: ProcessOptions, *, failed: FailedJobStore | None,
            continue_chain: ChainPusher, bus: EventBus = default_bus, watch: Watch = unwatched,
            after_success: SuccessHook = _nothing,
            after_failure: FailureHook = _nothing) -> tuple[Outcome, BaseException | None]:
    """Run one reserved job under the rules above. Never raises for the job's own exceptions.

    A ConnectionUnavailableError raised while acknowledging a finished job propagates: the job
    is done, but its reservation may expire and it may run again (at-least-once).
    """
    return attempt(job, Collaborators(failed, bus, continue_chain, options, watch, after_success,
                                      after_failure))


def attempt(job: QueueJob, ctx: Collaborators) -> tuple[Outcome, BaseException | None]:
    """:func:`process` with its collaborators built already (a worker builds them once)."""
    options = ctx.options
    job.on_fail = ctx.fail
    screen(job)
    try:
        if ctx.bus.wants(JobProcessing):
            ctx.emit(JobProcessing(job.connection_name, job))
        if job.failure == BOOKKEEPING_PENDING:
            finish_bookkeeping(job, ctx)
            return Outcome.DONE, None
        if job.failure is not None:
            record_earlier_failure(job, ctx)
            return Outcome.FAIL, None
        handler = accept(job)  # raises the refusal screen() found, if any
        if job.attempts > 1 and settled_earlier(job, ctx):
            return Outcome.DONE, None
        if fail_if_already_exceeds_max_attempts(job, options, ctx):
            return Outcome.FAIL, None
        timeout = timeout_for(job, options)
        refused = refuse_if_it_could_outlive_its_reservation(job, timeout, options, ctx)
        if refused is not None:
            return Outcome.FAIL, refused
        started = time.perf_counter()
        run_handler(job, handler, timeout, ctx)
    except DeserializationError as exc:  # refused or unreadable payloads: never retried
        fail_job(job, job.refusal or exc, ctx)
        return Outcome.FAIL, job.refusal or exc
    except ModelNotFoundError as exc:  # retrying cannot bring the model back
        if deletes_when_missing_models(job):
            job.delete()
            return Outcome.DONE, None
        fail_job(job, exc, ctx)
        return Outcome.FAIL, exc
    except Exception as exc:
        handle_job_exception(job, exc, options, ctx)
        return outcome_of(job), exc
    runtime_s = time.perf_counter() - started
    acknowledge(job, ctx)
    if ctx.bus.wants(JobProcessed):
        ctx.emit(JobProcessed(job.connection_name, job, runtime_s))
    return outcome_of(job), None


def settled_earlier(job: QueueJob, ctx: Collaborators) -> bool:
    """A job that came back although it ran to the end (:attr:`Collaborators.ran_already`) is
    acknowledged; a store that does not answer says nothing, and the job runs (at-least-once)."""
    try:
        if not ctx.ran_already(job):
            return False
    except ConnectionUnavailableError as exc:
        log.warning("could not tell whether job %s ran already (%s); it runs again", job.uuid, exc)
        return False
    job.acknowledge()
    log.info("job %s ran already (its acknowledgement was lost); acknowledged, not run again", job.uuid)
    return True


def accept(job: QueueJob) -> Any:
    """The job's handler, in a safe order: parse, check the signature, then validate the envelope.

    Any failure raises DeserializationError (UnsafePayloadError for a refusal): the job fails at
    once, it is never retried.
    """
    if job.refusal is not None:
        raise job.refusal
    if not job.screened:  # screen() checked the signature already
        handlers.verify_signature(job.document(), job_uuid=job.stored_uuid or job.job_id)
    return handlers.resolve(job.payload())


def screen(job: QueueJob) -> DeserializationError | None:
    """Decide, before anything reads the job (an observer, a trace, a log line), whether its
    payload is refused: a signature that does not match, an envelope that does not validate, a
    handler or command class outside the registry. The reason is kept on the job
    (:attr:`QueueJob.refusal`), where :meth:`QueueJob.payload` raises it from then on, and
    returned. Never raises. Checked once per job (the worker screens before its observers;
    :func:`attempt` screens a job nobody screened).

    A refused payload is recorded (its raw text, the reason) and deleted, and nothing it names is
    acted on: no chain step, ``catch`` or ``finally`` job is pushed, no batch counts it, no
    ``failed()`` hook runs, no metric or log line takes its display name (:func:`fail_job`).
    """
    if job.screened or job.refusal is not None:
        return job.refusal
    try:
        handler = accept(job)
        job.screened = True  # the signature held: accept() need not check it again
        if handler is handlers.call_queued_handler:
            registry.resolve(job.payload().command_name)
    except DeserializationError as exc:
        job.refuse(exc)
    except Exception:  # noqa: BLE001 - e.g. a trusted module that fails to import: not a
        pass  # refusal; processing meets it again and handles it as any exception
    return job.refusal


def prepare(jobs: Sequence[QueueJob]) -> None:
    """Parse a batch of reserved jobs in one go, as :func:`accept` will (the document, and the
    envelope of an unsigned payload), so that each job's turn does less.

    Why: two workers sharing a CPU take turns at every job's round trip, and each turn starts
    with caches the other one filled; work done for the whole batch in one turn costs less than
    the same work spread over the jobs' turns. A payload that cannot be read is left as it is:
    :func:`accept` meets the same error when the job's turn comes, and fails the job then.
    """
    signed = bool(settings().key)
    for job in jobs:
        try:
            job.document()
            if not signed:  # a signed one is verified before its envelope is read, in accept()
                job.payload()
        except Exception:  # anything: the batch is reserved already, and must reach the worker
            continue


def refuse_if_it_could_outlive_its_reservation(job: QueueJob, timeout: float, options: ProcessOptions,
                                               ctx: Collaborators) -> ConfigurationError | None:
    """Fail, without running it, a job whose timeout plus the watchdog's grace is not below its
    connection's retry_after: its reservation could expire while it runs and a second worker
    would run it at once. (``dispatch`` refuses such a job already; this catches the others.)"""
    queue = job.queue
    if not queue.holds_reservations or fits_reservation(timeout, options.grace, queue.retry_after):
        return None  # the common case, decided before building the sentence's subject
    problem = timeout_conflict(f"{job.payload().display_name}'s timeout", timeout, options.grace,
                               queue.retry_after, queue.connection_name,
                               "Lower the job's timeout or raise retry_after.")
    if problem is None:
        return None
    exc = ConfigurationError(problem, job_uuid=job.uuid, queue=job.queue_name, connection=job.connection_name)
    fail_job(job, exc, ctx)
    return exc


def run_handler(job: QueueJob, handler: Any, timeout: float, ctx: Collaborators) -> None:
    """Run the command under its timeout: the interrupt, and the worker's watch around it."""
    data = job.document()["data"]
    with ctx.watch(timeout), interrupt_after(timeout, job.payload().display_name):
        handler.call(job, data)


def acknowledge(job: QueueJob, ctx: Collaborators) -> None:
    """After the command returned, outside its timeout: continue its chain, then delete it, unless
    it failed or was released (Laravel's order)."""
    if job.released or job.failed:
        return
    chained = job.payload().chained
    if chained:
        ctx.continue_chain(list(chained))
    if settle_success(job, ctx) and not job.is_done:
        job.acknowledge()


def settle_success(job: QueueJob, ctx: Collaborators) -> bool:
    """What a success sets off beyond the job (its batch, its chain's ``finally_`` jobs); False
    when their store did not answer.

    The job ran and stays done: a bookkeeping store that does not answer must not make it run
    again or fail. It is kept reserved with :data:`BOOKKEEPING_PENDING` beside it (where the
    driver can keep a note), and when it comes back the worker that pops it does only the
    bookkeeping (:func:`finish_bookkeeping`), until the store answers.
    """
    try:
        ctx.after_success(job)
        return True
    except ConnectionUnavailableError as exc:
        if job.queue.runs_inline:  # nothing to keep it in: the caller hears of it
            raise
        if job.queue.hold_failure(job, BOOKKEEPING_PENDING):
            log.warning("job %s succeeded but what it sets off could not be recorded (%s); it stays "
                        "reserved and that is done when it comes back", job.uuid, exc)
        return False


def finish_bookkeeping(job: QueueJob, ctx: Collaborators) -> None:
    """A job that succeeded earlier and whose bookkeeping could not be recorded then: record
    it now (the job does not run again), then delete the job."""
    accept(job)  # the payload is still checked: a refused one sets nothing off
    if settle_success(job, ctx) and not job.is_done:
        job.acknowledge()
        log.info("job %s: what it sets off is recorded now", job.uuid)


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
    """Fail ``job`` for good: settle what its failure sets off, record and delete it, call
    ``failed()`` once, emit ``JobFailed``.

    Its batch and chain learn of the failure first (:func:`settle_before_recording`), while the
    job is still held with its failure beside it: a worker that dies before the delete leaves
    the job to come back and be failed again, and those steps are made so that doing them again
    changes nothing. Recording and deleting are one fenced step
    (:meth:`FailedJobStore.fail_reserved`): a worker that no longer holds the reservation (it
    expired and another worker took the job) writes no record and calls nothing, the job
    belongs to the other worker now. When the failed store does not answer, the job stays
    reserved with its failure beside it and is recorded when it comes back
    (:func:`record_earlier_failure`); ``failed()`` and ``JobFailed`` happen now, once.
    """
    if job.failed:
        return
    job.mark_failed()
    description = describe_exception(exc)
    if not job.queue.hold_failure(job, description):
        log.warning("job %s was taken over by another worker before it could be failed", job.uuid)
        return
    if not settle_before_recording(job, exc, ctx):
        finish_failing(job, exc, ctx)  # recorded when it comes back, with its batch and chain
        return
    if record_failure(job, description, ctx) is FailOutcome.NOT_HELD:
        return
    if job.refusal is None:  # a refused payload names nothing to count
        job.queue.forget_exceptions(job.uuid)
    finish_failing(job, exc, ctx)


def finish_failing(job: QueueJob, exc: BaseException, ctx: Collaborators) -> None:
    if job.refusal is None:  # a refused payload names nothing to call
        call_failed_hook(job, exc, ctx)
    ctx.emit(JobFailed(job.connection_name, job, exc))


def settle_before_recording(job: QueueJob, exc: BaseException, ctx: Collaborators) -> bool:
    """The job's batch and chain learn it failed for good (never stopping the worker); False
    when they could not (a store did not answer): the job then stays reserved, its failure
    beside it, and comes back to be settled and recorded. A refused payload settles nothing:
    the batch and chain it names are an attacker's words."""
    if job.refusal is not None:
        return True
    try:
        ctx.after_failure(job, exc)
        return True
    except Exception:
        log.exception("could not record the failure of %s in its batch or chain; it is recorded "
                      "when it comes back", job.uuid)
        return False


def record_failure(job: QueueJob, description: str, ctx: Collaborators) -> FailOutcome:
    """Record and delete in one fenced step (with no store, as the sync driver: only delete)."""
    if ctx.failed is None:
        outcome = FailOutcome.RECORDED if job.delete() else FailOutcome.NOT_HELD
    else:
        outcome = ctx.failed.fail_reserved(job, record_for(job, description))
        job.deleted = outcome is FailOutcome.RECORDED
    if outcome is FailOutcome.NOT_HELD:
        log.warning("job %s was taken over by another worker before it could be failed", job.uuid)
    return outcome


def record_earlier_failure(job: QueueJob, ctx: Collaborators) -> None:
    """Record the failure a job came back with, without running it: it failed for good on an
    earlier attempt whose failed store (or batch store) did not answer, or whose worker died
    before it was done (its ``failed()`` hook ran then), or the driver could not reserve its row
    normally. Its batch and chain learn of it first, as in :func:`fail_job`."""
    job.mark_failed()
    failure = job.failure or ""
    if not settle_before_recording(job, FailedJobError(failure, job_uuid=job.uuid), ctx):
        return
    if record_failure(job, failure, ctx) is FailOutcome.RECORDED:
        log.warning("job %s is recorded as failed now: %s", job.uuid, failure.split("\n")[0])


def call_failed_hook(job: QueueJob, exc: BaseException, ctx: Collaborators) -> None:
    """The command's ``failed(exc)``, under the watch like the command itself."""
    try:
        handler = accept(job)
    except DeserializationError:
        return  # a payload that cannot be read has no hook to call
    payload = job.payload()
    hook = getattr(handler, "failed", None)
    if not callable(hook):
        return
    try:
        with ctx.watch(timeout_for(job, ctx.options)):
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
    ctx = Collaborators(None, bus, continue_chain, after_success=after_success,
                        after_failure=after_failure)
    job.on_fail = ctx.fail
    try:
        ctx.emit(JobProcessing(job.connection_name, job))
        started = time.perf_counter()
        screen(job)
        run_handler(job, accept(job), 0.0, ctx)
        runtime_s = time.perf_counter() - started
        acknowledge(job, ctx)
        ctx.emit(JobProcessed(job.connection_name, job, runtime_s))
    except Exception as exc:
        ctx.emit(JobExceptionOccurred(job.connection_name, job, exc))
        fail_job(job, exc, ctx)
        raise
