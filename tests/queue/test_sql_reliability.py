"""The database driver against what broke it: a row that makes every pop fail, and workers whose
clocks disagree. SQLite always, PostgreSQL and MariaDB when they answer."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

import pytest
import sqlalchemy as sa
from helpers import MYSQL_URL, PG_URL, database_reason, wait_for

import eventbus
from eventbus import registry
from eventbus.failed import MemoryFailedJobStore
from eventbus.payload import Payload
from eventbus.queue.database import DatabaseQueue
from eventbus.sql import run_driver_sql
from eventbus.worker import Worker, WorkerOptions

pytestmark = pytest.mark.integration

TABLE = "reliability_jobs"
INT_MAX = 2**31 - 1


@pytest.fixture(params=["sqlite", "postgres", "mariadb"])
def url(request: pytest.FixtureRequest, tmp_path: object) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/jobs.sqlite3"
        return
    yield from fresh_tables(PG_URL if request.param == "postgres" else MYSQL_URL)


@pytest.fixture
def pg_url() -> Iterator[str]:
    yield from fresh_tables(PG_URL)


def fresh_tables(url: str) -> Iterator[str]:
    """``url`` without this module's tables before and after the test (skipped when the server
    does not answer)."""
    reason = database_reason(url)
    if reason:
        pytest.skip(reason)
    drop(url)
    yield url
    drop(url)


def drop(url: str) -> None:
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text(f"DROP TABLE IF EXISTS {TABLE}"))
        if engine.dialect.name == "postgresql":
            conn.execute(sa.text("DROP FUNCTION IF EXISTS reliability_poison() CASCADE"))
    engine.dispose()


def make_queue(url: str, retry_after: float = 10.0) -> DatabaseQueue:
    config = DatabaseQueue.validate_config("db", {"driver": "database", "url": url, "table": TABLE,
                                                 "retry_after": retry_after})
    return DatabaseQueue("db", config)


def payload(n: int) -> Payload:
    return Payload(display_name="T", command_name="t.J", command={"n": n})


def execute(queue: DatabaseQueue, sql: str, **params: object) -> None:
    with queue.engine.begin() as conn:
        conn.execute(sa.text(sql), params)


# -- fault 6: one row that makes the pop fail ------------------------------------------------------

def test_attempts_at_the_integer_maximum_neither_overflow_nor_block_the_queue(url: str) -> None:
    queue = make_queue(url)
    poison, behind = payload(1), payload(2)
    queue.push(poison)
    queue.push(behind)
    execute(queue, f"UPDATE {TABLE} SET attempts = :n WHERE uuid = :u", n=INT_MAX, u=poison.uuid)
    job = queue.pop()
    assert job is not None and job.uuid == poison.uuid and job.attempts == INT_MAX  # capped, not overflowed
    nxt = queue.pop()
    assert nxt is not None and nxt.uuid == behind.uuid


def test_the_worker_fails_the_row_at_the_maximum_and_runs_the_jobs_behind_it(url: str) -> None:
    eventbus.configure(default="db", connections={"db": {"driver": "database", "url": url, "table": TABLE}})
    queue = eventbus.connection()
    poison = Payload(display_name="T", command_name=registry.dotted_name(Behind), command={})  # a class it may run
    queue.push(poison)
    execute(queue, f"UPDATE {TABLE} SET attempts = :n WHERE uuid = :u", n=INT_MAX, u=poison.uuid)  # type: ignore[arg-type]
    store = MemoryFailedJobStore()
    options = WorkerOptions(stop_when_empty=True, sleep_s=0, memory_mb=0, timeout_s=5)
    assert Worker(queue, failed=store, options=options).run() == 0
    [record] = store.all()
    assert record.uuid == poison.uuid and "attempted too many times" in record.summary
    assert queue.size() == 0


def poison_the_row(queue: DatabaseQueue, uuid: str) -> None:
    """A trigger that refuses to count an attempt of one row: an error tied to that row alone."""
    if queue.dialect == "sqlite":
        execute(queue, f"CREATE TRIGGER reliability_poison BEFORE UPDATE OF attempts ON {TABLE} "
                       f"WHEN old.uuid = '{uuid}' BEGIN SELECT RAISE(ABORT, 'poisoned row'); END")
    elif queue.dialect == "postgresql":
        execute(queue, "CREATE FUNCTION reliability_poison() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                       "RAISE EXCEPTION 'poisoned row'; END $$")
        execute(queue, f"CREATE TRIGGER reliability_poison BEFORE UPDATE OF attempts ON {TABLE} FOR EACH ROW "
                       f"WHEN (old.uuid = '{uuid}' AND new.attempts <> old.attempts) "
                       "EXECUTE FUNCTION reliability_poison()")
    else:
        execute(queue, f"CREATE TRIGGER reliability_poison BEFORE UPDATE ON {TABLE} FOR EACH ROW "
                       f"BEGIN IF old.uuid = '{uuid}' AND new.attempts <> old.attempts THEN "
                       "SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'poisoned row'; END IF; END")


def test_a_row_that_fails_every_pop_is_handed_out_with_its_failure_and_the_rest_go_on(url: str) -> None:
    queue = make_queue(url)
    poison, behind = payload(1), payload(2)
    queue.push(poison)
    queue.push(behind)
    queue.pop()  # the tables exist, and the trigger may be made
    execute(queue, f"UPDATE {TABLE} SET reserved_at = NULL, token = NULL")
    poison_the_row(queue, poison.uuid)
    job = queue.pop()
    assert job is not None and job.uuid == poison.uuid and json.loads(job.raw) == poison.to_dict()
    assert job.failure is not None and job.failure.startswith("eventbus.errors.DeserializationError: row ")
    assert "poisoned row" in job.failure
    nxt = queue.pop()
    assert nxt is not None and nxt.uuid == behind.uuid
    assert job.delete() and nxt.delete() and queue.size() == 0


def test_reserve_hands_a_row_that_fails_the_batch_out_alone_and_reserves_the_rest(url: str) -> None:
    queue = make_queue(url)
    ps = [payload(n) for n in range(5)]
    for p in ps:
        queue.push(p)
    [done] = queue.reserve(None, 1).jobs
    poison_the_row(queue, ps[2].uuid)
    got = queue.reserve(None, 3, acks=[done])
    assert [job.uuid for job in got.jobs] == [p.uuid for p in ps[1:4]]
    ok_1, poisoned, ok_3 = got.jobs
    assert poisoned.failure is not None and "poisoned row" in poisoned.failure
    assert poisoned.failure.startswith("eventbus.errors.DeserializationError: row ")
    assert json.loads(poisoned.raw) == ps[2].to_dict()
    assert ok_1.failure is None and ok_3.failure is None and ok_1.attempts == ok_3.attempts == 1
    assert queue.size() == 4, "the acks of the failed batch were made all the same"
    [last] = queue.reserve(None, 5, acks=got.jobs).jobs  # the row is out of the way: one batch again
    assert last.uuid == ps[4].uuid and queue.reserve(None, 5, acks=[last]).jobs == []
    assert queue.size() == 0


def test_reserve_counts_attempts_up_to_the_integer_maximum_without_overflow(url: str) -> None:
    queue = make_queue(url)
    at_max, behind = payload(1), payload(2)
    queue.push(at_max)
    queue.push(behind)
    execute(queue, f"UPDATE {TABLE} SET attempts = :n WHERE uuid = :u", n=INT_MAX, u=at_max.uuid)
    got = queue.reserve(None, 5).jobs
    assert [(job.uuid, job.attempts) for job in got] == [(at_max.uuid, INT_MAX), (behind.uuid, 1)]


def test_touch_restarts_the_reservation_only_for_its_holder(url: str) -> None:
    queue = make_queue(url, retry_after=1.0)
    queue.push(payload(1))
    job = queue.pop()
    assert job is not None and job.reserved_until > time.monotonic() + 0.5
    time.sleep(0.7)
    deadline = job.reserved_until
    assert job.touch() and job.reserved_until > deadline
    time.sleep(0.7)  # 1.4 s since the pop, 0.7 s since the touch: still held
    assert queue.pop() is None
    time.sleep(1.1)  # expired; and the reclaim, made at most once a second, is due again
    again = queue.pop()
    assert again is not None and again.attempts == 2
    assert not job.touch(), "the former holder's touch must not take the job back"
    assert again.delete() and queue.size() == 0


def test_postgres_give_back_wakes_listening_workers(pg_url: str) -> None:
    import psycopg

    queue = make_queue(pg_url)
    queue.push(payload(1))
    [job] = queue.reserve(None, 1).jobs
    with psycopg.connect(sa.make_url(pg_url).set(drivername="postgresql").render_as_string(False),
                         autocommit=True) as listener:
        listener.execute("LISTEN eventbus_jobs")
        queue.reserve(None, 0, give_back=[job])
        heard = [n.payload for n in listener.notifies(timeout=5, stop_after=1)]
    assert heard == ["default"]


def test_postgres_idle_wait_wakes_for_its_own_queues_only(pg_url: str) -> None:
    queue, pusher = make_queue(pg_url), make_queue(pg_url)
    queue.wait(["default"], 0.01)  # the LISTEN connection is open from here on
    timers = [threading.Timer(0.2, lambda: pusher.push(payload(1), "other")),
              threading.Timer(0.8, lambda: pusher.push(payload(2), "default"))]
    started = time.monotonic()
    for timer in timers:
        timer.start()
    queue.wait(["default"], 5.0)
    waited = time.monotonic() - started
    for timer in timers:
        timer.join()
    queue.close()
    assert 0.7 < waited < 3.0, f"woke after {waited:.2f}s: a push to another queue woke it, or none did"


def test_postgres_push_and_reserve_ride_out_a_terminated_connection(pg_url: str) -> None:
    queue = make_queue(pg_url)
    queue.push(payload(1))
    [first] = queue.reserve(None, 1).jobs
    pids = [run_driver_sql(engine, "SELECT pg_backend_pid()", {})[0][0]
            for engine in (queue.push_engine, queue.worker_engine)]  # each has one pooled connection
    for pid in pids:
        execute(queue, "SELECT pg_terminate_backend(:pid)", pid=pid)

    def still_there() -> int:
        # a new transaction each time: pg_stat_activity is a snapshot taken once per transaction
        with queue.engine.connect() as conn:
            return int(conn.execute(sa.text("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(:p)"),
                                    {"p": pids}).scalar() or 0)

    wait_for(lambda: not still_there(), timeout=5)
    queue.push(payload(2))  # the dead connection is found, dropped, and the push sent once more
    got = queue.reserve(None, 5, acks=[first])
    assert [json.loads(job.raw)["data"]["command"]["n"] for job in got.jobs] == [2]
    queue.reserve(None, 0, acks=got.jobs)
    assert queue.size() == 0


class Behind(eventbus.Job):
    ran: list[int] = []

    def handle(self) -> None:
        Behind.ran.append(self.attempts)


def test_sqlite_text_that_is_not_utf8_fails_its_own_job_only(tmp_path: object) -> None:
    url = f"sqlite:///{tmp_path}/q.sqlite3"
    eventbus.configure(default="db", connections={"db": {"driver": "database", "url": url, "table": TABLE}})
    queue = eventbus.connection()
    queue.push_raw("placeholder")
    Behind.ran.clear()
    Behind().dispatch()
    execute(queue, f"UPDATE {TABLE} SET payload = CAST(:b AS TEXT) WHERE payload = 'placeholder'",  # type: ignore[arg-type]
            b=b"\xff\xfe not json")
    store = MemoryFailedJobStore()
    options = WorkerOptions(stop_when_empty=True, sleep_s=0, memory_mb=0, timeout_s=5)
    assert Worker(queue, failed=store, options=options).run() == 0
    [record] = store.all()
    assert record.payload.encode("utf-8", "surrogateescape") == b"\xff\xfe not json"
    assert "payload is not UTF-8" in record.summary
    assert Behind.ran == [1] and queue.size() == 0  # the job behind it ran


# -- fault 7: the database's clock, never a worker's -----------------------------------------------

def test_a_worker_clock_ahead_neither_delays_a_push_nor_steals_a_reservation(
        url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    honest, ahead = make_queue(url, retry_after=10), make_queue(url, retry_after=10)
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + 1000)  # this process's clock runs ahead
    ahead.push(payload(1))
    monkeypatch.setattr(time, "time", real)
    job = honest.pop()
    assert job is not None, "a push stamped by a clock 1000s ahead looks delayed"
    monkeypatch.setattr(time, "time", lambda: real() + 30)
    assert ahead.pop() is None, "a worker 30s ahead took a job still reserved for 10s"
    monkeypatch.setattr(time, "time", real)
    assert job.delete() and honest.size() == 0
