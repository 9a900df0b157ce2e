"""Bodies that are not UTF-8 fail their job, as docs/safety.md says: a job never runs with lone
surrogates (how such bytes reach Python), and a failed store records such a payload and its
uuid, which ``eventbus retry all`` then handles like any other record."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest
import redis
import sqlalchemy as sa

import eventbus
from apps import jobs
from eventbus.dispatching import make_payload
from helpers import REDIS_URL, run_worker, traces

pytestmark = pytest.mark.integration


def body_with(n: int, **raw_fields: bytes) -> bytes:
    """A good ``Record(n)`` payload whose fields ``raw_fields`` hold bytes that are not UTF-8."""
    doc = make_payload(jobs.Record(n)).to_dict()
    text = json.dumps({**doc, **{name: f"@{name}@" for name in raw_fields}}).encode()
    for name, value in raw_fields.items():
        text = text.replace(f'"@{name}@"'.encode(), b'"' + value + b'"')
    return text


def test_a_body_that_is_not_utf8_never_runs(use_redis: redis.Redis, start_worker: object) -> None:
    body = body_with(5, displayName=b"Record \xff\xfe")
    use_redis.hset("queues:{default}:bodies", "bin", body)
    use_redis.hset("queues:{default}:attempts", "bin", 0)
    use_redis.rpush("queues:{default}", "bin")
    jobs.Record(1).dispatch()
    code, _, err = run_worker(start_worker, "--stop-when-empty", "--quiet")
    assert code == 0, err
    assert traces(use_redis, "ran") == ["1"]
    [record] = eventbus.failed_store().all()
    assert "not UTF-8" in record.summary and record.payload.encode("utf-8", "surrogateescape") == body


def sqlite_worker_env(tmp_path: pathlib.Path) -> tuple[str, dict[str, str]]:
    url = f"sqlite:///{tmp_path}/jobs.sqlite3"
    eventbus.configure(default="database", connections={"database": {"driver": "database", "url": url}})
    return url, {"EVENTBUS_CONNECTION": "database", "TEST_DB_URL": url}


def insert_raw(url: str, body: bytes) -> None:
    """A row whose payload holds ``body`` as it is (how another writer could leave it)."""
    queue = eventbus.connection()
    queue.push_raw("placeholder")
    with sa.create_engine(url).begin() as conn:
        conn.execute(sa.text("UPDATE jobs SET payload = CAST(:b AS TEXT) WHERE payload = 'placeholder'"),
                     {"b": body})


def test_a_uuid_that_is_not_utf8_is_recorded_in_the_sqlite_failed_store(
        redis_client: redis.Redis, tmp_path: pathlib.Path, start_worker: object) -> None:
    url, env = sqlite_worker_env(tmp_path)
    body = body_with(5, uuid=b"\xff\xfe-forged")
    insert_raw(url, body)
    jobs.Record(1).dispatch()
    code, _, err = run_worker(start_worker, "--stop-when-empty", "--quiet", "--max-jobs", "5", env=env)
    assert code == 0, err
    assert traces(redis_client, "ran") == ["1"] and eventbus.connection().size() == 0
    [record] = eventbus.failed_store().all()
    assert "not UTF-8" in record.summary and "\\xff\\xfe-forged" in record.uuid


@pytest.mark.parametrize("store", ["sqlite", "redis"])
def test_retry_all_survives_such_a_record(redis_client: redis.Redis, tmp_path: pathlib.Path,
                                          worker_env: dict[str, str], store: str,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    if store == "redis":  # a store that keeps the bytes as they were
        monkeypatch.setenv("EVENTBUS_FAILED_URL", REDIS_URL)
        worker_env = {**worker_env, "EVENTBUS_FAILED_URL": REDIS_URL}
    url, env = sqlite_worker_env(tmp_path)
    raw = body_with(5, uuid=b"\xff\xfe-forged").decode("utf-8", "surrogateescape")
    eventbus.failed_store().log("database", "default", raw, "E: refused", "\udcff\udcfe-forged")
    good = make_payload(jobs.Record(6))
    eventbus.failed_store().log("database", "default", good.to_json(), "E: broke", good.uuid)
    proc = subprocess.run([sys.executable, "-m", "eventbus", "retry", "all", "--app", "apps.jobs"],
                          env={**worker_env, **env}, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert eventbus.connection().size() == 2 and eventbus.failed_store().all() == []
