"""The sync driver: a push runs the job at once in the caller (Laravel's SyncQueue).

Exceptions propagate to the caller after the job's ``failed()`` hook ran and ``JobFailed`` was
emitted; nothing is retried and nothing is stored (it keeps nothing, like the null driver).
"""

from __future__ import annotations

import collections
from typing import Any

from eventbus.queue.base import QueueJob, id_for
from eventbus.queue.null import NullQueue


class SyncQueue(NullQueue):
    driver = "sync"

    def __init__(self, connection_name: str, config: dict[str, Any]) -> None:
        super().__init__(connection_name, config)
        self._exceptions: collections.Counter[str] = collections.Counter()

    def push_raw(self, payload: str, queue: str | None = None, *, delay: float = 0.0) -> str:
        from eventbus.processing import run_sync_job  # late: processing runs jobs, drivers do not

        job = QueueJob(queue=self, queue_name=self.queue_name(queue), job_id=id_for(payload),
                       raw=payload, attempts=1)
        run_sync_job(job)
        return job.job_id

    def record_exception(self, uuid: str) -> int:
        self._exceptions[uuid] += 1
        return self._exceptions[uuid]
