"""The dashboard's ranges over HTTP: 15 minutes to 3 hours from the live counters, 24 hours and 7
days from the metrics history, per queue (``/api/metrics`` and the pages), on Redis and SQLite."""

from __future__ import annotations

import pathlib
import re
import time
from collections.abc import Iterator

import httpx
import pytest
import redis
from apps import jobs
from observing import Backend, serving, use_backend

from eventbus import runtime
from eventbus.monitoring.history import HistoryWriter
from eventbus.monitoring.metrics import BUCKET_S, MetricsRecorder, bucket_of

pytest.importorskip("starlette")
from eventbus.dashboard import create_app  # noqa: E402


@pytest.fixture(params=["redis", "sqlite"])
def backend(request: pytest.FixtureRequest, tmp_path: pathlib.Path, redis_client: redis.Redis) -> Backend:
    return use_backend(request.param, tmp_path)


@pytest.fixture
def client(backend: Backend) -> Iterator[httpx.Client]:
    with serving(create_app()) as port, httpx.Client(base_url=f"http://127.0.0.1:{port}") as http:
        yield http


NOW = bucket_of(time.time())
#: minutes ago -> (queue, jobs done, failed) the workers counted in that minute
SEEDED = {20 * 60: ("default", 5, 1), 20 * 60 - 1: ("default", 3, 0), 30 * 60: ("mail", 2, 0),
          30: ("default", 4, 0)}


def seed(backend: Backend) -> dict[str, int]:
    """What workers would have left: counters of a few minutes over the last day, each minute
    snapshot by a writer (the queue holding 2 ready jobs then)."""
    store, name = runtime.state(), backend.connection
    jobs.Record(1).dispatch()
    jobs.Record(2).dispatch()
    recorder = MetricsRecorder(name)
    for ago, (queue, done, failed) in SEEDED.items():
        at = NOW - ago * BUCKET_S + 5
        for _ in range(done):
            recorder.record(queue, "apps.jobs.Record", "done", 0.2, wait_s=1.0, at=at)
        for _ in range(failed):
            recorder.record(queue, "apps.jobs.Record", "failed", 0.4, wait_s=3.0, at=at)
    recorder.flush(store)
    writer = HistoryWriter(store, name, queue=runtime.connection(name))
    for ago in SEEDED:
        assert writer.take(NOW - ago * BUCKET_S)
    return {"default": sum(d + f for q, d, f in SEEDED.values() if q == "default"),
            "mail": sum(d + f for q, d, f in SEEDED.values() if q == "mail")}


def test_api_metrics_over_a_day_from_the_history(client: httpx.Client, backend: Backend) -> None:
    processed = seed(backend)
    doc = client.get("/api/metrics", params={"range": "24h", "queue": "default"}).json()
    assert (doc["range"], doc["bucket_s"], doc["source"], doc["problems"]) == ("24h", 600, "history", [])
    [series] = doc["series"]
    assert (series["connection"], series["queue"]) == (backend.connection, "default")
    assert series["total"]["processed"] == processed["default"] and series["total"]["failed"] == 1
    assert series["total"]["backlog"] == 2
    points = series["points"]
    assert 144 <= len(points) <= 146 and all(b["at"] - a["at"] == 600 for a, b in zip(points, points[1:]))
    twenty_hours_ago = [p for p in points if p["processed"]]
    # the two minutes 20 h ago share a 10-minute bucket unless a bucket starts between them
    assert sum(p["processed"] for p in twenty_hours_ago) == processed["default"]
    first = twenty_hours_ago[0]
    assert first["avg_wait_s"] is not None and 1.0 <= first["avg_wait_s"] <= 3.0
    assert sum(1 for p in points if p["processed"] is None) >= 140  # no snapshot: a gap, not a zero


def test_api_metrics_over_a_week_per_hour_and_live_per_minute(client: httpx.Client, backend: Backend) -> None:
    processed = seed(backend)
    week = client.get("/api/metrics?range=7d").json()
    assert (week["bucket_s"], week["source"]) == (3600, "history")
    totals = {s["queue"]: s["total"]["processed"] for s in week["series"]}
    assert totals == processed and 168 <= len(week["series"][0]["points"]) <= 170
    hour = client.get("/api/metrics?queue=default").json()  # the default range: 1h, live
    assert (hour["range"], hour["bucket_s"], hour["source"]) == ("1h", 60, "live")
    [series] = hour["series"]
    assert series["total"]["processed"] == 4 and series["total"]["backlog"] is None


def test_api_metrics_refuses_an_unknown_range(client: httpx.Client) -> None:
    answer = client.get("/api/metrics?range=2d")
    assert answer.status_code == 400
    assert answer.json() == {"error": "range must be one of: 15m, 1h, 3h, 24h, 7d"}
    assert client.get("/api/metrics", params={"queue": "q" * 300}).status_code == 400


def test_the_pages_offer_the_long_ranges(client: httpx.Client, backend: Backend) -> None:
    seed(backend)
    overview = client.get("/?window=7d").text
    assert 'aria-label="Backlog"' in overview and "data-live" not in overview  # by the hour: no live refresh
    assert re.search(r'href="\?window=24h"', overview) and re.search(r'href="\?window=7d"', overview)
    assert "data-live" in client.get("/?window=15m").text

    metrics = client.get("/metrics?window=24h").text
    row = f'data-queue="{backend.connection}:default"'
    assert row in metrics and "Per job class figures are kept for 3 hours" in metrics

    queue = client.get("/metrics?queue=default&window=7d").text
    assert "<h1>Queue default</h1>" in queue
    assert queue.count('<svg class="chart"') == 4  # throughput, wait, runtime, backlog
    assert "Processed per minute on default" in queue and "Average wait on default" in queue

    job = client.get("/metrics?job=apps.jobs.Record&window=7d").text  # per job: live ranges only
    assert 'href="?job=apps.jobs.Record&amp;window=7d"' not in job and "window=3h" in job
