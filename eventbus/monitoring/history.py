"""Metrics history: one snapshot per connection and minute, kept ``metrics_retention`` seconds.

The counters of :mod:`eventbus.monitoring.metrics` are kept three hours, per job class. For
longer ranges (the dashboard's 24 h and 7 d) a process that runs anyway (every worker's monitor
thread, ``eventbus monitor`` from cron) sums each finished minute per queue into one small JSON
document, with each queue's backlog (its ready jobs) at that moment, and keeps it for
``configure(metrics_retention=...)`` seconds (7 days by default) in the connection's state store.

One snapshot a minute however many processes try: the first to ``add`` the minute's key
(``SET NX`` with expiry on Redis, an insert that does nothing when the key exists in SQL) writes
it, the others find the key taken and move on. A minute is taken :data:`SETTLE_S` seconds after
it ended, once the workers flushed their counters of it. A process that starts takes the last
:data:`CATCH_UP_MINUTES` minutes nobody took (the gap of a deploy). Expiry trims the history (in
SQL an expired row counts as absent and is purged).

Reading downsamples (:func:`downsample`): the minutes are summed into buckets (10 minutes for a
day, an hour for a week) while runtime and wait stay sums and counts, so an hour's average is
the average of its jobs, not of its minutes. A bucket that no snapshot covers has no tally (a
gap: nothing was watching then); a bucket where nothing ran has zeros.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
import uuid
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from eventbus import runtime
from eventbus.errors import EventBusError
from eventbus.monitoring import keys
from eventbus.monitoring.metrics import BUCKET_S, Tally, bucket_of
from eventbus.state.base import StateStore

if TYPE_CHECKING:
    from eventbus.queue.base import Queue

log = logging.getLogger(__name__)

#: Seconds after a minute ends before it is taken: the workers flush every 5 s by default.
SETTLE_S = 30
#: Minutes a process looks back when it starts, for the ones nobody took.
CATCH_UP_MINUTES = 15
FORMAT_VERSION = 1


@dataclasses.dataclass
class QueuePoint:
    """One queue over one minute (or bucket): its tally and its backlog (ready jobs)."""

    tally: Tally = dataclasses.field(default_factory=Tally)
    backlog: int | None = None

    def add(self, other: QueuePoint) -> None:
        """Sum the tallies; the backlog is the largest seen (a bucket shows its peak)."""
        self.tally.add(other.tally)
        if other.backlog is not None:
            self.backlog = other.backlog if self.backlog is None else max(self.backlog, other.backlog)

    def to_dict(self) -> dict[str, float | int | None]:
        t = self.tally
        return {"processed": t.processed, "failed": t.failed, "released": t.released,
                "avg_runtime_s": t.avg_runtime_s, "avg_wait_s": t.avg_wait_s, "backlog": self.backlog}


def _compact(value: float) -> float | int:
    return int(value) if float(value).is_integer() else round(value, 4)


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """One minute of one connection, per queue, as stored: ``{"v": 1, "q": {queue: [done,
    failed, released, runtime, wait, waited, backlog]}}`` (the fields of :data:`keys.FIELDS`)."""

    minute: int
    queues: Mapping[str, QueuePoint]

    def to_json(self) -> str:
        queues = {name: [*(_compact(getattr(p.tally, f)) for f in keys.FIELDS), p.backlog]
                  for name, p in sorted(self.queues.items())}
        return json.dumps({"v": FORMAT_VERSION, "q": queues}, separators=(",", ":"))

    @classmethod
    def from_json(cls, minute: int, text: str) -> Snapshot | None:
        """The snapshot in ``text``; None for anything else (a minute being taken, a damaged value)."""
        try:
            doc = json.loads(text)
            queues = {str(name): _point(row) for name, row in doc["q"].items()}
        except (ValueError, TypeError, KeyError, AttributeError):
            return None
        return cls(minute, queues)


def _point(row: Any) -> QueuePoint:
    if not isinstance(row, list) or len(row) != len(keys.FIELDS) + 1:
        raise ValueError("not a snapshot row")
    tally = Tally(**{f: float(v) for f, v in zip(keys.FIELDS, row)})
    backlog = row[-1]
    return QueuePoint(tally, int(backlog) if isinstance(backlog, (int, float)) else None)


class HistoryWriter:
    """Takes the snapshots of one connection; see the module docstring for who writes what.

    ``queue`` (the connection's queue) gives the backlog; without it the backlog is not kept.
    ``retention_s`` defaults to the configured ``metrics_retention``.
    """

    def __init__(self, store: StateStore, connection: str, *, queue: Queue | None = None,
                 retention_s: float | None = None, settle_s: float = SETTLE_S) -> None:
        self.store = store
        self.connection = connection
        self.queue = queue
        self.retention_s = retention_s
        self.settle_s = settle_s
        self._next: int | None = None

    def due(self, now: float | None = None) -> list[int]:
        """The minutes to try now: those ended since the last call (the last few at first)."""
        last = bucket_of((time.time() if now is None else now) - self.settle_s) - BUCKET_S
        first = self._next if self._next is not None else last - (CATCH_UP_MINUTES - 1) * BUCKET_S
        return list(range(first, last + BUCKET_S, BUCKET_S))

    def take_due(self, now: float | None = None) -> list[int]:
        """Take every due minute nobody took yet; the minutes this call wrote."""
        minutes = self.due(now)
        written = [minute for minute in minutes if self.take(minute)]
        if minutes:
            self._next = minutes[-1] + BUCKET_S
        return written

    def take(self, minute: int) -> bool:
        """Write the snapshot of ``minute`` unless another process has: True when this one did."""
        retention = self.retention_s or runtime.settings().metrics_retention_s
        key, token = keys.snapshot(self.connection, minute), f"taking {uuid.uuid4().hex}"
        if not self.store.add(key, token, ttl_s=retention):
            return False
        try:
            snapshot = self.build(minute)
        except Exception:
            self.store.delete_if(key, token)  # let another process take it
            raise
        self.store.put(key, snapshot.to_json(), ttl_s=retention)
        return True

    def build(self, minute: int) -> Snapshot:
        """The minute's counters summed per queue, with each queue's backlog now."""
        points: dict[str, QueuePoint] = {}
        for key, value in self.store.scan(f"{keys.metrics(self.connection)}{minute}:").items():
            parsed = keys.parse_metric(self.connection, key)
            if parsed is None or parsed[0] != minute:
                continue
            _, queue, _, field = parsed
            tally = points.setdefault(queue, QueuePoint()).tally
            try:
                setattr(tally, field, getattr(tally, field) + float(value))
            except ValueError:
                continue
        prefix = keys.queues(self.connection)
        for key in self.store.scan(prefix):
            points.setdefault(keys.unpart(key[len(prefix):]), QueuePoint())
        for name, point in points.items():
            point.backlog = self._backlog(name)
        return Snapshot(minute, points)

    def _backlog(self, name: str) -> int | None:
        if self.queue is None:
            return None
        try:
            return self.queue.stats(name).ready
        except EventBusError as exc:
            log.debug("metrics history: no backlog for %s:%s: %s", self.connection, name, exc)
            return None


# -- reading ---------------------------------------------------------------------------------------

def read_snapshots(store: StateStore, connection: str, since: float,
                   until: float | None = None) -> list[Snapshot]:
    """The snapshots of the minutes from ``since`` to ``until`` (now), oldest first."""
    until = time.time() if until is None else until
    prefix = keys.history(connection)
    found = []
    for key, value in store.scan(prefix).items():
        rest = key[len(prefix):]
        if not (rest.isascii() and rest.isdigit()):
            continue
        minute = int(rest)
        if minute + BUCKET_S <= since or minute >= until:
            continue
        snapshot = Snapshot.from_json(minute, value)
        if snapshot is not None:
            found.append(snapshot)
    return sorted(found, key=lambda s: s.minute)


@dataclasses.dataclass
class Point:
    """One bucket of a series: ``point`` is None when no snapshot covers the bucket."""

    at: int
    point: QueuePoint | None = None

    def to_dict(self) -> dict[str, Any]:
        values = self.point.to_dict() if self.point is not None else dict.fromkeys(QueuePoint().to_dict())
        return {"at": self.at, **values}


def buckets(since: float, until: float, bucket_s: int) -> list[int]:
    """The starts of the buckets of ``bucket_s`` seconds from ``since`` to ``until``."""
    first = int(since // bucket_s) * bucket_s
    return list(range(first, int(until) + 1, bucket_s))


def downsample(snapshots: Iterable[Snapshot], since: float, until: float, bucket_s: int,
               queue: str | None = None) -> list[Point]:
    """One point per bucket: ``queue``'s minutes summed (every queue's when None; the backlog
    then is the sum over the queues, its peak over the bucket's minutes)."""
    points = {at: Point(at) for at in buckets(since, until, bucket_s)}
    for snapshot in snapshots:
        target = points.get(snapshot.minute // bucket_s * bucket_s)
        if target is None:
            continue
        minute = QueuePoint(backlog=None)
        for name, point in snapshot.queues.items():
            if queue is None or name == queue:
                minute.tally.add(point.tally)
                if point.backlog is not None:
                    minute.backlog = (minute.backlog or 0) + point.backlog
        if target.point is None:
            target.point = QueuePoint()
        target.point.add(minute)
    return list(points.values())


def queues_in(snapshots: Iterable[Snapshot]) -> list[str]:
    return sorted({name for snapshot in snapshots for name in snapshot.queues})


def take_snapshots(connections: Iterable[str]) -> list[str]:
    """Take the due snapshots of each connection, as ``eventbus monitor`` does on every run
    (from cron, the periodic process where no worker runs); the problems met, one line each."""
    problems = []
    for name in connections:
        try:
            HistoryWriter(runtime.state(name), name, queue=runtime.connection(name)).take_due()
        except EventBusError as exc:
            problems.append(f"metrics history of {name}: {exc}")
    return problems
