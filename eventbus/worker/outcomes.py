"""How a worker records an attempt that did not end the usual way, and the line it prints for
each attempt.

:func:`eventbus.worker.processing.attempt` settles every attempt whose code ran to an end (done,
released, failed). What is left to the worker: an error raised around the job rather than by it
(:func:`fail_unexpected`), and a job past its timeout that could not be interrupted
(:func:`record_timed_out`, which both watchdogs call: the worker's own and the concurrent
runner's). Kept apart from the loop so that the loop reads as the loop.
"""

from __future__ import annotations

import logging
import os
import time
from typing import TYPE_CHECKING

from eventbus.errors import DeserializationError, JobTimeoutError
from eventbus.monitoring.logformat import JobReport, job_line
from eventbus.monitoring.monitor import job_name
from eventbus.queue.base import QueueJob
from eventbus.worker.processing import Collaborators, Outcome, backoff_for, fail_job, max_tries_for

if TYPE_CHECKING:
    from eventbus.worker.options import WorkerOptions

log = logging.getLogger("eventbus.worker")


def fail_unexpected(job: QueueJob, exc: Exception,
                    collaborators: Collaborators) -> tuple[Outcome, BaseException]:
    """The last line of defence: whatever went wrong around the job fails that job, and the
    worker goes on. If even failing it is impossible, the reservation expires and it returns."""
    log.error("processing job %s raised outside the job's own code", job.uuid, exc_info=exc)
    try:
        fail_job(job, exc, collaborators)
    except Exception:
        log.exception("could not fail job %s; it will come back after retry_after", job.uuid)
        return Outcome.RELEASED, exc
    return Outcome.FAIL, exc


def record_timed_out(job: QueueJob, exc: JobTimeoutError, collaborators: Collaborators) -> None:
    """The outcome of an attempt that ran past its timeout and could not be stopped: failed
    when its tries are used up or it says ``fail_on_timeout``, else released with its
    backoff. Never raises (the caller ends the process or stops taking jobs next)."""
    options = collaborators.options
    try:
        if job.payload().fail_on_timeout or (0 < max_tries_for(job, options) <= job.attempts):
            fail_job(job, exc, collaborators)
        else:
            job.release(backoff_for(job, options))
    except Exception:
        log.exception("could not record the outcome of job %s", job.uuid)


def report_line(job: QueueJob, outcome: Outcome, seconds: float, exc: BaseException | None, *,
                options: WorkerOptions, collaborators: Collaborators) -> str:
    """One line per attempt (:mod:`eventbus.monitoring.logformat`), from the worker's options
    (its name, the log format) and the job options its collaborators apply (the tries)."""
    try:
        max_tries: int | None = max_tries_for(job, collaborators.options)
    except DeserializationError:
        max_tries = None
    released = outcome is Outcome.RELEASED
    return job_line(JobReport(
        worker=options.name, pid=os.getpid(), connection=job.connection_name,
        queue=job.queue_name, job=job_name(job), uuid=job.uuid, attempt=job.attempts,
        max_tries=max_tries, runtime_s=seconds, status=outcome.value,
        delay_s=job.release_delay_s if released else None,
        error=f"{type(exc).__name__}: {exc}" if exc is not None else None, at=time.time()),
        options.log_format)
