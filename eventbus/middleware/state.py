"""Where a running job's middleware keeps its locks and counters: its connection's state store,
and what the middleware does when that store does not answer.

A store that does not answer is not the job's fault: the job did not run (or ran, and only its
lock could not be let go), so it must not use up a try or fail. Before the job runs, the
middleware puts it back for :data:`STORE_RETRY_S` seconds without counting the attempt; after it
ran, a lock that cannot be released is left to expire.
"""

from __future__ import annotations

import logging
import random
from typing import Any

from eventbus import runtime
from eventbus.errors import ConnectionUnavailableError
from eventbus.state import StateStore

log = logging.getLogger(__name__)

#: What the stores of locks and counters raise when they cannot be reached.
STORE_ERRORS = (ConnectionUnavailableError,)
#: A job whose middleware could not reach its store comes back after this long (plus jitter).
STORE_RETRY_S = 5.0


def state_of(job: Any) -> StateStore:
    """The state store of the connection the job was popped from (the default one inline)."""
    queue_job = getattr(job, "_queue_job", None)
    return runtime.state(queue_job.connection_name if queue_job is not None else None)


def job_name(job: Any) -> str:
    """The display name of a job, for lock and counter keys."""
    return str(getattr(job, "display_name", None) or f"{type(job).__module__}.{type(job).__qualname__}")


def owner_of(job: Any) -> str:
    """Who holds a lock: this attempt of this job (uuid and reservation token)."""
    queue_job = getattr(job, "_queue_job", None)
    if queue_job is None:
        return f"inline:{id(job)}"
    return f"{queue_job.uuid}:{queue_job.token or queue_job.attempts}"


def release_unreachable(job: Any, middleware: str, exc: BaseException) -> None:
    """The store did not answer before the job ran: put it back without using a try."""
    log.warning("%s could not reach its store for job %s (%s); the job is put back for %.0fs "
                "without using a try", middleware, job_name(job), exc, STORE_RETRY_S)
    job.release(STORE_RETRY_S + random.uniform(0, 1), counts_attempt=False)


def let_go(store: StateStore, key: str, owner: str) -> None:
    """Release a lock after the job ran; a store that does not answer leaves it to expire."""
    try:
        store.delete_if(key, owner)
    except STORE_ERRORS as exc:
        log.warning("could not release lock %s (%s); it expires by itself", key, exc)
