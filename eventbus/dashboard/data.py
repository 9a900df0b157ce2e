"""What each dashboard page shows, read from the queues, the state stores and the failed store.

Everything is read per request (no dashboard-side cache or database): queue counts from the
drivers, workers and metrics from each connection's state store, failures from the failed job
store. A connection that cannot be read becomes a problem line on the page, not an error page.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

from eventbus import runtime
from eventbus.errors import DeserializationError, EventBusError
from eventbus.failed.base import FailedJob
from eventbus.monitoring import failures
from eventbus.monitoring.metrics import Sample, Tally, per_minute, read_samples, totals_by
from eventbus.monitoring.registry import FinishedJob
from eventbus.monitoring.status import Status, connections, recent_jobs, status
from eventbus.payload import parse_document

WINDOWS = {"15m": 900, "1h": 3600, "3h": 3 * 3600}
DEFAULT_WINDOW = "1h"
RATE_WINDOW_S = 300
PEEK_PER_QUEUE = 10
RECENT_LIMIT = 100


@dataclasses.dataclass
class Reading:
    """A page's data and the problems met while reading it."""

    problems: list[str] = dataclasses.field(default_factory=list)

    def attempt(self, what: str, fn: Any, default: Any) -> Any:
        try:
            return fn()
        except EventBusError as exc:
            self.problems.append(f"{what}: {exc}")
            return default


def window_of(name: str | None) -> tuple[str, int]:
    chosen = name if name in WINDOWS else DEFAULT_WINDOW
    return chosen, WINDOWS[chosen]


def samples(names: Sequence[str] | None, since: float, reading: Reading) -> list[Sample]:
    found: list[Sample] = []
    for name in connections(names):
        found.extend(reading.attempt(f"metrics of {name}",
                                     lambda n=name: read_samples(runtime.state(n), n, since), []))
    return found


@dataclasses.dataclass(frozen=True)
class JobRow:
    """One job class over the window: totals, per-minute processed, rate."""

    job: str
    queues: tuple[str, ...]
    tally: Tally
    processed_per_minute: list[float]

    @property
    def rate_per_minute(self) -> float:
        recent = self.processed_per_minute[-5:]
        return sum(recent) / max(len(recent), 1)


def job_rows(found: list[Sample], since: float) -> list[JobRow]:
    rows = []
    for (_, job), tally in totals_by(found, queue=False).items():
        mine = [s for s in found if s.job == job]
        series = per_minute(mine, since)
        rows.append(JobRow(job, tuple(sorted({s.queue for s in mine})), tally,
                           [t.processed for _, t in series]))
    return sorted(rows, key=lambda r: (-r.tally.attempts, r.job))


def chart_points(series: list[tuple[int, Tally]]) -> dict[str, list[tuple[int, float | None]]]:
    """The per-minute series the charts draw: processed, failed, average runtime and wait."""
    return {"processed": [(m, t.processed) for m, t in series],
            "failed": [(m, t.failed) for m, t in series],
            "runtime": [(m, t.avg_runtime_s) for m, t in series],
            "wait": [(m, t.avg_wait_s) for m, t in series]}


def overview(names: Sequence[str] | None, window_s: int) -> dict[str, Any]:
    reading = Reading()
    since = time.time() - window_s
    current: Status = status(names)
    reading.problems.extend(current.problems)
    found = samples(names, since, reading)
    series = per_minute(found, since)
    total = Tally()
    for _, tally in series:
        total.add(tally)
    recent = [t for m, t in series if m >= time.time() - RATE_WINDOW_S]
    return {"status": current, "points": chart_points(series), "total": total,
            "rate_per_minute": sum(t.processed for t in recent) / max(len(recent), 1),
            "ready": sum(q.ready for q in current.queues),
            "delayed": sum(q.delayed for q in current.queues),
            "reserved": sum(q.reserved for q in current.queues),
            "max_wait": max((q.oldest_ready_age_s or 0.0 for q in current.queues), default=0.0),
            "jobs": job_rows(found, since)[:10], "problems": reading.problems}


@dataclasses.dataclass(frozen=True)
class Waiting:
    """A ready job, as ``peek`` shows it."""

    connection: str
    queue: str
    uuid: str
    name: str
    pushed_at: float | None


def _waiting(connection: str, queue: str, raw: str) -> Waiting:
    try:
        doc = parse_document(raw)
    except DeserializationError:
        return Waiting(connection, queue, "?", "(unreadable payload)", None)
    pushed = doc.get("pushedAt")
    return Waiting(connection, queue, str(doc.get("uuid", "?")), str(doc.get("displayName", "?")),
                   float(pushed) if isinstance(pushed, (int, float)) else None)


def jobs_page(names: Sequence[str] | None) -> dict[str, Any]:
    reading = Reading()
    current = status(names, with_failed=False)
    reading.problems.extend(current.problems)
    finished: list[FinishedJob] = []
    for name in connections(names):
        finished.extend(reading.attempt(f"recent jobs of {name}", lambda n=name: recent_jobs(n), []))
    waiting: list[Waiting] = []
    for q in current.queues:
        if q.ready:
            raws = reading.attempt(f"{q.connection}:{q.queue}", lambda q=q: runtime.connection(
                q.connection).peek(q.queue, PEEK_PER_QUEUE), [])
            waiting.extend(_waiting(q.connection, q.queue, raw) for raw in raws)
    finished.sort(key=lambda j: j.finished_at, reverse=True)
    return {"finished": finished[:RECENT_LIMIT], "waiting": waiting, "problems": reading.problems}


def failed_page(queue: str | None) -> dict[str, Any]:
    reading = Reading()
    records: list[FailedJob] = reading.attempt("failed job store", lambda: failures.failed_jobs(), [])
    queues = sorted({r.queue for r in records})
    shown = [r for r in records if queue is None or r.queue == queue]
    return {"records": shown, "queues": queues, "queue": queue, "total": len(records),
            "problems": reading.problems}


def metrics_page(names: Sequence[str] | None, window_s: int) -> dict[str, Any]:
    reading = Reading()
    since = time.time() - window_s
    found = samples(names, since, reading)
    return {"rows": job_rows(found, since), "problems": reading.problems}


def job_metrics_page(names: Sequence[str] | None, job: str, window_s: int) -> dict[str, Any]:
    reading = Reading()
    since = time.time() - window_s
    found = [s for s in samples(names, since, reading) if s.job == job]
    series = per_minute(found, since)
    total = Tally()
    for _, tally in series:
        total.add(tally)
    by_queue = totals_by(found, job=False)
    return {"job": job, "points": chart_points(series), "total": total,
            "by_queue": [(queue, tally) for (queue, _), tally in by_queue.items()],
            "problems": reading.problems}
