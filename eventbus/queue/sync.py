"""The sync driver: a push runs the job at once in the caller (Laravel's SyncQueue).

Exceptions propagate to the caller after the job's ``failed()`` hook ran and ``JobFailed`` was
emitted; nothing is retried and nothing is stored.
"""

from __future__ import annotations

import collections

from eventbus.queue.base import Queue, QueueJob, id_for


class SyncQueue(Queue):
    driver = "sync"

    def __init__(self, connection_name: str, config: dict) -> None:  # type: ignore[type-arg]
        super().__init__(connection_name, config)
        self._exceptions: collections.Counter[str] = collections.Counter()

    def push_raw(self, payload: str, queue: str | None = None, *, delay: float = 0.0) -> str:
        from eventbus.processing import run_sync_job  # late: processing runs jobs, drivers do not

        job = QueueJob(queue=self, queue_name=self.queue_name(queue), job_id=id_for(payload),
                       raw=payload, attempts=1)
        run_sync_job(job)
        return job.job_id

    def pop(self, queue: str | None = None) -> QueueJob | None:
        return None

    def delete_reserved(self, job: QueueJob) -> bool:
        return True

    def release_reserved(self, job: QueueJob, delay: float) -> bool:
        return True

    def size(self, queue: str | None = None) -> int:
        return 0

    def clear(self, queue: str | None = None) -> int:
        return 0

    def peek(self, queue: str | None = None, limit: int = 10) -> list[str]:
        return []

    def record_exception(self, uuid: str) -> int:
        self._exceptions[uuid] += 1
        return self._exceptions[uuid]
