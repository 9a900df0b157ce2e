"""Where a running job's middleware keeps its locks and counters: its connection's state store."""

from __future__ import annotations

from typing import Any

from eventbus import runtime
from eventbus.state import StateStore


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
