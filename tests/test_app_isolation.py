"""Two apps on one server: each sees, retries and deletes only its own jobs and records.

Two apps share one Redis database (prefixes ``appa:`` and ``appb:``) or one SQL database (jobs
tables ``appa_jobs`` and ``appb_jobs``). Each runs a real worker on a job that fails, so each
has one failed record whose payload carries a customer's secret. Then app A's operator does
everything the CLI allows against B's record, knowing its uuid: list, show, retry, forget,
``retry all``, ``flush``, pause. None of it may read or change anything of B's (issue 25's
hostile side of the shared failed store).
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from collections.abc import Iterator

import pytest
import redis

from helpers import MYSQL_URL, PG_URL, REDIS_URL, ROOT, database_reason

pytestmark = pytest.mark.integration

APP = '''
import os

import eventbus


eventbus.configure(default="main", connections={{"main": {connection}}})


class Charge(eventbus.Job):
    def __init__(self, card: str) -> None:
        self.card = card

    def handle(self) -> None:
        raise RuntimeError("card declined")
'''

#: Runs eventbus commands in-process for one app (``--app`` loads it once) and prints, as JSON,
#: each command's exit code and output.
OPERATOR = '''
import json, sys
from click.testing import CliRunner
from eventbus.cli import main

results = []
for line in sys.stdin.read().splitlines():
    args = json.loads(line)
    result = CliRunner().invoke(main, args)
    results.append({"args": args, "code": result.exit_code, "output": result.output})
print(json.dumps(results))
'''


def connection_for(kind: str, url: str, app: str) -> dict[str, object]:
    if kind == "redis":
        return {"driver": "redis", "url": url, "prefix": f"{app}:", "block_for": 0}
    return {"driver": "database", "url": url, "table": f"{app}_jobs"}


@pytest.fixture(params=["redis", "sqlite", "postgres", "mysql"])
def shared_server(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[tuple[str, str]]:
    """(kind, URL) of one database both apps use, emptied of their tables before and after."""
    kind = request.param
    if kind == "redis":
        client: redis.Redis = request.getfixturevalue("redis_client")
        yield kind, REDIS_URL
        client.flushdb()
        return
    url = {"sqlite": f"sqlite:///{tmp_path}/shared.sqlite3", "postgres": PG_URL, "mysql": MYSQL_URL}[kind]
    if kind != "sqlite" and database_reason(url):
        pytest.skip(database_reason(url))
    _drop_tables(url)
    yield kind, url
    _drop_tables(url)


def _drop_tables(url: str) -> None:
    import sqlalchemy as sa

    engine = sa.create_engine(url)
    suffixes = ("", "_failed", "_state", "_batches", "_batch_jobs", "_batch_outbox")
    names = [f"{app}_jobs{suffix}" for app in ("appa", "appb") for suffix in suffixes]
    with engine.begin() as conn:
        for name in [*names, "eventbus_signals", "failed_jobs", "eventbus_state", "eventbus_batches",
                     "eventbus_batch_jobs", "eventbus_batch_outbox"]:
            conn.execute(sa.text(f"DROP TABLE IF EXISTS {name}"))
    engine.dispose()


def environment(directory: pathlib.Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVENTBUS_")}
    env.update({"PYTHONPATH": os.pathsep.join([str(directory), str(ROOT)]), "PYTHONUNBUFFERED": "1"})
    return env


def python(directory: pathlib.Path, code: str, stdin: str = "") -> str:
    done = subprocess.run([sys.executable, "-c", code], cwd=directory, env=environment(directory),
                          input=stdin, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{code}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
    return done.stdout


def operate(directory: pathlib.Path, app: str, *commands: list[str]) -> list[dict[str, object]]:
    """Run eventbus commands as ``app``'s operator; each command's exit code and output."""
    lines = "\n".join(json.dumps([*command, "--app", app]) for command in commands)
    results: list[dict[str, object]] = json.loads(python(directory, OPERATOR, lines).splitlines()[-1])
    return results


def fail_one_job(directory: pathlib.Path, app: str, card: str) -> None:
    """Dispatch a job that fails, and run a real worker on it until the queue is empty."""
    python(directory, f"import {app}; {app}.Charge({card!r}).dispatch()")
    worker = subprocess.run([sys.executable, "-m", "eventbus", "work", "--app", app, "--stop-when-empty",
                             "--sleep", "0"], cwd=directory, env=environment(directory),
                            capture_output=True, text=True, timeout=120)
    assert worker.returncode == 0 and "FAIL" in worker.stdout, worker.stdout + worker.stderr


def fail_one_batch(directory: pathlib.Path, app: str, card: str) -> str:
    """Dispatch a batch of one job that fails, run a real worker on it; the batch's id."""
    code = (f"import eventbus, {app}; "
            f"print(eventbus.batch([{app}.Charge({card!r})]).allow_failures().dispatch().id)")
    batch_id = python(directory, code).split()[-1]
    worker = subprocess.run([sys.executable, "-m", "eventbus", "work", "--app", app, "--stop-when-empty",
                             "--sleep", "0"], cwd=directory, env=environment(directory),
                            capture_output=True, text=True, timeout=120)
    assert worker.returncode == 0 and "FAIL" in worker.stdout, worker.stdout + worker.stderr
    return batch_id


def batch_ids(directory: pathlib.Path, app: str) -> list[str]:
    [listing] = operate(directory, app, ["batches", "--json"])
    assert listing["code"] == 0, listing
    return [json.loads(line)["id"] for line in str(listing["output"]).splitlines()]


def failed_records(directory: pathlib.Path, app: str) -> list[dict[str, object]]:
    [listing] = operate(directory, app, ["failed", "--json"])
    assert listing["code"] == 0, listing
    return [json.loads(line) for line in str(listing["output"]).splitlines()]


def test_apps_sharing_a_server_never_reach_each_others_failed_jobs(
        shared_server: tuple[str, str], tmp_path: pathlib.Path) -> None:
    kind, url = shared_server
    for app in ("appa", "appb"):
        conn = connection_for(kind, url, app)
        (tmp_path / f"{app}.py").write_text(APP.format(connection=repr(conn)))
    fail_one_job(tmp_path, "appa", "4000-AAAA")
    fail_one_job(tmp_path, "appb", "4000-BBBB-SECRET")

    [b_record] = failed_records(tmp_path, "appb")
    b_uuid = str(b_record["uuid"])
    assert b_record["job"] == "appb.Charge"

    listed, shown, retried, forgotten, retried_all, flushed, paused, queue = operate(
        tmp_path, "appa",
        ["failed", "--json"], ["failed", "show", b_uuid], ["retry", b_uuid], ["forget", b_uuid],
        ["retry", "all"], ["flush", "--force"], ["pause", "default"], ["size", "--json"])
    assert [json.loads(line)["job"] for line in str(listed["output"]).splitlines()] == ["appa.Charge"]
    for refused in (shown, retried, forgotten):
        assert refused["code"] == 1 and f"no failed job with uuid {b_uuid}" in str(refused["output"])
        assert "4000-BBBB-SECRET" not in str(refused["output"])
    assert retried_all["code"] == 0 and "appb" not in str(retried_all["output"])
    assert flushed["code"] == 0 and "Deleted 0 failed jobs." in str(flushed["output"])
    assert paused["code"] == 0 and json.loads(str(queue["output"]))["size"] == 1  # A's job, retried

    # B's record, queue and state are as they were: nothing A did reached them.
    assert [r["uuid"] for r in failed_records(tmp_path, "appb")] == [b_uuid]
    shown_b, size_b, status_b = operate(tmp_path, "appb", ["failed", "show", b_uuid], ["size", "--json"],
                                        ["status", "--json"])
    assert "4000-BBBB-SECRET" in str(shown_b["output"])
    assert json.loads(str(size_b["output"]))["size"] == 0
    assert [q["paused"] for q in json.loads(str(status_b["output"]))["queues"]] in ([], [False])


def test_apps_sharing_a_server_never_reach_each_others_batches(
        shared_server: tuple[str, str], tmp_path: pathlib.Path) -> None:
    kind, url = shared_server
    for app in ("appa", "appb"):
        conn = connection_for(kind, url, app)
        (tmp_path / f"{app}.py").write_text(APP.format(connection=repr(conn)))
    a_batch = fail_one_batch(tmp_path, "appa", "4000-AAAA")
    b_batch = fail_one_batch(tmp_path, "appb", "4000-BBBB-SECRET")

    listed, shown, retried, pruned = operate(
        tmp_path, "appa", ["batches", "--json"], ["batches", b_batch], ["retry-batch", b_batch],
        ["prune-batches", "--hours", "0", "--unfinished", "0", "--cancelled", "0"])
    assert [json.loads(line)["id"] for line in str(listed["output"]).splitlines()] == [a_batch]
    for refused in (shown, retried):
        assert refused["code"] == 1 and f"no batch {b_batch}" in str(refused["output"])
    assert pruned["code"] == 0 and "Removed 1 batches." in str(pruned["output"])

    # B's batch and its failed record are as they were.
    assert batch_ids(tmp_path, "appb") == [b_batch]
    assert len(failed_records(tmp_path, "appb")) == 1
