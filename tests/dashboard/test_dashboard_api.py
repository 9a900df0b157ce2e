"""The dashboard's JSON API, one job's page (and Cancel), the batches page (and Retry failed), and
``eventbus job show``, over HTTP against jobs a real worker subprocess ran and failed."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest
import redis
from apps import jobs
from apps.observed import Broken
from click.testing import CliRunner
from helpers import run_worker, traces, wait_for
from observing import Backend, serving, use_backend
from test_dashboard_http import csrf_of, post

import eventbus
from eventbus import runtime
from eventbus.cli import main

pytest.importorskip("starlette")
from eventbus.dashboard import create_app  # noqa: E402

#: Real Redis and SQLite (PostgreSQL runs the same driver code as SQLite here).
API_BACKENDS = ["redis", "sqlite"]


@pytest.fixture(params=API_BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: pathlib.Path, redis_client: redis.Redis) -> Backend:
    return use_backend(request.param, tmp_path)


@pytest.fixture
def client(backend: Backend) -> Iterator[httpx.Client]:
    with serving(create_app()) as port, httpx.Client(base_url=f"http://127.0.0.1:{port}") as http:
        yield http


def work(start_worker: object, backend: Backend) -> None:
    """Run a worker subprocess (the ``apps.observed`` jobs) until the queue is empty."""
    code, out, err = run_worker(start_worker, "--stop-when-empty", "--sleep", "0", "--app", "apps.observed",
                                env=backend.env)
    assert code == 0, (out, err)


def fail_for_real(start_worker: object, backend: Backend, redis_client: redis.Redis, n: int = 1) -> str:
    """A Broken job a worker subprocess ran and failed."""
    redis_client.set("trace:broken", 1)
    uuid = Broken(n).dispatch()
    assert uuid
    work(start_worker, backend)
    redis_client.delete("trace:broken")
    assert runtime.failed_store().find(uuid) is not None
    return uuid


def test_the_json_api_answers_every_endpoint(backend: Backend, client: httpx.Client, start_worker: object,
                                             redis_client: redis.Redis) -> None:
    # Given a job a worker failed, one pending and one delayed
    failed = fail_for_real(start_worker, backend, redis_client)
    pending = jobs.Record(1).dispatch()
    delayed = jobs.Record(2).dispatch(delay=600)
    conn = backend.connection

    stats = client.get("/api/stats")
    assert stats.status_code == 200 and stats.headers["content-type"] == "application/json"
    assert {k: stats.json()[k] for k in ("ready", "delayed", "reserved", "workers", "failed", "problems")} == {
        "ready": 1, "delayed": 1, "reserved": 0, "workers": 0, "failed": 1, "problems": []}
    [queue] = client.get("/api/queues").json()["queues"]
    assert (queue["connection"], queue["queue"], queue["ready"], queue["delayed"]) == (conn, "default", 1, 1)
    assert client.get("/api/workers").json() == {"workers": [], "problems": []}

    listed = client.get("/api/jobs").json()  # every status: pending (delayed ones too), ..., failed
    assert [(j["uuid"], j["name"], j["status"], j["connection"], j["queue"]) for j in listed["jobs"]] == [
        (pending, "apps.jobs.Record", "pending", conn, "default"),
        (delayed, "apps.jobs.Record", "delayed", conn, "default"),
        (failed, "apps.observed.Broken", "failed", conn, "default")]
    assert isinstance(listed["jobs"][0]["pushed_at"], float) and listed["jobs"][0]["finished_at"] is None
    assert [j["uuid"] for j in client.get("/api/jobs?status=pending").json()["jobs"]] == [pending, delayed]
    assert [j["uuid"] for j in client.get("/api/jobs?status=failed&class=Broken").json()["jobs"]] == [failed]
    assert client.get("/api/jobs?tag=nothing").json() == {"jobs": [], "problems": []}
    assert client.get("/api/jobs?queue=default&status=pending&limit=1").json()["jobs"][0]["uuid"] == pending
    assert client.get("/api/jobs?queue=mail").json() == {"jobs": [], "problems": []}
    assert [(j["uuid"], j["status"]) for j in client.get("/api/jobs?status=delayed").json()["jobs"]] == [
        (delayed, "delayed")]
    assert client.get("/api/jobs?status=reserved").json() == {"jobs": [], "problems": []}

    failures = client.get("/api/failed").json()
    assert failures["total"] == 1 and [f["uuid"] for f in failures["failed"]] == [failed]
    assert failures["failed"][0]["exception"] == "RuntimeError: job 1 is broken until someone fixes it"
    assert "payload" not in failures["failed"][0]
    assert client.get("/api/failed?queue=mail&limit=5").json()["failed"] == []

    one = client.get(f"/api/jobs/{failed}").json()
    assert (one["status"], one["display_name"], one["connection"], one["queue"]) == (
        "failed", "apps.observed.Broken", conn, "default")
    assert one["exception"].startswith("RuntimeError: job 1 is broken") and "Traceback" in one["traceback"]
    assert one["cancellable"] is False and one["failed_at"] > 0 and json.loads(one["payload"])["uuid"] == failed
    assert client.get(f"/api/jobs/{pending}").json()["status"] == "pending"
    assert client.get(f"/api/jobs/{pending}").json()["cancellable"] is True
    assert client.get(f"/api/jobs/{delayed}").json()["status"] == "delayed"
    missing = client.get("/api/jobs/no-such-job")
    assert missing.status_code == 404 and missing.json() == {"error": "no queued, failed or recently completed job with uuid no-such-job"}
    assert client.get("/api/batches").json() == {"batches": [], "problems": []}


def test_the_api_lists_a_worker_at_work(backend: Backend, client: httpx.Client, start_worker: object,
                                        redis_client: redis.Redis) -> None:
    running = jobs.Record(1, sleep=2.5).dispatch()
    worker = start_worker("--stop-when-empty", "--sleep", "0", env=backend.env)  # type: ignore[operator]
    wait_for(lambda: traces(redis_client, "started"), timeout=30)
    wait_for(lambda: client.get("/api/workers").json()["workers"], timeout=15)
    [seen] = client.get("/api/workers").json()["workers"]
    assert (seen["connection"], seen["queues"], seen["pid"] > 0) == (backend.connection, ["default"], True)
    assert seen["job"] is None or seen["job"]["uuid"] == running
    held = client.get(f"/api/jobs/{running}").json()
    assert (held["status"], held["cancellable"]) == ("reserved", False)
    assert client.get("/api/stats").json()["reserved"] == 1
    assert worker.wait(60) == 0
    worker.output()


def test_the_job_page_shows_any_job_and_cancels_a_waiting_one(backend: Backend, client: httpx.Client,
                                                                start_worker: object,
                                                                redis_client: redis.Redis) -> None:
    failed = fail_for_real(start_worker, backend, redis_client, n=3)
    pending = jobs.Record(1).dispatch()
    delayed = jobs.Record(2).dispatch(delay=600)
    reserved = jobs.Record(3).dispatch()
    assert pending and delayed and reserved

    # The lists link to the job pages
    assert f'href="/jobs/{pending}"' in client.get("/jobs").text
    assert f'href="/jobs/{failed}"' in client.get("/failed").text

    page = client.get(f"/jobs/{failed}").text
    assert 'id="job-status">failed<' in page and "job 3 is broken until someone fixes it" in page
    assert 'id="traceback"' in page and "button type=\"submit\" class=\"cancel\"" not in page
    page = client.get(f"/jobs/{delayed}").text
    assert 'id="job-status">delayed<' in page and 'class="cancel"' in page and "apps.jobs.Record" in page

    # A job a worker holds is shown as reserved, without Cancel, and a forged Cancel leaves it
    first = eventbus.connection().pop("default")  # the oldest ready one: pending
    assert first is not None and first.uuid == pending
    page = client.get(f"/jobs/{pending}").text
    assert 'id="job-status">reserved<' in page and 'class="cancel"' not in page
    refused = post(client, f"/jobs/{delayed}", f"/jobs/{pending}/cancel")  # a token from another page
    assert refused.status_code == 303 and refused.headers["location"] == f"/jobs/{pending}?notice=uncancelled"
    assert client.get(f"/api/jobs/{pending}").json()["status"] == "reserved"
    assert [j["uuid"] for j in client.get("/api/jobs?status=reserved&queue=default").json()["jobs"]] == [pending]

    # Cancel removes a delayed and a ready job
    for uuid in (delayed, reserved):
        done = post(client, f"/jobs/{uuid}", f"/jobs/{uuid}/cancel")
        assert done.status_code == 303 and done.headers["location"] == "/jobs?notice=cancelled"
        assert client.get(f"/api/jobs/{uuid}").status_code == 404
    assert "Cancelled the job" in client.get("/jobs?notice=cancelled").text
    gone = client.get(f"/jobs/{delayed}")
    assert gone.status_code == 303 and gone.headers["location"] == "/jobs?notice=gone"
    stats = eventbus.connection().stats()
    assert (stats.ready, stats.delayed, stats.reserved) == (0, 0, 1)


def test_sealed_state_stays_sealed_and_tags_are_shown(backend: Backend, client: httpx.Client) -> None:
    raw = json.dumps({"uuid": "sealed-1", "displayName": "shop.Charge", "pushedAt": 1.7e9, "attempts": 0,
                      "tags": ["order:42", "<b>vip</b>"],
                      "data": {"commandName": "shop.Charge", "command": {"__encrypted__": "c2VjcmV0LWNpcGhlcg=="}}})
    eventbus.connection().push_raw(raw)
    detail = client.get("/api/jobs/sealed-1").json()
    assert detail["sealed"] is True and detail["tags"] == ["order:42", "<b>vip</b>"]
    assert "c2VjcmV0LWNpcGhlcg" not in detail["payload"] and "encrypted" in detail["payload"]
    page = client.get("/jobs/sealed-1").text
    assert "c2VjcmV0LWNpcGhlcg" not in page and "encrypted state sealed" in page
    assert "order:42" in page and "&lt;b&gt;vip&lt;/b&gt;" in page


def test_the_batches_page_retries_a_batchs_failed_jobs(backend: Backend, client: httpx.Client,
                                                     start_worker: object, redis_client: redis.Redis) -> None:
    # Given a batch one of whose jobs a worker failed
    redis_client.set("trace:broken", 1)
    batch = eventbus.batch([Broken(1), jobs.Record(2)]).name("import 42").allow_failures().dispatch()
    work(start_worker, backend)
    redis_client.delete("trace:broken")
    [failed] = batch.fresh().failed_job_ids

    [listed] = client.get("/api/batches").json()["batches"]
    assert (listed["id"], listed["name"], listed["total"], listed["pending"], listed["failed"]) == (
        batch.id, "import 42", 2, 1, 1)
    assert listed["failed_job_ids"] == [failed] and listed["ref"] == f"{batch.id}@{backend.connection}"
    assert listed["finished"] is True and listed["cancelled"] is False  # every job ran; one failed
    page = client.get("/batches").text
    assert "import 42" in page and '<progress max="100" value="50">' in page
    assert f'href="/jobs/{failed}"' in page and 'class="retry-failed"' in page
    assert client.get(f"/jobs/{failed}").status_code == 200

    # When Retry failed is pressed, the failed job runs again and the batch finishes
    done = post(client, "/batches", "/batches/retry", batch=listed["ref"])
    assert done.status_code == 303 and done.headers["location"] == "/batches?notice=batch-retried&n=1"
    assert "Pushed 1 failed job(s) of the batch" in client.get(done.headers["location"]).text
    work(start_worker, backend)
    assert "broken:1" in traces(redis_client, "ran")
    after = batch.fresh()
    assert after.pending == 0 and after.progress == 100.0
    assert after.failed_job_ids == () and 'class="retry-failed"' not in client.get("/batches").text
    token = csrf_of(page)
    for ref in ("nope@elsewhere", f"nope@{backend.connection}", batch.id, ""):
        assert client.post("/batches/retry", data={"csrf": token, "batch": ref}).status_code == 400, ref


def test_job_show_prints_any_job_and_exits_1_for_none(backend: Backend, start_worker: object,
                                                     redis_client: redis.Redis,
                                                     worker_env: dict[str, str]) -> None:
    failed = fail_for_real(start_worker, backend, redis_client, n=4)
    pending = jobs.Record(1).dispatch()
    runner = CliRunner()
    shown = runner.invoke(main, ["job", "show", failed])
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    assert "Status:     failed" in lines and "Job:        apps.observed.Broken" in lines
    assert "Exception:  RuntimeError: job 4 is broken until someone fixes it" in lines
    as_json = runner.invoke(main, ["job", "show", str(pending), "--json"])
    assert as_json.exit_code == 0 and json.loads(as_json.output)["status"] == "pending"
    # And as a real subprocess: no such job is exit 1 with one line on stderr
    proc = subprocess.run([sys.executable, "-m", "eventbus", "job", "show", "no-such-job", "--app", "apps.jobs"],
                          env={**worker_env, **backend.env}, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip().endswith("eventbus: error: no queued, failed or recently completed job with uuid no-such-job")
