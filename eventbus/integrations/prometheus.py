"""Prometheus metrics (``pip install 'eventbus[metrics]'``), right with several processes.

Workers count, per connection, queue and job class (label ``job_name``, the display name; never
a uuid): ``eventbus_jobs_total{status=done|failed|released}``, the histograms
``eventbus_job_runtime_seconds`` (every attempt) and ``eventbus_job_wait_seconds`` (push to first
start), and the gauge ``eventbus_jobs_in_progress``. At scrape time the exporting process adds
``eventbus_queue_jobs{state=ready|delayed|reserved}``, ``eventbus_queue_oldest_ready_age_seconds``,
``eventbus_workers`` and ``eventbus_failed_jobs``, read from the queues (cached a few seconds).

- ``eventbus work --metrics-port 9191``: the worker serves its own registry.
- ``eventbus work --processes N --metrics-port 9191``: the supervisor owns a fresh directory for
  prometheus_client's multiprocess mode, gives it to each child in ``PROMETHEUS_MULTIPROC_DIR``
  (set before the child starts, as that mode requires), serves the merged numbers (counters of
  children that were replaced still count, so they stay monotonic), forgets the live gauge of
  each child that exits, and removes the directory when it stops.
- In a web app: ``Mount("/metrics", eventbus.integrations.prometheus.asgi_app())`` (queue depths
  and workers; with ``PROMETHEUS_MULTIPROC_DIR`` set, the process's multiprocess numbers too).

Every server binds to 127.0.0.1 unless told otherwise.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from eventbus import runtime
from eventbus.errors import ConfigurationError, EventBusError
from eventbus.monitoring.monitor import JobNames, status_of
from eventbus.monitoring.observer import ObservedWorker, WorkerObserver
from eventbus.monitoring.status import connections as watched_connections
from eventbus.monitoring.status import failed_count, queue_statuses, workers_of
from eventbus.payload import pushed_at_of

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry
    from prometheus_client.metrics_core import Metric

    from eventbus.queue.base import QueueJob
    from eventbus.worker.processing import Outcome

log = logging.getLogger(__name__)

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
#: Set by the supervisor for its children: record into the multiprocess directory.
DIR_ENV = "EVENTBUS_METRICS_DIR"
RUNTIME_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
                   120.0, 300.0, 600.0)
WAIT_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0)
SCRAPE_CACHE_S = 5.0


def require() -> None:
    """Raise ImportError when prometheus_client is missing (the CLI turns it into advice)."""
    import prometheus_client  # noqa: F401


class JobMetrics:
    """The worker-side metrics. With ``registry=None`` they are registered nowhere (a supervised
    child: its values go to the multiprocess directory and the supervisor merges them)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        from prometheus_client import Counter, Gauge, Histogram

        labels = ("connection", "queue", "job_name")
        self.jobs = Counter("eventbus_jobs", "Job attempts by outcome.", (*labels, "status"),
                            registry=registry)
        self.runtime = Histogram("eventbus_job_runtime_seconds", "Runtime of each attempt.", labels,
                                 buckets=RUNTIME_BUCKETS, registry=registry)
        self.wait = Histogram("eventbus_job_wait_seconds", "Time from push to the first start.",
                              labels, buckets=WAIT_BUCKETS, registry=registry)
        self.in_progress = Gauge("eventbus_jobs_in_progress", "Jobs running now.",
                                 ("connection", "queue"), multiprocess_mode="livesum",
                                 registry=registry)


class PrometheusObserver(WorkerObserver):
    """Counts each attempt into :class:`JobMetrics` (in memory: no I/O on the job's path)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.metrics = JobMetrics(registry)
        self.names = JobNames()

    def job_started(self, worker: ObservedWorker, job: QueueJob) -> None:
        self.metrics.in_progress.labels(job.connection_name, job.queue_name).inc()

    def job_finished(self, worker: ObservedWorker, job: QueueJob, outcome: Outcome, runtime_s: float,
                     exc: BaseException | None) -> None:
        m, name = self.metrics, self.names.label(job)
        labels = (job.connection_name, job.queue_name, name)
        m.in_progress.labels(job.connection_name, job.queue_name).dec()
        m.jobs.labels(*labels, status_of(outcome)).inc()
        m.runtime.labels(*labels).observe(runtime_s)
        pushed = pushed_at_of(job.raw) if job.attempts <= 1 else None
        if pushed:
            m.wait.labels(*labels).observe(max(time.time() - runtime_s - pushed, 0.0))


class QueueCollector:
    """Queue depths, oldest ready age, workers and failed jobs, read when scraped (cached)."""

    def __init__(self, connections: Sequence[str] | None = None, cache_s: float = SCRAPE_CACHE_S) -> None:
        self.connections = list(connections or [])
        self.cache_s = cache_s
        self._cached: tuple[float, list[Metric]] | None = None
        self._lock = threading.Lock()

    def collect(self) -> Iterator[Metric]:
        with self._lock:
            if self._cached is None or time.monotonic() - self._cached[0] >= self.cache_s:
                self._cached = (time.monotonic(), self._read())
            return iter(list(self._cached[1]))

    def _read(self) -> list[Metric]:
        from prometheus_client.core import GaugeMetricFamily

        depth = GaugeMetricFamily("eventbus_queue_jobs", "Jobs in a queue by state.",
                                  labels=("connection", "queue", "state"))
        oldest = GaugeMetricFamily("eventbus_queue_oldest_ready_age_seconds",
                                   "Age of the oldest ready job.", labels=("connection", "queue"))
        workers = GaugeMetricFamily("eventbus_workers", "Running workers.", labels=("connection",))
        for name in watched_connections(self.connections):
            try:
                queues, running = queue_statuses(name), workers_of(name)
            except EventBusError as exc:
                log.warning("metrics: cannot read connection %r: %s", name, exc)
                continue
            for q in queues:
                for state in ("ready", "delayed", "reserved"):
                    depth.add_metric((name, q.queue, state), getattr(q, state))
                oldest.add_metric((name, q.queue), q.oldest_ready_age_s or 0.0)
            workers.add_metric((name,), len(running))
        found: list[Metric] = [depth, oldest, workers]
        try:
            failed = GaugeMetricFamily("eventbus_failed_jobs", "Jobs in the failed job store.")
            failed.add_metric((), failed_count())
            found.append(failed)
        except EventBusError as exc:
            log.warning("metrics: cannot read the failed job store: %s", exc)
        return found


def _registry(connections: Iterable[str] | None, *, multiprocess_dir: str | None) -> CollectorRegistry:
    from prometheus_client import CollectorRegistry
    from prometheus_client.multiprocess import MultiProcessCollector

    registry = CollectorRegistry()
    if multiprocess_dir:
        MultiProcessCollector(registry, path=multiprocess_dir)  # type: ignore[no-untyped-call]
    registry.register(QueueCollector(list(connections or [])))
    return registry


def worker_registry(connection: str | None = None) -> CollectorRegistry:
    """A private registry for one worker process (never the global one)."""
    return _registry([connection or runtime.settings().default], multiprocess_dir=None)


def serve(registry: CollectorRegistry, port: int, host: str = "127.0.0.1") -> Any:
    """Serve ``registry`` on ``host:port`` in a thread; returns the server (``shutdown()``)."""
    from prometheus_client import start_http_server

    try:
        server, _ = start_http_server(port, addr=host, registry=registry)
    except OSError as exc:
        raise ConfigurationError(f"cannot serve metrics on {host}:{port}: {exc.strerror or exc}") from exc
    return server


def asgi_app(connections: Sequence[str] | None = None) -> Any:
    """An ASGI app serving the metrics, to mount in a Starlette/FastAPI app."""
    from prometheus_client import make_asgi_app

    return make_asgi_app(_registry(connections, multiprocess_dir=os.environ.get(MULTIPROC_ENV)))


class MultiprocessExporter:
    """The supervisor's side of multiprocess mode: directory, children's env, server, cleanup."""

    def __init__(self, port: int, host: str = "127.0.0.1", connection: str | None = None) -> None:
        self.dir = tempfile.mkdtemp(prefix="eventbus-metrics-")
        self.child_env = {MULTIPROC_ENV: self.dir, DIR_ENV: self.dir}
        self.registry = _registry([connection or runtime.settings().default], multiprocess_dir=self.dir)
        self.server = serve(self.registry, port, host)

    def child_exited(self, pid: int) -> None:
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid, self.dir)  # type: ignore[no-untyped-call]
        files = len(os.listdir(self.dir))
        if files > 1000:
            log.warning("metrics: %d files in %s (one set per worker process ever started); "
                        "scrapes slow down as they grow: restart the supervisor now and then", files,
                        self.dir)

    def close(self) -> None:
        self.server.shutdown()
        shutil.rmtree(self.dir, ignore_errors=True)
