"""One contract for every state store: Redis, SQLite, PostgreSQL, MariaDB and memory.

Includes expiry on the store's clock and two processes contending for the same keys.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
import sqlalchemy as sa

import eventbus
from eventbus import runtime
from eventbus.state import MemoryStateStore, RedisStateStore, SqlStateStore, StateStore
from helpers import MYSQL_URL, PG_URL, REDIS_URL, ROOT, TESTS, database_reason

BACKENDS = ["redis", "sqlite", "postgres", "mariadb", "memory"]


def connection_for(name: str, tmp_path: pathlib.Path) -> dict[str, Any]:
    if name == "redis":
        return {"driver": "redis", "url": REDIS_URL, "prefix": "state-test:"}
    url = {"sqlite": f"sqlite:///{tmp_path}/state.sqlite3", "postgres": PG_URL, "mariadb": MYSQL_URL}[name]
    reason = None if name == "sqlite" else database_reason(url)
    if reason:
        pytest.skip(reason)
    return {"driver": "database", "url": url}


def _empty_sql_table(url: str) -> None:
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            if sa.inspect(conn).has_table("eventbus_state"):
                conn.execute(sa.text("DELETE FROM eventbus_state"))
    finally:
        engine.dispose()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> tuple[str, dict[str, Any] | None]:
    if request.param == "memory":  # configure() closed the last test's connection: this one starts empty
        return "memory", {"driver": "memory"}
    if request.param == "redis":
        request.getfixturevalue("redis_client")
    conn = connection_for(request.param, tmp_path)
    if request.param in ("postgres", "mariadb"):
        _empty_sql_table(conn["url"])
    return request.param, conn


@pytest.fixture
def store(backend: tuple[str, dict[str, Any] | None]) -> Iterator[StateStore]:
    name, conn = backend
    assert conn is not None
    eventbus.configure(default="under_test", connections={"under_test": conn})
    found = runtime.state()
    assert isinstance(found, MemoryStateStore) == (name == "memory")
    yield found


def test_put_get_delete(store: StateStore) -> None:
    assert store.get("a") is None
    store.put("a", "1")
    store.put("a", "two ✓")
    assert store.get("a") == "two ✓"
    assert store.delete("a") is True
    assert store.delete("a") is False
    assert store.get("a") is None


def test_add_is_a_lock_and_delete_if_releases_only_your_own(store: StateStore) -> None:
    assert store.add("lock", "me", ttl_s=30) is True
    assert store.add("lock", "you", ttl_s=30) is False
    assert store.get("lock") == "me"
    assert store.delete_if("lock", "you") is False
    assert store.get("lock") == "me"
    assert store.delete_if("lock", "me") is True
    assert store.add("lock", "you") is True


def test_incr_counts_from_zero_and_takes_fractions(store: StateStore) -> None:
    assert store.incr("n") == 1
    assert store.incr("n", 2) == 3
    assert store.incr("n", 0.5) == 3.5
    assert store.incr("n", -1.5) == 2
    assert float(store.get("n") or "nan") == 2
    store.incr_many({"m:a": 1, "m:b": 2.5})
    store.incr_many({"m:a": 1})
    assert {k: float(v) for k, v in store.scan("m:").items()} == {"m:a": 2, "m:b": 2.5}


def test_scan_lists_live_keys_by_exact_prefix(store: StateStore) -> None:
    store.put_many({"w:1": "a", "w:2": "b", "w:%": "percent", "W:3": "upper", "x:1": "c"})
    store.put("w:gone", "soon", ttl_s=0.2)
    store.put("w_", "underscore")
    time.sleep(0.4)
    assert store.scan("w:") == {"w:1": "a", "w:2": "b", "w:%": "percent"}
    assert store.scan("W:") == {"W:3": "upper"}
    assert store.scan("nothing:") == {}


def test_keys_differ_by_case(store: StateStore) -> None:
    store.put("Key", "upper")
    store.put("key", "lower")
    assert (store.get("Key"), store.get("key")) == ("upper", "lower")


def test_expiry(store: StateStore) -> None:
    store.put("p", "v", ttl_s=0.3)
    assert store.add("l", "first", ttl_s=0.3) is True
    assert store.get("p") == "v"
    time.sleep(0.5)
    assert store.get("p") is None
    assert store.delete_if("l", "first") is False  # expired: not yours to release any more
    assert store.add("l", "second", ttl_s=5) is True, "an expired lock can be taken"
    assert store.get("l") == "second"
    store.put("p", "forever", ttl_s=0.2)
    store.put("p", "forever")  # put replaces the TTL too
    time.sleep(0.3)
    assert store.get("p") == "forever"


def test_incr_sets_the_ttl_when_it_creates_the_key_only(store: StateStore) -> None:
    store.get("warm-up")  # connected, table created: the clock below times the counter only
    assert store.incr("window", ttl_s=1.0) == 1
    created = time.monotonic()
    time.sleep(0.5)
    second = store.incr("window", ttl_s=1.0)
    if time.monotonic() - created < 0.9:  # not when this machine stalled past the window
        assert second == 2
    time.sleep(max(created + 1.25 - time.monotonic(), 0))
    assert store.get("window") is None, "a later incr must not extend the window"
    assert store.incr("window", ttl_s=5) == 1, "an expired counter starts again from zero"


def test_bad_arguments_are_refused(store: StateStore) -> None:
    for key in ("", "x" * 256, "nul\x00"):
        with pytest.raises(ValueError):
            store.put(key, "v")
    with pytest.raises(ValueError):
        store.put("k", "v", ttl_s=0)
    with pytest.raises(ValueError):
        store.incr("k", float("nan"))
    with pytest.raises(TypeError):
        store.put("k", 1)  # type: ignore[arg-type]
    store.put("x" * 255, "the longest key")
    assert store.get("x" * 255) == "the longest key"


def test_two_processes_contend_for_locks_and_counters(backend: tuple[str, dict[str, Any] | None]) -> None:
    name, conn = backend
    if name == "memory":
        pytest.skip("a memory connection's store lives in one process")
    env = {**os.environ, "PYTHONPATH": f"{TESTS}{os.pathsep}{ROOT}"}
    start_at = f"{time.time() + 2.0:.3f}"
    procs = [subprocess.Popen([sys.executable, str(TESTS / "apps" / "state_race.py"), json.dumps(conn),
                               start_at, me], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, start_new_session=True) for me in ("a", "b")]
    outputs = [p.communicate(timeout=90) for p in procs]
    assert all(p.returncode == 0 for p in procs), outputs
    won_a, won_b = (set(json.loads(out)) for out, _ in outputs)
    assert won_a.isdisjoint(won_b) and won_a | won_b == set(range(40)), (won_a, won_b)
    eventbus.configure(default="under_test", connections={"under_test": conn})
    store = runtime.state()
    assert all(store.get(f"race:lock:{i}") == ("a" if i in won_a else "b") for i in range(40))
    assert float(store.get("race:counter") or 0) == 300
    assert float(store.get("race:many:a") or 0) == 2 and float(store.get("race:many:b") or 0) == 1


def test_each_connection_has_its_own_store(redis_client: redis.Redis, tmp_path: pathlib.Path) -> None:
    sqlite_url = f"sqlite:///{tmp_path}/own.sqlite3"
    eventbus.configure(default="db", connections={
        "db": {"driver": "database", "url": sqlite_url},
        "cache": {"driver": "redis", "url": REDIS_URL, "prefix": "myapp:"}})
    db, cache = runtime.state(), runtime.state("cache")
    assert runtime.state("db") is db
    assert isinstance(db, SqlStateStore) and isinstance(cache, RedisStateStore)
    cache.put("k", "in redis")
    db.put("k", "in sqlite")
    assert redis_client.get("myapp:state:k") == b"in redis"
    assert cache.redis is eventbus.connection("cache").redis  # type: ignore[attr-defined]
    with sa.create_engine(sqlite_url).connect() as conn:
        assert conn.execute(sa.text("SELECT value FROM eventbus_state WHERE key = 'k'")).scalar() == "in sqlite"


def test_drivers_without_a_server_use_the_embedded_sqlite_file(tmp_path: pathlib.Path) -> None:
    from eventbus.config import DEFAULT_SQLITE_URL
    from eventbus.state import EMBEDDED_SQLITE_URL

    assert EMBEDDED_SQLITE_URL == DEFAULT_SQLITE_URL
    eventbus.configure(default="sync")
    store = runtime.state()
    assert isinstance(store, SqlStateStore) and store.url == EMBEDDED_SQLITE_URL
    store.put("k", "v")
    assert (tmp_path / "eventbus.sqlite3").exists()


def test_sql_expiry_is_written_on_the_server_clock(backend: tuple[str, dict[str, Any] | None]) -> None:
    name, conn = backend
    if conn is None or conn["driver"] != "database":
        pytest.skip("SQL stores only")
    eventbus.configure(default="under_test", connections={"under_test": conn})
    store = runtime.state()
    assert isinstance(store, SqlStateStore)
    store.put("clock", "v", ttl_s=100)
    with store.engine.connect() as c:
        expires, now = c.execute(sa.select(store.table.c.expires_at, store.now).where(
            store.table.c.key == "clock")).one()
    assert 99 < float(expires) - float(now) <= 100


def test_reading_never_creates_the_sqlite_file(tmp_path: pathlib.Path) -> None:
    store = SqlStateStore(f"sqlite:///{tmp_path}/absent.sqlite3")
    assert store.get("k") is None and store.scan("") == {}
    assert not (tmp_path / "absent.sqlite3").exists()
    store.put("k", "v")
    assert store.get("k") == "v"
