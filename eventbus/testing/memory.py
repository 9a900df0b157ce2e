"""``memory_queue``: jobs really queued and really run, in this process, on the memory driver.

The fakes record what was pushed; this runs it. Inside the block the default connection is a
fresh ``memory`` connection (:mod:`eventbus.queue.memory`) with an in-memory failed store; jobs,
queued listeners, chains, batches and queued notifications go there, and :meth:`MemoryQueueRun.drain`
runs them with the worker's own rules (``CallQueuedHandler``, retries, ``failed()``, chain and
batch steps) until none is ready. After the block the configuration from before it comes back.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

from eventbus import runtime
from eventbus.failed.base import FailedJob
from eventbus.queue.base import Queue


class MemoryQueueRun:
    """The memory connection of a :func:`memory_queue` block, and the way to run its jobs."""

    def __init__(self, connection: str) -> None:
        self.connection = connection

    @property
    def queue(self) -> Queue:
        """The connection's queue (``size()``, ``peek()``, ``stats()``...)."""
        return runtime.connection(self.connection)

    def size(self, queue: str | None = None) -> int:
        """Ready, delayed and reserved jobs of ``queue`` (default: the connection's default queue)."""
        return self.queue.size(queue)

    def drain(self, queues: Sequence[str] = (), *, tries: int = 1, timeout_s: float = 60.0) -> int:
        """Run jobs in this process until none is ready (the worker's ``--stop-when-empty``);
        return how many were processed, failed ones included.

        ``queues`` in priority order (default: the connection's default queue). A job released
        with a delay, or a delayed job not due yet, stays queued: call ``drain`` again once it
        is due. Jobs that fail for good are in :meth:`failed`; their exceptions do not propagate.
        """
        # The worker loop is imported when a test first drains: the pytest plugin imports this
        # package in every test session, most of which never run a worker.
        from eventbus.worker import Worker, WorkerOptions

        options = WorkerOptions(queues=tuple(queues), stop_when_empty=True, sleep_s=0.0,
                                memory_mb=0.0, tries=tries, timeout_s=timeout_s)
        worker = Worker.for_connection(self.connection, options=options)
        worker.run()
        return worker.jobs_processed

    def failed(self) -> list[FailedJob]:
        """The records of the jobs that failed for good in this block, newest first."""
        return runtime.failed_store().all()


@contextlib.contextmanager
def memory_queue(connection: str = "memory") -> Iterator[MemoryQueueRun]:
    """Make a fresh memory connection named ``connection`` the default for the block.

    The other settings (connections, keys, mail and SMS transports, middleware) stay as they
    are; failed jobs go to an in-memory store. Jobs pushed to another connection by name still
    go there. Only this process sees the jobs: run them with :meth:`MemoryQueueRun.drain`.
    """
    with runtime.configured(default=connection, connections={connection: {"driver": "memory"}},
                            failed="memory"):
        yield MemoryQueueRun(connection)
