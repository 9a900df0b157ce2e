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
from eventbus.batching.batch import Batch, all_batches
from eventbus.dashboard.ranges import RANGES, QueueSeries, Range, queue_series, range_of, total_series
from eventbus.errors import DeserializationError, EventBusError
from eventbus.failed.base import FailedJob
from eventbus.monitoring import failures
from eventbus.monitoring.history import Point, QueuePoint
from eventbus.monitoring.metrics import Sample, Tally, per_minute, read_samples, totals_by
from eventbus.monitoring.registry import FinishedJob
from eventbus.monitoring.status import Status, connections, recent_jobs, status
from eventbus.payload import MAX_TIMESTAMP, parse_document

#: The ranges a page offers (``?window=``), each with its length in seconds.
WINDOWS = {name: r.seconds for name, r in RANGES.items()}
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


def window_of(name: str | None) -> Range:
    return range_of(name)


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


def live_points(series: list[tuple[int, Tally]]) -> list[Point]:
    return [Point(minute, QueuePoint(tally)) for minute, tally in series]


def chart_points(points: list[Point], bucket_s: int = 60) -> dict[str, list[tuple[int, float | None]]]:
    """The series the charts draw: processed and failed per minute (a wider bucket's count
    divided by its minutes), average runtime and wait, backlog; None where nothing was kept."""
    scale = 60 / bucket_s

    def series(value: Any) -> list[tuple[int, float | None]]:
        return [(p.at, None if p.point is None else value(p.point)) for p in points]

    return {"processed": series(lambda q: q.tally.processed * scale),
            "failed": series(lambda q: q.tally.failed * scale),
            "runtime": series(lambda q: q.tally.avg_runtime_s),
            "wait": series(lambda q: q.tally.avg_wait_s),
            "backlog": series(lambda q: q.backlog)}


def total_of(points: list[Point]) -> Tally:
    total = Tally()
    for point in points:
        if point.point is not None:
            total.add(point.point.tally)
    return total


def overview(names: Sequence[str] | None, chosen: Range) -> dict[str, Any]:
    """The overview over a range: live counters up to 3 h, the metrics history beyond (per
    queue only: no busiest job classes then); the rate is always the live last minutes'."""
    reading = Reading()
    now = time.time()
    current: Status = status(names)
    reading.problems.extend(current.problems)
    live_since = now - RATE_WINDOW_S if chosen.from_history else min(now - RATE_WINDOW_S, chosen.since(now))
    found = samples(names, live_since, reading)
    live = per_minute(found, now - RATE_WINDOW_S)
    recent = [t for m, t in live if m >= now - RATE_WINDOW_S]
    if chosen.from_history:
        points, jobs = total_series(names, chosen, reading.problems), []
    else:
        points = live_points(per_minute(found, chosen.since(now)))
        jobs = job_rows(found, chosen.since(now))[:10]
    return {"status": current, "points": chart_points(points, chosen.bucket_s), "total": total_of(points),
            "history": chosen.from_history, "bucket_s": chosen.bucket_s,
            "rate_per_minute": sum(t.processed for t in recent) / max(len(recent), 1),
            "ready": sum(q.ready for q in current.queues),
            "delayed": sum(q.delayed for q in current.queues),
            "reserved": sum(q.reserved for q in current.queues),
            "max_wait": max((q.oldest_ready_age_s or 0.0 for q in current.queues), default=0.0),
            "jobs": jobs, "problems": reading.problems}


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
    pushed = doc.get("pushedAt")  # anything: -1e999 and 400-digit integers are JSON numbers too
    at = float(pushed) if isinstance(pushed, (int, float)) and not isinstance(pushed, bool) \
        and 0 < pushed < MAX_TIMESTAMP else None
    return Waiting(connection, queue, str(doc.get("uuid", "?")), str(doc.get("displayName", "?")), at)


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


def metrics_page(names: Sequence[str] | None, chosen: Range) -> dict[str, Any]:
    """Per queue over the range, and per job class (live ranges only: the history is per queue)."""
    reading = Reading()
    since = chosen.since(time.time())
    rows = [] if chosen.from_history else job_rows(samples(names, since, reading), since)
    queues = queue_series(names, chosen, reading.problems)
    return {"rows": rows, "queues": [(q, chart_points(q.points, chosen.bucket_s)) for q in queues],
            "history": chosen.from_history, "problems": reading.problems}


def queue_metrics_page(names: Sequence[str] | None, queue: str, chosen: Range) -> dict[str, Any]:
    """One queue's throughput, wait, runtime and backlog charts (a series per connection)."""
    reading = Reading()
    found: list[QueueSeries] = queue_series(names, chosen, reading.problems, queue=queue)
    return {"queue": queue, "series": [(q, chart_points(q.points, chosen.bucket_s)) for q in found],
            "history": chosen.from_history, "problems": reading.problems}


def job_metrics_page(names: Sequence[str] | None, job: str, chosen: Range) -> dict[str, Any]:
    reading = Reading()
    since = chosen.since(time.time())
    found = [s for s in samples(names, since, reading) if s.job == job]
    points = live_points(per_minute(found, since))
    by_queue = totals_by(found, job=False)
    return {"job": job, "points": chart_points(points), "total": total_of(points),
            "by_queue": [(queue, tally) for (queue, _), tally in by_queue.items()],
            "problems": reading.problems}


# -- the JSON API and the pages that share its data ------------------------------------------------

def stats(names: Sequence[str] | None) -> dict[str, Any]:
    """The overview's numbers: jobs by state over every queue, workers, failed records."""
    current = status(names)
    return {"queues": len(current.queues), "ready": sum(q.ready for q in current.queues),
            "delayed": sum(q.delayed for q in current.queues),
            "reserved": sum(q.reserved for q in current.queues),
            "workers": len(current.workers), "failed": current.failed,
            "max_wait_s": max((q.oldest_ready_age_s or 0.0 for q in current.queues), default=0.0),
            "problems": current.problems}


def failed_list(queue: str | None, limit: int) -> dict[str, Any]:
    """Failed records, newest first, without their payloads (one job's page or API shows it)."""
    reading = Reading()
    records: list[FailedJob] = reading.attempt("failed job store", lambda: failures.failed_jobs(queue=queue), [])
    return {"failed": [{"uuid": r.uuid, "name": r.display_name, "connection": r.connection, "queue": r.queue,
                        "failed_at": r.failed_at, "exception": failures.describe(r).summary}
                       for r in records[:limit]],
            "total": len(records), "problems": reading.problems}


def batches(names: Sequence[str] | None) -> dict[str, Any]:
    """Every batch of each connection, newest first per connection."""
    reading = Reading()
    found: list[Batch] = []
    for name in connections(names):
        try:
            found.extend(reading.attempt(f"batches of {name}", lambda n=name: all_batches(n), []))
        except TypeError:  # a connection whose state store keeps no batches (the null driver)
            continue
    return {"batches": found, "problems": reading.problems}
