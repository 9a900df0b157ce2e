"""The time ranges the dashboard offers, and the series each shows per queue.

Up to three hours the series come from the live counters (:mod:`eventbus.monitoring.metrics`,
a point a minute, per job class too); 24 hours and 7 days from the metrics history
(:mod:`eventbus.monitoring.history`, downsampled to 10-minute and 1-hour points, per queue
only, with the backlog). A connection that cannot be read adds a line to ``problems``; the
others are still shown.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

from eventbus import runtime
from eventbus.errors import EventBusError
from eventbus.monitoring import history, metrics
from eventbus.monitoring.history import Point, QueuePoint, Snapshot
from eventbus.monitoring.status import connections


@dataclasses.dataclass(frozen=True)
class Range:
    """A range a page or ``/api/metrics`` shows: its length and the width of one point."""

    name: str
    seconds: int
    bucket_s: int

    @property
    def from_history(self) -> bool:
        """Longer than the live counters are kept: read from the metrics history."""
        return self.seconds > metrics.RETENTION_S

    def since(self, now: float) -> float:
        if self.from_history:  # never older than the history is kept (a shortened retention)
            return now - min(self.seconds, runtime.settings().metrics_retention_s)
        return now - self.seconds


RANGES = {r.name: r for r in (Range("15m", 900, 60), Range("1h", 3600, 60), Range("3h", 3 * 3600, 60),
                              Range("24h", 24 * 3600, 600), Range("7d", 7 * 24 * 3600, 3600))}
DEFAULT_RANGE = "1h"


def range_of(name: str | None) -> Range:
    """The range called ``name``; the default one for anything else."""
    return RANGES.get(name or "", RANGES[DEFAULT_RANGE])


@dataclasses.dataclass
class QueueSeries:
    """One queue of one connection over a range."""

    connection: str
    queue: str
    points: list[Point]

    @property
    def total(self) -> QueuePoint:
        """Every point summed; the backlog is the range's peak."""
        total = QueuePoint()
        for point in self.points:
            if point.point is not None:
                total.add(point.point)
        return total

    def to_dict(self) -> dict[str, Any]:
        return {"connection": self.connection, "queue": self.queue,
                "total": self.total.to_dict(), "points": [p.to_dict() for p in self.points]}


def _live(connection: str, since: float, now: float, queue: str | None) -> dict[str, list[Point]]:
    samples = metrics.read_samples(runtime.state(connection), connection, since)
    out = {}
    for name in sorted({s.queue for s in samples if queue is None or s.queue == queue}):
        mine = [s for s in samples if s.queue == name]
        out[name] = [Point(at, QueuePoint(tally)) for at, tally in metrics.per_minute(mine, since, now)]
    return out


def _kept(connection: str, since: float) -> list[Snapshot]:
    return history.read_snapshots(runtime.state(connection), connection, since)


def queue_series(names: Sequence[str] | None, chosen: Range, problems: list[str],
                 queue: str | None = None) -> list[QueueSeries]:
    """A series per queue (only ``queue``'s when given) of every watched connection."""
    now = time.time()
    since = chosen.since(now)
    found: list[QueueSeries] = []
    for connection in connections(names):
        try:
            if chosen.from_history:
                kept = _kept(connection, since)
                series = {name: history.downsample(kept, since, now, chosen.bucket_s, name)
                          for name in history.queues_in(kept) if queue is None or name == queue}
            else:
                series = _live(connection, since, now, queue)
        except EventBusError as exc:
            problems.append(f"metrics of {connection}: {exc}")
            continue
        found.extend(QueueSeries(connection, name, points) for name, points in series.items())
    return found


def total_series(names: Sequence[str] | None, chosen: Range, problems: list[str]) -> list[Point]:
    """Every queue of every watched connection together over a range (history ranges only;
    the live ranges sum the live counters themselves)."""
    now = time.time()
    since = chosen.since(now)
    by_minute: dict[int, dict[str, QueuePoint]] = {}
    for connection in connections(names):
        try:
            kept = _kept(connection, since)
        except EventBusError as exc:
            problems.append(f"metrics of {connection}: {exc}")
            continue
        for snapshot in kept:  # one snapshot a minute over the connections: backlogs add up
            merged = by_minute.setdefault(snapshot.minute, {})
            merged.update({f"{connection}:{name}": point for name, point in snapshot.queues.items()})
    snapshots = [Snapshot(minute, queues) for minute, queues in sorted(by_minute.items())]
    return history.downsample(snapshots, since, now, chosen.bucket_s)
