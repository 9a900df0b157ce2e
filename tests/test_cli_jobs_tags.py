"""``eventbus jobs`` and ``eventbus tags`` over what real workers did, on Redis, SQLite and
PostgreSQL: jobs found by tag, class, queue and status (delayed ones among the pending, completed
ones from the recent-jobs store, silenced classes left out), monitored tags counted."""

from __future__ import annotations

import json
import pathlib

import pytest
import redis
from click.testing import CliRunner, Result

import eventbus
from apps import tagged
from eventbus.cli import main
from helpers import run_worker, wait_for
from observing import BACKENDS, Backend, use_backend


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def listed(*args: str) -> list[tuple[str, str, str]]:
    """(uuid, status, name) of each job ``eventbus jobs ARGS --json`` lists."""
    result = invoke("jobs", *args, "--json")
    assert result.exit_code == 0, (result.output, result.stderr)
    document = json.loads(result.stdout)
    assert document["problems"] == []
    return [(j["uuid"], j["status"], j["name"]) for j in document["jobs"]]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: pathlib.Path, redis_client: redis.Redis) -> Backend:
    return use_backend(request.param, tmp_path)


def test_jobs_by_tag_class_queue_and_status_before_and_after_a_worker(
        backend: Backend, start_worker: object) -> None:
    # Given tagged jobs: some will complete, one fails, one waits an hour, two are silenced
    shipped = tagged.Order(1, "ada").dispatch()
    other = tagged.Order(2, "bob").dispatch()
    broken = tagged.Order(3, "ada", fail=True).dispatch()
    later = tagged.Order(4, "ada").dispatch(delay=3600)
    quiet, hushed = tagged.Quiet().dispatch(), tagged.Hushed().dispatch()
    invoice = tagged.Invoice(1).dispatch()
    assert invoke("tags", "watch", "customer:ada").output == "Watching customer:ada.\n"
    assert invoke("tags", "watch", "customer:ada").output == "customer:ada was watched already.\n"

    # Before any worker ran: ada's jobs are pending, the delayed one among them
    ada = listed("--tag", "customer:ada")
    assert ada == [(shipped, "pending", "apps.tagged.Order"), (broken, "pending", "apps.tagged.Order"),
                   (quiet, "pending", "apps.tagged.Quiet"), (hushed, "pending", "apps.tagged.Hushed"),
                   (later, "delayed", "apps.tagged.Order")]
    assert listed("--tag", "order:4", "--status", "delayed") == [(later, "delayed", "apps.tagged.Order")]
    assert listed("--status", "completed") == []

    # When a worker has run what is due
    code, out, err = run_worker(start_worker, "--app", "apps.tagged", "--stop-when-empty", "--sleep", "0",
                                env={**backend.env, "TEST_DB_URL": backend.env.get("TEST_DB_URL", "")})
    assert code == 0, (out, err)

    # (a Redis failed store looks for new shards every 2 s: wait for the failures to show)
    wait_for(lambda: len(listed("--status", "failed")) == 2, timeout=30)
    # Then the completed jobs are listed newest first, the silenced ones left out
    assert listed("--status", "completed") == [(other, "completed", "apps.tagged.Order"),
                                               (shipped, "completed", "apps.tagged.Order")]
    ada = listed("--tag", "customer:ada")
    assert ada == [(later, "delayed", "apps.tagged.Order"), (shipped, "completed", "apps.tagged.Order"),
                   (broken, "failed", "apps.tagged.Order")]
    assert listed("--class", "Invoice") == [(invoice, "failed", "apps.tagged.Invoice")]
    assert listed("--class", "apps.tagged.Order", "--status", "failed") == [(broken, "failed", "apps.tagged.Order")]
    assert listed("--queue", "other") == []
    assert listed("--status", "completed", "--limit", "1") == [(other, "completed", "apps.tagged.Order")]

    document = json.loads(invoke("jobs", "--tag", "order:1", "--json").stdout)
    [done] = document["jobs"]
    assert done["tags"] == ["order:1", "customer:ada"] and done["attempts"] == 1
    assert done["finished_at"] >= done["pushed_at"] > 0 and done["runtime_s"] >= 0
    [failure] = json.loads(invoke("jobs", "--tag", "order:3", "--json").stdout)["jobs"]
    assert failure["exception"] == "RuntimeError: order 3 cannot ship"

    table = invoke("jobs", "--tag", "order:1").output.splitlines()
    assert table[0].split() == ["UUID", "STATUS", "JOB", "QUEUE", "TAGS", "AT"]
    assert table[1].startswith(f"{shipped}  completed  apps.tagged.Order  {backend.connection}:default  "
                               "order:1, customer:ada")
    assert invoke("jobs", "--tag", "nothing").output == "No jobs.\n"

    # The monitored tag counts the jobs recorded with it: the completed and the failed one
    tags = json.loads(invoke("tags", "list", "--json").stdout)
    assert tags == {"tags": [{"tag": "customer:ada", "count": 2, "connections": [backend.connection]}],
                    "problems": []}
    assert invoke("tags", "list").output.split() == ["TAG", "JOBS", "customer:ada", "2"]
    assert invoke("tags", "unwatch", "customer:ada").output == "No longer watching customer:ada.\n"
    assert invoke("tags", "list").output == "No monitored tags.\n"


@pytest.mark.parametrize("name", ["redis", "sqlite"])
def test_job_show_finds_a_job_the_recent_jobs_store_keeps(name: str, tmp_path: pathlib.Path,
                                                         redis_client: redis.Redis, start_worker: object) -> None:
    """A completed job is found in the recent-jobs store, without a payload (none is kept); so
    is a failure once forgotten by the failed job store, while its record is kept."""
    backend = use_backend(name, tmp_path)
    shipped = tagged.Order(7, "ada").dispatch()
    broken = tagged.Order(8, "bob", fail=True).dispatch()
    assert json.loads(invoke("job", "show", shipped, "--json").stdout)["status"] == "pending"
    code, out, err = run_worker(start_worker, "--app", "apps.tagged", "--stop-when-empty", "--sleep", "0",
                                env={**backend.env, "TEST_DB_URL": backend.env.get("TEST_DB_URL", "")})
    assert code == 0, (out, err)

    shown = invoke("job", "show", shipped)
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    for line in ("Job:        apps.tagged.Order", "Status:     completed", f"Connection: {backend.connection}",
                 "Queue:      default", "Attempts:   1", "Tags:       order:7, customer:ada",
                 "Payload: not kept (the recent-jobs store keeps a completed job's class, queue, tags, "
                 "attempts and times)"):
        assert line in lines, (line, lines)
    assert [line.split(":", 1)[0] for line in lines if line.startswith(("Started:", "Finished:", "Runtime:"))] == [
        "Started", "Finished", "Runtime"]
    document = json.loads(invoke("job", "show", shipped, "--json").stdout)
    assert {k: document[k] for k in ("uuid", "display_name", "connection", "queue", "status", "attempts", "tags",
                                     "payload", "payload_kept", "exception")} == {
        "uuid": shipped, "display_name": "apps.tagged.Order", "connection": backend.connection, "queue": "default",
        "status": "completed", "attempts": 1, "tags": ["order:7", "customer:ada"], "payload": "",
        "payload_kept": False, "exception": ""}
    assert document["finished_at"] >= document["started_at"] >= document["pushed_at"] > 0
    assert 0 <= document["runtime_s"] < 30 and document["failed_at"] is None

    # A failure: the failed job store's detail (payload, traceback) while it has it, then the record
    wait_for(lambda: invoke("job", "show", broken, "--json").exit_code == 0, timeout=30)
    failed = json.loads(invoke("job", "show", broken, "--json").stdout)
    assert failed["status"] == "failed" and failed["payload_kept"] and failed["traceback"]
    assert eventbus.runtime.failed_store().forget(broken)
    recorded = json.loads(invoke("job", "show", broken, "--json").stdout)
    assert (recorded["status"], recorded["payload_kept"], recorded["exception"], recorded["traceback"]) == (
        "failed", False, "RuntimeError: order 8 cannot ship", "")
    assert recorded["failed_at"] == recorded["finished_at"] > 0

    missing = invoke("job", "show", "no-such-job")
    assert missing.exit_code == 1
    assert missing.stderr.strip() == "eventbus: error: no queued, failed or recently completed job with uuid no-such-job"


@pytest.mark.parametrize("name", ["redis", "sqlite"])
def test_completed_jobs_kept_zero_seconds_are_not_listed_but_monitored_and_failed_ones_are(
        name: str, tmp_path: pathlib.Path, redis_client: redis.Redis, start_worker: object) -> None:
    """``retention={"completed": 0}`` (the worker's app sets it from TEST_KEEP_COMPLETED): the
    recent-jobs store keeps no completed job, but for those with a monitored tag; failures stay."""
    backend = use_backend(name, tmp_path)
    assert invoke("tags", "watch", "customer:ada").exit_code == 0
    watched = tagged.Order(1, "ada").dispatch()
    tagged.Order(2, "bob").dispatch()
    tagged.Untagged().dispatch()
    broken = tagged.Order(3, "bob", fail=True).dispatch()
    code, out, err = run_worker(start_worker, "--app", "apps.tagged", "--stop-when-empty", "--sleep", "0",
                                env={**backend.env, "TEST_DB_URL": backend.env.get("TEST_DB_URL", ""),
                                     "TEST_KEEP_COMPLETED": "0"})
    assert code == 0, (out, err)
    wait_for(lambda: len(listed("--status", "failed")) == 1, timeout=30)
    assert listed("--tag", "customer:ada") == [(watched, "completed", "apps.tagged.Order")]
    # (the completed list itself may leave the watched one out: it is found by its tag)
    assert set(listed("--status", "completed")) <= {(watched, "completed", "apps.tagged.Order")}
    assert listed("--status", "failed") == [(broken, "failed", "apps.tagged.Order")]


def test_bad_filters_are_usage_errors() -> None:
    assert invoke("jobs", "--status", "finished").exit_code == 2
    assert invoke("jobs", "--limit", "0").exit_code == 2
    result = invoke("tags", "watch", "x" * 200)
    assert result.exit_code == 2 and "a tag is non-empty text of at most 191 characters" in result.stderr
