"""Every dashboard page at a phone's width (390x844) in real headless Chromium: the navigation's
items never overlap one another, and the page never scrolls sideways (a wide table scrolls
inside itself). The pages are taken from the app's own routes, so a page added later is
checked too, with data a real worker left: recent, failed and waiting jobs, a batch, a live
worker, and a day of metrics history."""

from __future__ import annotations

import pathlib
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from apps import jobs
from apps.observed import Broken
from helpers import run_worker, wait_for
from observing import Backend, serving, use_backend
from test_browser import ARGS, CHROMIUM, playwright_api

import eventbus
from eventbus import runtime
from eventbus.monitoring.history import HistoryWriter
from eventbus.monitoring.metrics import BUCKET_S, MetricsRecorder, bucket_of
from eventbus.monitoring.status import workers_of

from eventbus.dashboard import create_app  # noqa: E402  (test_browser skipped the module without it)

pytestmark = pytest.mark.integration

PHONE = {"width": 390, "height": 844}
#: Pages beyond the plain routes: the long ranges, one queue's and one job class's charts.
EXTRA_PAGES = ["/?window=7d", "/metrics?window=24h", "/metrics?queue=default&window=7d",
               "/metrics?job=apps.observed.Broken"]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield chromium
        chromium.close()


def dashboard_pages(app: Any, samples: dict[str, str]) -> list[str]:
    """Every GET page of the app (not the JSON API), a path parameter filled from ``samples``
    by the path's first part (``/jobs/{uuid}``: ``samples["jobs"]``; others ``default``)."""
    pages = []
    for route in app.app.routes:
        methods = getattr(route, "methods", None) or set()
        path = getattr(route, "path", "")
        if "GET" not in methods or path.startswith(("/api", "/static")) or path.endswith(".json"):
            continue
        pages.append(re.sub(r"\{[^}]+\}", samples.get(path.strip("/").split("/")[0], "default"), path))
    return pages


def seed_history(connection: str) -> None:
    recorder, now = MetricsRecorder(connection), bucket_of(time.time())
    for ago in (600, 300, 90, 10):
        recorder.record("default", "apps.observed.Broken", "done", 0.1, wait_s=1.0, at=now - ago * BUCKET_S)
    recorder.flush(runtime.state(connection))
    writer = HistoryWriter(runtime.state(connection), connection, queue=runtime.connection(connection))
    for ago in (600, 300, 90, 10):
        writer.take(now - ago * BUCKET_S)


@pytest.fixture
def backend(tmp_path: pathlib.Path, redis_client: redis.Redis) -> Backend:
    return use_backend("redis", tmp_path)


def test_every_page_fits_a_phone(browser: Any, backend: Backend, redis_client: redis.Redis,
                                 start_worker: Any) -> None:
    # Given what a worker leaves: finished and failed jobs, a batch with a failure ...
    redis_client.set("trace:broken", 1)
    eventbus.batch([Broken(1), jobs.Record(2)]).name("nightly import of the customer records") \
        .allow_failures().dispatch()
    for n in range(3):
        jobs.Record(n).dispatch()
    assert run_worker(start_worker, "--stop-when-empty", "--sleep", "0", "--app", "apps.observed",
                      env=backend.env)[0] == 0
    [failed] = runtime.failed_store().all()
    # ... a job waiting, a worker idling on another queue, and a day of metrics history
    waiting = jobs.Record(9).dispatch()
    start_worker("--queue", "elsewhere", "--sleep", "1", "--app", "apps.observed", env=backend.env)
    wait_for(lambda: len(workers_of(backend.connection)) == 1, timeout=30)
    seed_history(backend.connection)

    app = create_app(refresh_s=0)
    pages = dashboard_pages(app, {"jobs": str(waiting), "failed": failed.uuid}) + EXTRA_PAGES
    assert {"/", "/queues", "/jobs", f"/jobs/{waiting}", "/failed", f"/failed/{failed.uuid}", "/batches",
            "/workers", "/metrics"} <= set(pages)
    with serving(app) as port:
        context = browser.new_context(viewport=PHONE, device_scale_factor=1, is_mobile=True, has_touch=True)
        tab = context.new_page()
        tab.set_default_timeout(20_000)
        try:
            problems = [problem for path in pages
                        for problem in check(tab, f"http://127.0.0.1:{port}{path}", path)]
        finally:
            context.close()
    assert problems == []


def check(tab: Any, url: str, path: str) -> list[str]:
    """What is wrong with the page at a phone's width (nothing: an empty list)."""
    response = tab.goto(url)
    assert response is not None and response.status < 400, (path, response and response.status)
    boxes = tab.evaluate("""() => [...document.querySelectorAll('header.top .brand, header.top nav a')]
        .map(e => { const r = e.getBoundingClientRect();
                    return {name: e.textContent.trim(), x: r.left, y: r.top, w: r.width, h: r.height}; })""")
    assert len(boxes) >= 8, boxes  # the brand and every link, rendered
    problems = [f"{path}: nav items {a['name']!r} and {b['name']!r} overlap"
                for i, a in enumerate(boxes) for b in boxes[i + 1:] if overlap(a, b)]
    problems += [f"{path}: nav item {box['name']!r} reaches past the screen ({box['x'] + box['w']:.0f}px)"
                 for box in boxes if box["x"] < 0 or box["x"] + box["w"] > PHONE["width"]]
    # against the phone's width, not innerWidth: a mobile browser zooms out to show a wide page
    widths = tab.evaluate("() => [document.documentElement.scrollWidth, document.body.scrollWidth, "
                          "window.innerWidth]")
    if max(widths) > PHONE["width"]:
        wide = tab.evaluate("""() => [...document.querySelectorAll('body *')]
            .filter(e => e.getBoundingClientRect().right > 390.5)
            .filter(e => !e.closest('table') || e.tagName === 'TABLE')
            .slice(0, 3).map(e => e.tagName + '.' + e.className)""")
        problems.append(f"{path}: the page scrolls sideways ({widths}): {wide}")
    return problems


def overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return (min(a["x"] + a["w"], b["x"] + b["w"]) - max(a["x"], b["x"]) > 0.5
            and min(a["y"] + a["h"], b["y"] + b["h"]) - max(a["y"], b["y"]) > 0.5)
