"""Prometheus: one worker, several supervised processes (one set of numbers), a web mount."""

from __future__ import annotations

import pathlib
import re
import signal

import httpx
import pytest
import redis
from apps import jobs
from helpers import wait_for
from observing import BACKENDS, Backend, free_port, serving, use_backend

import eventbus
from eventbus import control
from eventbus.monitoring.status import workers_of

pytest.importorskip("prometheus_client")
pytestmark = pytest.mark.integration


def scrape(port: int, path: str = "/") -> str:
    try:
        return httpx.get(f"http://127.0.0.1:{port}{path}", timeout=10).text
    except httpx.HTTPError:
        return ""


def sample(text: str, name: str, **labels: str) -> float | None:
    """The value of the one series of ``name`` carrying ``labels`` (None when absent)."""
    found = []
    for line in text.splitlines():
        match = re.match(rf"^{name}\{{(.*)\}} (\S+)$", line)
        if match and all(f'{k}="{v}"' in match.group(1) for k, v in labels.items()):
            found.append(float(match.group(2)))
    assert len(found) <= 1, f"{name}{labels} has {len(found)} series"
    return found[0] if found else None


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: pathlib.Path, redis_client: redis.Redis) -> Backend:
    return use_backend(request.param, tmp_path)


def test_a_worker_serves_its_metrics(backend: Backend, start_worker: object) -> None:
    port = free_port()
    for n in range(3):
        jobs.Record(n).dispatch()
    jobs.MaxExceptions().dispatch()
    jobs.Record(9).dispatch(queue="later", delay=600)
    w = start_worker("--sleep", "0.1", "--metrics-port", str(port), env=backend.env)  # type: ignore[operator]
    conn = backend.connection
    done = dict(connection=conn, queue="default", job_name="apps.jobs.Record", status="done")
    wait_for(lambda: sample(scrape(port), "eventbus_jobs_total", **done) == 3, timeout=30)
    wait_for(lambda: sample(scrape(port), "eventbus_jobs_total", job_name="apps.jobs.MaxExceptions",
                            status="failed") == 1, timeout=30)
    text = scrape(port)
    assert sample(text, "eventbus_jobs_total", job_name="apps.jobs.MaxExceptions", status="released") == 1
    assert sample(text, "eventbus_job_runtime_seconds_count", job_name="apps.jobs.Record") == 3
    assert sample(text, "eventbus_job_wait_seconds_count", job_name="apps.jobs.MaxExceptions") == 1
    assert sample(text, "eventbus_jobs_in_progress", queue="default") == 0
    # depths are read at scrape time, cached for 5s: a read cached before the job failed for good
    # shows no failed job yet, so wait for one taken after it

    def read_at_scrape() -> bool:
        text = scrape(port)
        return (sample(text, "eventbus_queue_jobs", queue="default", state="ready") == 0
                and sample(text, "eventbus_workers", connection=conn) == 1
                and re.search(r"^eventbus_failed_jobs 1\.0$", text, re.M) is not None)

    wait_for(read_at_scrape, timeout=30)
    text = scrape(port)
    assert re.search(r"^eventbus_failed_jobs 1\.0$", text, re.M)
    assert sample(text, "eventbus_queue_jobs", queue="later", state="delayed") == 1
    assert sample(text, "eventbus_queue_jobs", queue="default", state="ready") == 0
    assert sample(text, "eventbus_workers", connection=conn) == 1
    w.signal(signal.SIGTERM)  # type: ignore[attr-defined]
    assert w.wait() == 0  # type: ignore[attr-defined]


def test_supervised_processes_give_one_set_of_numbers(use_redis: redis.Redis, start_worker: object) -> None:
    port = free_port()
    w = start_worker("--processes", "2", "--sleep", "0.05", "--metrics-port", str(port),
                     env={"EVENTBUS_MONITOR_INTERVAL": "0.3"})  # type: ignore[operator]
    for n in range(20):
        jobs.Record(n).dispatch()
    done = dict(queue="default", job_name="apps.jobs.Record", status="done")
    wait_for(lambda: sample(scrape(port), "eventbus_jobs_total", **done) == 20, timeout=60)
    text = scrape(port)
    assert 'pid="' not in text.split("eventbus_jobs_in_progress")[0]  # counters: summed, no pid
    assert sample(text, "eventbus_job_runtime_seconds_count", job_name="apps.jobs.Record") == 20
    control.restart()  # both children exit after their job; the supervisor starts fresh ones
    wait_for(lambda: sample(scrape(port), "eventbus_workers", connection="redis") == 2, timeout=30)
    jobs.Record(99).dispatch()
    wait_for(lambda: sample(scrape(port), "eventbus_jobs_total", **done) == 21, timeout=60)
    assert sample(scrape(port), "eventbus_jobs_in_progress", queue="default") == 0
    child = workers_of("redis")[0].pid
    environ = pathlib.Path(f"/proc/{child}/environ").read_bytes().split(b"\0")
    [metrics_dir] = [e.split(b"=", 1)[1].decode() for e in environ if e.startswith(b"PROMETHEUS_MULTIPROC_DIR=")]
    assert pathlib.Path(metrics_dir).is_dir()
    w.signal(signal.SIGTERM)  # type: ignore[attr-defined]
    assert w.wait() == 0  # type: ignore[attr-defined]
    assert scrape(port) == "", "the supervisor stops serving when it stops"
    assert not pathlib.Path(metrics_dir).exists(), "and removes its directory"


def test_the_exposition_mounts_in_a_starlette_app(backend: Backend) -> None:
    pytest.importorskip("starlette")
    from starlette.applications import Starlette
    from starlette.routing import Mount

    from eventbus.integrations.prometheus import asgi_app

    jobs.Record(1).dispatch()
    jobs.Record(2).dispatch()
    app = Starlette(routes=[Mount("/metrics", asgi_app())])
    with serving(app) as port:
        text = scrape(port, "/metrics/")
    assert sample(text, "eventbus_queue_jobs", connection=backend.connection, queue="default",
                  state="ready") == 2
    assert sample(text, "eventbus_workers", connection=backend.connection) == 0


def test_labels_never_come_from_a_refused_payload_and_stay_bounded() -> None:
    """A refused job counts under one name; made-up names beyond ``MAX_JOB_NAMES`` count as one."""
    from types import SimpleNamespace

    from prometheus_client import CollectorRegistry

    from eventbus.errors import UnsafePayloadError
    from eventbus.integrations.prometheus import PrometheusObserver
    from eventbus.monitoring.monitor import MAX_JOB_NAMES, OTHER_JOBS, REFUSED
    from eventbus.payload import Payload
    from eventbus.queue.base import QueueJob
    from eventbus.worker.processing import Outcome

    registry = CollectorRegistry()
    observer = PrometheusObserver(registry)
    queue = SimpleNamespace(connection_name="conn")

    def finish(name: str, refused: bool = False) -> None:
        payload = Payload(display_name=name, command_name="app.Job", command={})
        job = QueueJob(queue=queue, queue_name="q", job_id=name, raw=payload.to_json(), attempts=1)  # type: ignore[arg-type]
        if refused:
            job.refuse(UnsafePayloadError("refusing payload"))
        observer.job_started(None, job)  # type: ignore[arg-type]
        observer.job_finished(None, job, Outcome.FAIL, 0.1, None)  # type: ignore[arg-type]

    for n in range(3):
        finish(f"Forged{n}", refused=True)
    for n in range(MAX_JOB_NAMES + 50):
        finish(f"Made.Up{n}")
    labels = {s.labels["job_name"] for m in registry.collect() if m.name == "eventbus_jobs"
              for s in m.samples}
    assert REFUSED in labels and OTHER_JOBS in labels and not any(n.startswith("Forged") for n in labels)
    assert len(labels) == MAX_JOB_NAMES + 1
