"""A worker's side of the recent-jobs store: the finished jobs it has not written yet.

The worker's monitor (:class:`eventbus.monitoring.monitor.WorkerMonitor`) hands over the jobs
it counted, in batches, and writes them with :meth:`JobRecorder.flush` from its own thread at
each heartbeat, and between heartbeats once :data:`FLUSH_AT` wait: one pipelined write (Redis) or one transaction (SQL) per batch, never a round
trip in a job's path. Completed jobs of a silenced class are left out (``silenced = True`` on
the job or listener class, or its name in ``configure(silenced=[...])``); failures never are.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Iterable

from eventbus import registry, runtime
from eventbus.tracking.records import COMPLETED, JobRecord
from eventbus.tracking.stores import repository

#: Records a worker holds at most while its store does not answer (the oldest go first).
MAX_WAITING = 10_000
#: Records that make the monitor flush before its next heartbeat: a worker finishing more jobs
#: between two heartbeats than MAX_WAITING (5,000 a second, say) must not lose the oldest.
FLUSH_AT = 2_000
#: Class names whose silence is remembered, at most (names come from payloads).
MAX_REMEMBERED = 1000


def silenced_class(name: str, command: str) -> bool:
    """Whether jobs named ``name`` (display name) running ``command`` (registered class) are
    silenced: either name in ``configure(silenced=...)``, or ``silenced = True`` on the command
    class or, for a queued listener, on the listener."""
    configured = runtime.settings().silenced
    if name in configured or command in configured:
        return True
    for find in (lambda: registry.resolve(command), lambda: registry.resolve_listener(name).target):
        try:
            if getattr(find(), "silenced", False) is True:
                return True
        except Exception:  # noqa: BLE001 - not a class this process knows: not silenced
            continue
    return False


class JobRecorder:
    """Finished jobs of one connection, waiting to be written (thread-safe)."""

    def __init__(self, connection: str) -> None:
        self.connection = connection
        self._waiting: collections.deque[JobRecord] = collections.deque(maxlen=MAX_WAITING)
        self._silenced: dict[tuple[str, str], bool] = {}
        self._lock = threading.Lock()

    def is_silenced(self, name: str, command: str) -> bool:
        key = (name, command)
        found = self._silenced.get(key)
        if found is None:
            if len(self._silenced) >= MAX_REMEMBERED:
                self._silenced.clear()
            found = self._silenced[key] = silenced_class(name, command)
        return found

    @property
    def waiting(self) -> int:
        """How many records wait for the next flush."""
        return len(self._waiting)

    def add(self, records: Iterable[JobRecord]) -> None:
        """Keep ``records`` for the next flush (silenced completions left out)."""
        kept = [r for r in records if r.status != COMPLETED or not self.is_silenced(r.name, r.command)]
        with self._lock:
            self._waiting.extend(kept)

    def flush(self) -> int:
        """Write what is waiting; how many were written. On an error they wait for the next
        flush (and the error propagates, for the monitor to log once per outage)."""
        with self._lock:
            taken = list(self._waiting)
            self._waiting.clear()
        if not taken:
            return 0
        try:
            repository(self.connection).record(taken, runtime.settings().retention_s)
        except Exception:
            with self._lock:  # back in front of the newer ones; past MAX_WAITING the oldest go
                kept = collections.deque(taken, maxlen=MAX_WAITING)
                kept.extend(self._waiting)
                self._waiting = kept
            raise
        return len(taken)
