"""The jobs page's filters and the monitored tags pages in a real headless Chromium, over what a
real worker did: the tags page counts a watched tag's jobs, its page lists them, and the jobs
page finds jobs by tag and status from its form and from the tag links."""

from __future__ import annotations

import os
import pathlib
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from apps import tagged
from helpers import run_worker, wait_for
from observing import BACKENDS, Backend, serving, use_backend

from eventbus.monitoring import monitored_tags

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


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: pathlib.Path, redis_client: redis.Redis) -> Backend:
    return use_backend(request.param, tmp_path)


@pytest.fixture
def tab(browser: Any, backend: Backend) -> Iterator[Any]:
    """A tab on a served dashboard; the test fails on any console error."""
    errors: list[str] = []
    with serving(create_app(refresh_s=0.4)) as port:
        context = browser.new_context(viewport={"width": 1280, "height": 900}, base_url=f"http://127.0.0.1:{port}")
        page = context.new_page()
        page.set_default_timeout(20_000)
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        yield page
        context.close()
    assert errors == [], errors


def rows(page: Any, table: str) -> list[str]:
    return [str(u) for u in page.locator(f"table.{table} tbody tr").evaluate_all(
        "rows => rows.map(r => r.getAttribute('data-uuid') || r.getAttribute('data-tag'))")]


def test_tags_pages_and_job_filters_in_the_browser(tab: Any, backend: Backend, start_worker: Any) -> None:
    # Given a watched tag and a worker that completed one of its jobs and failed another
    monitored_tags.watch("customer:ada")
    shipped = tagged.Order(1, "ada").dispatch()
    other = tagged.Order(2, "bob").dispatch()
    broken = tagged.Order(3, "ada", fail=True).dispatch()
    later = tagged.Order(4, "ada").dispatch(delay=3600)
    code, out, err = run_worker(start_worker, "--app", "apps.tagged", "--stop-when-empty", "--sleep", "0",
                                env={**backend.env, "TEST_DB_URL": backend.env.get("TEST_DB_URL", "")})
    assert code == 0, (out, err)

    # The tags page lists it with its count, under the Tags link of the navigation
    tab.goto("/tags")
    assert tab.locator("h1").inner_text() == "Monitored tags"
    assert tab.locator("nav a.active").inner_text() == "Tags"
    assert rows(tab, "tags") == ["customer:ada"]
    assert tab.locator("table.tags tbody td.num").inner_text() == "2"

    # Its page lists its recorded jobs, newest first, the failure linked to its job page
    tab.locator("table.tags a").click()
    tab.wait_for_url("**/tags/customer%3Aada")
    assert rows(tab, "tagged") == [broken, shipped]
    assert "RuntimeError: order 3 cannot ship" in tab.locator("table.tagged").inner_text()

    # A completed job's page: from the recent-jobs store, saying that its payload is not kept
    tab.locator(f"table.tagged tr[data-uuid='{shipped}'] a").click()
    tab.wait_for_url(f"**/jobs/{shipped}")
    assert tab.locator("h1").inner_text() == "apps.tagged.Order"
    assert tab.locator("#job-status").inner_text() == "completed"
    facts = tab.locator("dl.facts").inner_text()
    assert "order:1" in facts and "customer:ada" in facts and "Started at" in facts
    assert tab.locator("#finished-at").inner_text() and tab.locator("#runtime").inner_text().endswith("s")
    assert "Not kept" in tab.locator("#payload-not-kept").inner_text()
    assert tab.locator("#payload").count() == 0 and tab.locator("button.retry, button.cancel").count() == 0
    api = tab.request.get(f"/api/jobs/{shipped}").json()
    assert (api["status"], api["payload_kept"], api["attempts"], api["tags"]) == (
        "completed", False, 1, ["order:1", "customer:ada"])
    tab.go_back()
    tab.wait_for_url("**/tags/customer%3Aada")

    # The jobs page filters from its form ...
    tab.goto("/jobs")
    tab.fill("input[name=tag]", "order:1")
    tab.select_option("select[name=status]", "completed")
    tab.click("form.filters button[type=submit]")
    tab.wait_for_url("**/jobs?tag=order%3A1&class=&queue=&status=completed")
    assert rows(tab, "listing") == [shipped]

    # ... and from a tag of a listed job: the delayed job is among the pending ones
    tab.locator("table.listing a.tag", has_text="customer:ada").click()
    tab.wait_for_url("**/jobs?tag=customer%3Aada")
    wait_for(lambda: rows(tab, "listing") == [later, shipped, broken], timeout=30)  # the failed store's shard scan
    assert other not in rows(tab, "listing")
    assert tab.locator("table.listing tbody tr", has=tab.locator("text=delayed")).count() == 1
