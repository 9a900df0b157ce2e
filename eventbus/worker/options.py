"""What ``eventbus work`` can be told: :class:`WorkerOptions`, one frozen value the CLI builds and
the worker, its prefetcher and its concurrent runner read; and :func:`memory_mb`, what
``--memory`` is compared with.
"""

from __future__ import annotations

import dataclasses
import os
import resource

from eventbus.worker.processing import ProcessOptions
from eventbus.worker.timeouts import DEFAULT_GRACE_S

DEFAULT_PREFETCH = 32


@dataclasses.dataclass(frozen=True, kw_only=True)
class WorkerOptions:
    """Worker settings. Durations are seconds; 0 disables a limit."""

    queues: tuple[str, ...] = ()
    name: str = "default"
    sleep_s: float = 3.0
    tries: int = 1
    backoff_s: tuple[float, ...] = (0.0,)
    timeout_s: float = 60.0
    timeout_grace_s: float = DEFAULT_GRACE_S
    memory_mb: float = 128.0
    max_jobs: int = 0
    max_time_s: float = 0.0
    rest_s: float = 0.0
    force: bool = False
    once: bool = False
    stop_when_empty: bool = False
    #: The line per job: ``text`` or ``json`` (one object per line).
    log_format: str = "text"
    #: The supervisor's pid (``--processes``): exit after the current job when it is gone.
    supervisor_pid: int = 0
    #: The supervisor of ``eventbus supervise`` this worker belongs to: pausing it pauses the worker.
    supervisor: str = ""
    #: At most this many jobs reserved per request on a driver that batches them (Redis); the
    #: worker takes fewer for slower jobs (:mod:`eventbus.worker.prefetch`). 1: one job at a time.
    prefetch: int = DEFAULT_PREFETCH
    #: Jobs run at once (:mod:`eventbus.worker.concurrency`): threads for sync code, one event loop for
    #: async code. 1: one job at a time in the main thread, interrupted by ``SIGALRM``.
    concurrency: int = 1

    def process_options(self) -> ProcessOptions:
        return ProcessOptions(tries=self.tries, backoff=self.backoff_s, timeout=self.timeout_s,
                              grace=self.timeout_grace_s)


def memory_mb() -> float:
    """Resident memory of this process in MB (current where /proc has it, else the peak)."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 1048576
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
