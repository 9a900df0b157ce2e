"""The dashboard in a real headless Chromium (Debian's, driven by Playwright), with a real worker
subprocess: pages load without console errors, counts move while the worker drains the queue,
Pause stops a queue and Resume starts it again, Retry makes a failed job run."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from apps import jobs
from apps.observed import Broken
from helpers import run_worker, traces, wait_for
from observing import BACKENDS, Backend, serving, use_backend

import eventbus
from eventbus import runtime

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-default-apps",
        "--disable-extensions"]

pytest.importorskip("starlette")
playwright_api = pytest.importorskip("playwright.sync_api")
if not os.path.exists(CHROMIUM):
    pytest.skip(f"no Chromium at {CHROMIUM}", allow_module_level=True)

from eventbus.dashboard import create_app  # noqa: E402

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield chromium
        chromium.close()


class Page:
    """A browser tab on the dashboard that fails the test on any console error."""

    def __init__(self, browser: Any, base: str) -> None:
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.tab = self.context.new_page()
        self.tab.set_default_timeout(20_000)
        self.base = base
        self.errors: list[str] = []
        self.tab.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.tab.on("pageerror", lambda e: self.errors.append(str(e)))

    def open(self, path: str) -> Any:
        response = self.tab.goto(self.base + path)
        assert response is not None and response.status == 200, path
        return self.tab

    def text(self, selector: str) -> str:
        return str(self.tab.locator(selector).inner_text()).strip()

    def wait_text(self, selector: str, expected: str) -> None:
        """Until the live refresh shows ``expected`` (the page is not reloaded)."""
        self.tab.wait_for_function("([sel, want]) => { const e = document.querySelector(sel);"
                                   " return e !== null && e.textContent.trim() === want; }",
                                   arg=[selector, expected])


@pytest.fixture
def backend(request: pytest.FixtureRequest, tmp_path: pathlib.Path, redis_client: redis.Redis) -> Backend:
    return use_backend(getattr(request, "param", "redis"), tmp_path)


@pytest.fixture
def page(browser: Any, backend: Backend) -> Iterator[Page]:
    with serving(create_app(refresh_s=0.4)) as port:
        tab = Page(browser, f"http://127.0.0.1:{port}")
        yield tab
        tab.context.close()
    assert tab.errors == [], tab.errors


def test_every_page_loads_without_console_errors(page: Page) -> None:
    jobs.Record(1).dispatch()
    uuid = fail(Broken(1))
    for path, heading in (("/", "Overview"), ("/queues", "Queues"), ("/jobs", "Recent jobs"),
                          ("/failed", "Failed jobs"), (f"/failed/{uuid}", "apps.observed.Broken"),
                          ("/workers", "Workers"), ("/supervisors", "Supervisors"),
                          ("/metrics", "Metrics per queue and job class"),
                          ("/metrics?job=apps.jobs.Record", "apps.jobs.Record")):
        tab = page.open(path)
        assert page.text("h1") == heading, path
        assert tab.evaluate("document.querySelectorAll('script[src^=\"http\"], link[href^=\"http\"]').length") == 0
    page.open("/")
    page.tab.wait_for_selector("#live[data-updated]")  # the live refresh ran, and raised nothing


def test_a_running_supervisor_seen_paused_and_continued_from_the_browser(
        page: Page, backend: Backend, worker_env: dict[str, str], tmp_path: pathlib.Path) -> None:
    """``eventbus supervise`` runs for real; the page shows it, Pause pauses its workers."""
    master = subprocess.Popen([sys.executable, "-m", "eventbus", "supervise", "--app", "apps.supervised", "-q"],
                              env={**worker_env, **backend.env, "RAN": str(tmp_path / "ran.log")},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        page.open("/supervisors")
        row = 'tr[data-supervisor="load"]'
        page.wait_text(f'{row} [data-field="processes"]', "load=1")
        assert page.text(f"{row} .badge") == "running"
        api = page.context.request.get(page.base + "/api/supervisors").json()
        assert [(s["name"], s["processes"], s["pid"]) for s in api["supervisors"]] == [("load", {"load": 1}, master.pid)]

        page.tab.click(f"{row} button.pause")
        assert page.text("#notice") == "Paused supervisor load: its workers finish their job and take no other."
        page.wait_text(f"{row} .badge", "paused")
        wait_for(lambda: [w.status for w in eventbus.monitoring.status.workers_of(backend.connection)] == ["paused"],
                 timeout=15)

        page.tab.click(f"{row} button.continue")
        assert page.text("#notice") == "Continued supervisor load."
        page.wait_text(f"{row} .badge", "running")
        wait_for(lambda: [w.status for w in eventbus.monitoring.status.workers_of(backend.connection)] == ["idle"],
                 timeout=15)
    finally:
        master.terminate()
        assert master.wait(30) == 0


def fail(job: eventbus.Job) -> str:
    """Put ``job`` in the failed store the way a worker does."""
    from eventbus.failed.base import describe_exception

    payload = eventbus.dispatching.make_payload(job)
    try:
        raise RuntimeError("it broke")
    except RuntimeError as exc:
        runtime.failed_store().log(runtime.settings().default, "default", payload.to_json(),
                                   describe_exception(exc), payload.uuid)
    return payload.uuid


@pytest.mark.parametrize("backend", BACKENDS, indirect=True)
def test_a_worker_at_work_seen_and_steered_from_the_browser(page: Page, backend: Backend,
                                                            redis_client: redis.Redis,
                                                            start_worker: Any) -> None:
    # Given 30 jobs waiting and the overview open
    for n in range(30):
        jobs.Record(n, sleep=0.03).dispatch()
    tab = page.open("/")
    tab.evaluate("window.notReloaded = true")
    assert page.text("#stat-ready") == "30" and page.text("#stat-processed") == "0"

    # When a worker drains them, the counts move on the open page
    worker = start_worker("--sleep", "0.1", "--app", "apps.observed", env=backend.env)
    page.wait_text("#stat-workers", "1")
    page.wait_text("#stat-ready", "0")
    page.wait_text("#stat-processed", "30")
    assert tab.evaluate("window.notReloaded") is True
    assert len(traces(redis_client, "ran")) == 30

    # Pause stops the queue ...
    page.open("/queues")
    row = f'tr[data-queue="{backend.connection}:default"]'
    page.tab.click(f"{row} button.pause")
    assert "Paused" in page.text("#notice")
    page.wait_text(f"{row} .badge", "paused")
    wait_for(lambda: [w.status for w in eventbus.monitoring.status.workers_of(backend.connection)] == ["paused"],
             timeout=15)
    jobs.Record(100).dispatch()
    page.wait_text(f'{row} [data-field="ready"]', "1")
    page.tab.wait_for_timeout(1500)
    assert page.text(f'{row} [data-field="ready"]') == "1" and "100" not in traces(redis_client, "ran")

    # ... and Resume starts it again
    page.tab.click(f"{row} button.resume")
    page.wait_text(f'{row} [data-field="ready"]', "0")
    wait_for(lambda: "100" in traces(redis_client, "ran"), timeout=15)

    # A failed job's Retry button makes it run
    redis_client.set("trace:broken", 1)
    uuid = Broken(7).dispatch()
    wait_for(lambda: runtime.failed_store().find(uuid) is not None, timeout=20)
    redis_client.delete("trace:broken")
    page.open("/failed")
    assert "job 7 is broken" in page.text(f'tr[data-uuid="{uuid}"] .exception')
    page.tab.click(f'tr[data-uuid="{uuid}"] button.retry')
    assert page.text("#notice") == "Pushed 1 failed job(s) back onto their queues."
    wait_for(lambda: "broken:7" in traces(redis_client, "ran"), timeout=20)
    assert runtime.failed_store().find(uuid) is None
    page.open("/failed")
    assert page.text(".empty") == "No failed jobs."
    worker.kill()


def test_bulk_retry_and_forget_from_the_failed_page(page: Page) -> None:
    uuids = [fail(Broken(n)) for n in range(3)]
    page.open("/failed")
    page.tab.check(f'input[name="uuid"][value="{uuids[0]}"]')
    page.tab.check(f'input[name="uuid"][value="{uuids[1]}"]')
    page.tab.click("button.retry-selected")
    assert page.text("#notice") == "Pushed 2 failed job(s) back onto their queues."
    assert eventbus.connection().size() == 2
    page.tab.click("input[data-select-all]")
    assert page.tab.is_checked(f'input[name="uuid"][value="{uuids[2]}"]')
    page.tab.click(f'tr[data-uuid="{uuids[2]}"] button.forget')
    assert page.text("#notice") == "Deleted 1 failed job record(s)."
    assert runtime.failed_store().all() == []


def test_the_failed_job_page_shows_traceback_and_payload(page: Page) -> None:
    uuid = fail(Broken(5))
    page.open("/failed")
    page.tab.click(f'tr[data-uuid="{uuid}"] a[href^="/failed/"]')
    assert page.text("#exception") == "RuntimeError: it broke"
    assert "Traceback (most recent call last)" in page.text("#traceback")
    assert re.search(r'"n": 5', page.text("#payload"))
    page.tab.click("button.retry")
    assert page.text("#notice").startswith("Pushed 1 failed job(s)")


def test_a_job_page_cancels_and_the_batches_page_retries_failed(page: Page, backend: Backend,
                                                                redis_client: redis.Redis,
                                                                start_worker: Any) -> None:
    # Given a batch whose first job a worker failed, and a job waiting
    redis_client.set("trace:broken", 1)
    batch = eventbus.batch([Broken(1), jobs.Record(2)]).name("nightly import").allow_failures().dispatch()
    assert run_worker(start_worker, "--stop-when-empty", "--sleep", "0", "--app", "apps.observed",
                      env=backend.env)[0] == 0
    redis_client.delete("trace:broken")
    [failed] = batch.fresh().failed_job_ids
    waiting = jobs.Record(3).dispatch()

    # The waiting job's page, reached from the jobs list, cancels it
    page.open("/jobs")
    page.tab.click(f'tr[data-uuid="{waiting}"] a')
    assert page.text("h1") == "apps.jobs.Record" and page.text("#job-status") == "pending"
    page.tab.click("button.cancel")
    assert page.text("#notice") == "Cancelled the job: it will not run."
    assert eventbus.connection().size() == 0

    # The batches page shows the batch, links its failed job, and Retry failed runs it again
    page.open("/batches")
    row = f'tr[data-batch="{batch.id}"]'
    assert "nightly import" in page.text(row) and page.text(f'{row} [data-field="failed"]') == "1"
    page.tab.click(f'{row} .failed-ids a')
    assert page.text("#job-status") == "failed" and "job 1 is broken" in page.text("#exception")
    page.open("/batches")
    page.tab.click(f"{row} button.retry-failed")
    assert page.text("#notice") == "Pushed 1 failed job(s) of the batch back onto their queues."
    assert run_worker(start_worker, "--stop-when-empty", "--sleep", "0", "--app", "apps.observed",
                      env=backend.env)[0] == 0
    assert "broken:1" in traces(redis_client, "ran") and "3" not in traces(redis_client, "ran")
    page.open("/batches")
    assert page.text(f'{row} [data-field="pending"]') == "0" and page.tab.get_attribute(f"{row} progress", "value") == "100"
