"""Per job class and queue: attempts by outcome, runtime and wait, in one-minute buckets.

A worker never writes per job: :class:`MetricsRecorder` adds each finished attempt to a tally in
memory and :meth:`~MetricsRecorder.flush` writes the tallies as counters into the connection's
state store (one ``incr_many`` round trip), every few seconds and when the worker stops.
Counters of several workers add up in the store. Buckets expire after :data:`RETENTION_S`, so
the dashboard can show the last hours without another database; each finished minute is summed
per queue into the longer-kept :mod:`~eventbus.monitoring.history` (Horizon's snapshots, taken
by the workers themselves rather than a scheduled job).

Runtime is measured for every attempt, whatever its outcome. Wait is the time from the push
(the payload's ``pushedAt``) to the start of the first attempt; a delayed job's wait includes
its delay.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Iterable

from eventbus.monitoring import keys
from eventbus.state.base import StateStore

log = logging.getLogger(__name__)

BUCKET_S = 60
RETENTION_S = 3 * 3600
#: Tallies kept while the store cannot be reached (the oldest buckets go first beyond this).
MAX_PENDING = 5000
STATUSES = ("done", "failed", "released")


@dataclasses.dataclass
class Tally:
    """One bucket of one (queue, job): what the fields of :data:`keys.FIELDS` hold."""

    done: float = 0
    failed: float = 0
    released: float = 0
    runtime: float = 0.0
    wait: float = 0.0
    waited: float = 0

    @property
    def attempts(self) -> float:
        return self.done + self.failed + self.released

    @property
    def processed(self) -> float:
        """Jobs that finished for good: done or failed (a release comes back later)."""
        return self.done + self.failed

    @property
    def avg_runtime_s(self) -> float | None:
        return self.runtime / self.attempts if self.attempts else None

    @property
    def avg_wait_s(self) -> float | None:
        return self.wait / self.waited if self.waited else None

    def add(self, other: Tally) -> None:
        for field in keys.FIELDS:
            setattr(self, field, getattr(self, field) + getattr(other, field))

    def to_dict(self) -> dict[str, float | None]:
        return {**dataclasses.asdict(self), "processed": self.processed,
                "avg_runtime_s": self.avg_runtime_s, "avg_wait_s": self.avg_wait_s}


def bucket_of(at: float) -> int:
    return int(at // BUCKET_S) * BUCKET_S


class MetricsRecorder:
    """Tallies finished attempts in memory; :meth:`flush` adds them to the store's counters."""

    def __init__(self, connection: str) -> None:
        self.connection = connection
        self._pending: dict[tuple[int, str, str], Tally] = {}
        self._lock = threading.Lock()

    def record(self, queue: str, job: str, status: str, runtime_s: float,
               wait_s: float | None = None, at: float | None = None) -> None:
        """Count one finished attempt (``status``: done, failed or released)."""
        self.record_many([(queue, job, status, runtime_s, wait_s, time.time() if at is None else at)])

    def record_many(self, attempts: Iterable[tuple[str, str, str, float, float | None, float]]) -> None:
        """Count finished attempts, each ``(queue, job, status, runtime_s, wait_s, at)``."""
        counted: dict[tuple[int, str, str], Tally] = {}
        for queue, job, status, runtime_s, wait_s, at in attempts:
            if status not in STATUSES:
                raise ValueError(f"status must be one of {STATUSES}, not {status!r}")
            key = (bucket_of(at), queue, job)
            tally = counted.get(key)
            if tally is None:
                tally = counted[key] = Tally()
            setattr(tally, status, getattr(tally, status) + 1)
            tally.runtime += max(runtime_s, 0.0)
            if wait_s is not None:
                tally.wait += max(wait_s, 0.0)
                tally.waited += 1
        with self._lock:
            for key, tally in counted.items():
                pending = self._pending.get(key)
                if pending is None:
                    self._pending[key] = tally
                else:
                    pending.add(tally)

    def pending(self) -> int:
        with self._lock:
            return len(self._pending)

    def flush(self, store: StateStore) -> int:
        """Write the tallies as counters; return how many buckets were written.

        If the store cannot be reached the tallies are kept for the next flush (up to
        :data:`MAX_PENDING` buckets) and the error propagates.
        """
        with self._lock:
            taken, self._pending = self._pending, {}
        if not taken:
            return 0
        counters: dict[str, float] = {}
        for (minute, queue, job), tally in taken.items():
            for field in keys.FIELDS:
                amount = getattr(tally, field)
                if amount:
                    counters[keys.metric(self.connection, minute, queue, job, field)] = amount
        seen = {keys.queues(self.connection) + keys.part(q): repr(time.time())
                for q in {queue for _, queue, _ in taken}}
        try:
            store.incr_many(counters, ttl_s=RETENTION_S + BUCKET_S)
            store.put_many(seen, ttl_s=24 * 3600)
        except Exception:
            self._put_back(taken)
            raise
        return len(taken)

    def _put_back(self, taken: dict[tuple[int, str, str], Tally]) -> None:
        with self._lock:
            for key, tally in taken.items():
                self._pending.setdefault(key, Tally()).add(tally)
            if len(self._pending) > MAX_PENDING:
                for key in sorted(self._pending)[:len(self._pending) - MAX_PENDING]:
                    del self._pending[key]


# -- reading ---------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Sample:
    """One bucket of one (queue, job) as read back."""

    minute: int
    queue: str
    job: str
    tally: Tally


def read_samples(store: StateStore, connection: str, since: float | None = None) -> list[Sample]:
    """Every bucket of the connection (from ``since``, epoch seconds), oldest first."""
    tallies: dict[tuple[int, str, str], Tally] = {}
    for key, value in store.scan(keys.metrics(connection)).items():
        parsed = keys.parse_metric(connection, key)
        if parsed is None:
            continue
        minute, queue, job, field = parsed
        if since is not None and minute + BUCKET_S <= since:
            continue
        try:
            amount = float(value)
        except ValueError:
            continue
        tally = tallies.setdefault((minute, queue, job), Tally())
        setattr(tally, field, getattr(tally, field) + amount)
    return [Sample(m, q, j, t) for (m, q, j), t in sorted(tallies.items())]


def totals_by(samples: Iterable[Sample], *, job: bool = True, queue: bool = True) -> dict[tuple[str, str], Tally]:
    """Tallies summed per (queue, job); a part left out is ``""`` (e.g. per job class only)."""
    out: dict[tuple[str, str], Tally] = {}
    for sample in samples:
        key = (sample.queue if queue else "", sample.job if job else "")
        out.setdefault(key, Tally()).add(sample.tally)
    return dict(sorted(out.items()))


def per_minute(samples: Iterable[Sample], since: float, until: float | None = None) -> list[tuple[int, Tally]]:
    """One tally per minute from ``since`` to ``until`` (now), empty minutes included."""
    first, last = bucket_of(since), bucket_of(time.time() if until is None else until)
    series = {minute: Tally() for minute in range(first, last + BUCKET_S, BUCKET_S)}
    for sample in samples:
        if sample.minute in series:
            series[sample.minute].add(sample.tally)
    return sorted(series.items())
