"""The database driver with real workers: SQLite always, PostgreSQL and MariaDB when they answer."""

from __future__ import annotations

import pathlib
import signal
import time

import pytest
import redis
import sqlalchemy as sa

import eventbus
from apps import jobs
from helpers import MYSQL_URL, PG_URL, database_reason, run_worker, traces, wait_for, wait_until_catching
from eventbus.errors import ConnectionUnavailableError, MissingDependencyError

pytestmark = pytest.mark.integration


@pytest.fixture(params=["sqlite", "postgres", "mariadb"])
def db_url(request: pytest.FixtureRequest, tmp_path: object, redis_client: redis.Redis) -> str:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path}/jobs.sqlite3"
    else:
        url = PG_URL if request.param == "postgres" else MYSQL_URL
        reason = database_reason(url)
        if reason:
            pytest.skip(reason)
        engine = sa.create_engine(url)
        with engine.begin() as conn:
            for table in ("jobs", "failed_jobs"):
                if sa.inspect(conn).has_table(table):
                    conn.execute(sa.text(f"DELETE FROM {table}"))
        engine.dispose()
    eventbus.configure(default="database", connections={"database": {"driver": "database", "url": url}})
    return url


def db_env(url: str, **extra: str) -> dict[str, str]:
    return {"EVENTBUS_CONNECTION": "database", "TEST_DB_URL": url, **extra}


def test_four_workers_drain_2000_jobs_each_exactly_once(db_url: str, redis_client: redis.Redis,
                                                        start_worker: object) -> None:
    eventbus.connection().bulk([eventbus.dispatching.make_payload(jobs.Counted(n)) for n in range(2000)])
    workers = [start_worker("--stop-when-empty", "--quiet", "--sleep", "0", env=db_env(db_url)) for _ in range(4)]
    assert [w.wait(180) for w in workers] == [0, 0, 0, 0]
    counts = {int(k): int(v) for k, v in redis_client.hgetall("trace:count").items()}
    assert len(counts) == 2000 and set(counts.values()) == {1}
    assert eventbus.connection().size() == 0


def test_sigkill_mid_job_and_the_job_runs_again_after_retry_after(db_url: str, redis_client: redis.Redis,
                                                                   start_worker: object) -> None:
    env = db_env(db_url, TEST_RETRY_AFTER="2", EVENTBUS_TIMEOUT_GRACE="0.4")  # 1.5 + 0.4 < 2
    jobs.Record(1, sleep=30).dispatch()
    w = start_worker("--timeout", "1.5", "--tries", "3", "--sleep", "0.1", env=env)
    wait_for(lambda: traces(redis_client, "started"), timeout=20)
    w.proc.kill()
    w.proc.wait()
    killed_at = time.time()
    redis_client.delete("trace:started")
    again = start_worker("--timeout", "1.5", "--tries", "3", "--sleep", "0.1", env=env)
    wait_for(lambda: traces(redis_client, "started"), timeout=20)
    assert float(traces(redis_client, "started")[0].split(":")[1]) - killed_at >= 0.5
    again.signal(signal.SIGTERM)
    again.wait()


def test_delayed_release_and_failed_store_round_trip(db_url: str, redis_client: redis.Redis,
                                                      start_worker: object) -> None:
    pushed = time.time()
    jobs.Record(1).dispatch(delay=1.0)
    uuid = jobs.Flaky(2).dispatch()
    w = start_worker("--sleep", "0.05", env=db_env(db_url))
    wait_for(lambda: traces(redis_client, "ran") and traces(redis_client, "failed"), timeout=30)
    w.signal(signal.SIGTERM)
    assert w.wait() == 0
    assert float(traces(redis_client, "started")[0].split(":")[1]) - pushed >= 1.0
    attempts = [a.split(":") for a in traces(redis_client, "attempt")]
    assert [a[1] for a in attempts] == ["1", "2", "3"]
    assert float(attempts[1][2]) - float(attempts[0][2]) >= 0.2  # backoff
    store = eventbus.runtime.failed_store()  # type: ignore[attr-defined]
    assert [r.uuid for r in store.all()] == [uuid]
    from click.testing import CliRunner

    from eventbus.cli import main

    assert CliRunner().invoke(main, ["retry", uuid]).exit_code == 0
    assert store.all() == [] and eventbus.connection().size() == 1
    store.log("database", "default", "{}", "RuntimeError: old", "old-uuid")
    assert store.flush(older_than_s=3600) == 0 and store.flush(older_than_s=0) == 1  # prune-failed


def test_corrupt_payload_row_goes_to_failed_jobs(db_url: str, redis_client: redis.Redis, start_worker: object) -> None:
    eventbus.connection().push_raw("{corrupt")
    jobs.Record(5).dispatch()
    code, _, _ = run_worker(start_worker, "--stop-when-empty", env=db_env(db_url))
    assert code == 0 and traces(redis_client, "ran") == ["5"]
    [record] = eventbus.runtime.failed_store().all()
    assert record.payload == "{corrupt" and "payload is not JSON" in record.exception


def test_postgres_listen_notify_wakes_idle_workers(redis_client: redis.Redis, start_worker: object) -> None:
    reason = database_reason(PG_URL)
    if reason:
        pytest.skip(reason)
    eventbus.configure(default="database", connections={"database": {"driver": "database", "url": PG_URL}})
    eventbus.connection().clear()
    w = start_worker("--sleep", "20", env=db_env(PG_URL))
    wait_until_catching(w.proc.pid, signal.SIGTERM)
    time.sleep(1.0)  # the worker is idle, waiting up to 20s
    pushed = time.time()
    jobs.Record(1).dispatch()
    wait_for(lambda: traces(redis_client, "started"), timeout=10)
    latency = float(traces(redis_client, "started")[0].split(":")[1]) - pushed
    assert latency < 2.0, latency
    w.signal(signal.SIGTERM)
    assert w.wait() == 0


def test_embedded_default_is_a_sqlite_file_in_the_working_directory(redis_client: redis.Redis,
                                                                    worker_env: dict) -> None:
    import pathlib
    import subprocess
    import sys

    jobs.Record(1).dispatch()  # nothing configured: the SQLite file in the working directory
    assert pathlib.Path("eventbus.sqlite3").exists()
    env = {k: v for k, v in worker_env.items() if k != "EVENTBUS_CONNECTION"}
    proc = subprocess.run([sys.executable, "-m", "eventbus", "work", "--app", "apps.jobs", "--stop-when-empty"],
                          env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert traces(redis_client, "ran") == ["1"]


def test_unreachable_database_names_the_url_without_password() -> None:
    eventbus.configure(default="database", connections={"database": {
        "driver": "database", "url": "postgresql+psycopg://app:s3cret@127.0.0.1:1/app"}})
    with pytest.raises(ConnectionUnavailableError) as info:
        eventbus.connection().ping()
    assert "postgresql+psycopg://app:***@127.0.0.1:1/app" in str(info.value)
    assert "s3cret" not in str(info.value)


def test_missing_driver_names_the_extra() -> None:
    eventbus.configure(default="database", connections={"database": {
        "driver": "database", "url": "mysql+mysqldb://root@127.0.0.1/test"}})
    with pytest.raises(MissingDependencyError, match=r"pip install 'eventbus\[mysql\]'"):
        eventbus.connection()


def test_migrate_command_creates_tables(tmp_path: object) -> None:
    from click.testing import CliRunner

    from eventbus.cli import main

    url = f"sqlite:///{tmp_path}/m.sqlite3"
    eventbus.configure(connections={"database": {"driver": "database", "url": url}})
    result = CliRunner().invoke(main, ["migrate"])
    assert result.exit_code == 0, result.output
    tables = set(sa.inspect(sa.create_engine(url)).get_table_names())
    assert {"jobs", "failed_jobs", "eventbus_signals"} <= tables


def test_sqlite_idle_worker_wakes_on_commit(tmp_path: object, redis_client: redis.Redis, start_worker: object) -> None:
    url = f"sqlite:///{tmp_path}/wake.sqlite3"
    eventbus.configure(default="database", connections={"database": {"driver": "database", "url": url}})
    eventbus.connection().ping()
    w = start_worker("--sleep", "20", env=db_env(url))
    wait_until_catching(w.proc.pid, signal.SIGTERM)
    time.sleep(1.0)  # idle, waiting up to 20s
    pushed = time.time()
    jobs.Record(1).dispatch()
    wait_for(lambda: traces(redis_client, "started"), timeout=10)
    assert float(traces(redis_client, "started")[0].split(":")[1]) - pushed < 1.0
    w.signal(signal.SIGTERM)
    assert w.wait() == 0


def test_deadlocks_are_retried_and_other_errors_are_not() -> None:
    from eventbus.sql import guarded

    calls = []

    def deadlocking() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise sa.exc.OperationalError("UPDATE jobs", {}, Exception("(1213, 'Deadlock found when trying to get lock')"))
        return "done"

    assert guarded("mysql://h/db", "pop", deadlocking) == "done" and len(calls) == 3

    def broken() -> None:
        raise sa.exc.OperationalError("SELECT", {}, Exception("no such table: jobs"))

    with pytest.raises(sa.exc.OperationalError, match="no such table"):
        guarded("sqlite:///x", "pop", broken)


def test_the_embedded_sqlite_file_is_readable_by_its_owner_only(tmp_path: pathlib.Path) -> None:
    import os
    import stat

    os.umask(0o022)
    jobs.Record(1).dispatch()  # the default connection: sqlite:///eventbus.sqlite3 in the working dir
    for name in ("eventbus.sqlite3", "eventbus.sqlite3-wal"):
        path = tmp_path / name
        if path.exists():
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, name
    assert (tmp_path / "eventbus.sqlite3").exists()
