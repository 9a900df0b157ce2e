"""Servers that drop the worker's connections while it runs."""

from __future__ import annotations

import signal
import threading
import time
import uuid

import pytest
import redis
import sqlalchemy as sa

import eventbus
from apps import jobs
from helpers import PG_URL, REDIS_URL, database_reason, wait_for

pytestmark = pytest.mark.integration


KILLED: list[str] = []


def _kill_eventbus_clients(admin: redis.Redis) -> None:
    """Kill this test's worker connections: eventbus clients on the test's own database only
    (other suites may share the server)."""
    db = str(admin.connection_pool.connection_kwargs.get("db", 0))
    for client in admin.client_list():
        if client.get("name", "").startswith("eventbus:") and str(client.get("db")) == db:
            try:
                admin.client_kill_filter(_id=client["id"])
                KILLED.append(client["name"])
            except redis.ResponseError:
                pass  # gone already


def _kill_clients_repeatedly(kill: object, stop: threading.Event) -> None:
    while not stop.is_set():
        kill()  # type: ignore[operator]
        time.sleep(0.3)


def test_worker_rides_out_redis_dropping_its_connections(use_redis: redis.Redis, start_worker: object) -> None:
    admin = redis.Redis.from_url(REDIS_URL)
    for n in range(30):
        jobs.Counted(n).dispatch()
        jobs.Record(n, sleep=0.1).dispatch()
    w = start_worker("--sleep", "0.1", "--quiet")
    stop = threading.Event()
    killer = threading.Thread(target=_kill_clients_repeatedly, args=(
        lambda: _kill_eventbus_clients(admin), stop))
    killer.start()
    try:
        wait_for(lambda: len(use_redis.hgetall("trace:count")) == 30 and use_redis.llen("trace:ran") >= 30, timeout=60)
    finally:
        stop.set()
        killer.join()
    assert w.proc.poll() is None, "the worker must survive lost connections"
    w.signal(signal.SIGTERM)
    assert w.wait() == 0
    assert len(KILLED) >= 5, KILLED  # the worker's connections really were cut, repeatedly
    assert set(use_redis.hvals("trace:count")) == {b"1"}  # every job ran exactly once
    assert eventbus.connection().size() == 0


def test_worker_reconnects_after_postgres_drops_it(redis_client: redis.Redis, start_worker: object) -> None:
    reason = database_reason(PG_URL)
    if reason:
        pytest.skip(reason)
    eventbus.configure(default="database", connections={"database": {"driver": "database", "url": PG_URL}})
    # A queue of its own: no other worker on this database can take (and fail) the job.
    queue = f"pg-drop-{uuid.uuid4().hex[:8]}"
    # The worker's connections carry a name of their own, so the cut finds them, and only them.
    worker_url = sa.make_url(PG_URL).update_query_dict({"application_name": queue}).render_as_string(hide_password=False)
    w = start_worker("--sleep", "0.2", "--queue", queue, env={"EVENTBUS_CONNECTION": "database", "TEST_DB_URL": worker_url})
    time.sleep(1.5)
    workers = f"FROM pg_stat_activity WHERE application_name = '{queue}'"
    engine = sa.create_engine(PG_URL, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:  # the worker is connected (a loaded machine starts it slowly)
        wait_for(lambda: conn.execute(sa.text(f"SELECT count(*) {workers}")).scalar(), timeout=20)
        dropped = conn.execute(sa.text(f"SELECT count(pg_terminate_backend(pid)) {workers}")).scalar()
    engine.dispose()
    assert dropped and dropped >= 1
    jobs.Record(1).dispatch(queue=queue)
    try:
        wait_for(lambda: redis_client.lrange("trace:ran", 0, -1) == [b"1"], timeout=30)
    except AssertionError:
        waiting, failed = eventbus.connection().size(queue), len(eventbus.failed_store().all())
        w.kill()
        _, err = w.output()
        raise AssertionError(f"the job did not run in 30 s ({waiting} waiting, {failed} failed); "
                             f"the worker said:\n{err}") from None
    assert w.proc.poll() is None
    w.signal(signal.SIGTERM)
    assert w.wait() == 0
