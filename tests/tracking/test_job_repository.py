"""One contract for the recent-jobs store on every backend: Redis, SQLite, PostgreSQL, MariaDB
and memory. Records by status and tag, newest first; retention per status and for monitored
tags; lazy trimming; a uuid recorded again replaces its record; connections kept apart."""

from __future__ import annotations

import pathlib
import time
from typing import Any

import pytest
import sqlalchemy as sa

import eventbus
from eventbus.tracking import COMPLETED, FAILED, JobRecord, MemoryJobRepository, repository
from eventbus.tracking.sql import table_names
from helpers import MYSQL_URL, PG_URL, REDIS_URL, database_reason

BACKENDS = ["redis", "sqlite", "postgres", "mariadb", "memory"]
RETENTION = {"completed": 3600.0, "failed": 7200.0, "monitored": 86400.0}


def _empty_sql_tables(url: str) -> None:
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            for table in table_names():
                if sa.inspect(conn).has_table(table):
                    conn.execute(sa.text(f"DELETE FROM {table}"))
    finally:
        engine.dispose()


@pytest.fixture(params=BACKENDS)
def connection(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> dict[str, Any]:
    if request.param == "memory":
        return {"driver": "memory"}
    if request.param == "redis":
        request.getfixturevalue("redis_client")  # an empty database
        return {"driver": "redis", "url": REDIS_URL}
    url = {"sqlite": f"sqlite:///{tmp_path}/jobs.sqlite3", "postgres": PG_URL, "mariadb": MYSQL_URL}[request.param]
    reason = None if request.param == "sqlite" else database_reason(url)
    if reason:
        pytest.skip(reason)
    if request.param != "sqlite":
        _empty_sql_tables(url)
    return {"driver": "database", "url": url}


@pytest.fixture
def configured(connection: dict[str, Any]) -> None:
    eventbus.configure(default="one", connections={"one": connection, "two": connection})


def job(uuid: str, status: str = COMPLETED, *, tags: tuple[str, ...] = (), ago_s: float = 0.0,
        name: str = "shop.jobs.Ship", connection: str = "one") -> JobRecord:
    finished = time.time() - ago_s
    return JobRecord(uuid=uuid, name=name, connection=connection, queue="default", status=status, tags=tags,
                     attempts=1, pushed_at=finished - 1, started_at=finished - 0.5, finished_at=finished,
                     runtime_s=0.5, exception="RuntimeError: no" if status == FAILED else "",
                     command="shop.jobs.Ship")


@pytest.mark.usefixtures("configured")
def test_records_are_listed_by_status_and_tag_newest_first() -> None:
    store = repository("one")
    store.record([job("a", ago_s=30, tags=("order:1",)), job("b", ago_s=20, tags=("order:1", "vip")),
                  job("c", FAILED, ago_s=10, tags=("order:2",))], RETENTION)
    assert [r.uuid for r in store.recent()] == ["c", "b", "a"]
    assert [r.uuid for r in store.recent(COMPLETED)] == ["b", "a"]
    assert [r.uuid for r in store.recent(FAILED)] == ["c"]
    assert [r.uuid for r in store.recent(tag="order:1")] == ["b", "a"]
    assert [r.uuid for r in store.recent(FAILED, tag="order:1")] == []
    assert [r.uuid for r in store.recent(COMPLETED, tag="order:1", limit=1)] == ["b"]
    [c] = store.recent(FAILED)
    assert c.tags == ("order:2",) and c.status == FAILED and c.connection == "one"
    assert (c.name, c.queue, c.attempts, c.exception, c.command) == (
        "shop.jobs.Ship", "default", 1, "RuntimeError: no", "shop.jobs.Ship")


@pytest.mark.usefixtures("configured")
def test_a_uuid_recorded_again_is_listed_once_with_its_last_status() -> None:
    store = repository("one")
    store.record([job("a", FAILED, ago_s=10, tags=("t",))], RETENTION)
    store.record([job("a", COMPLETED, tags=("t",))], RETENTION)  # retried, then it succeeded
    assert [(r.uuid, r.status) for r in store.recent()] == [("a", COMPLETED)]
    assert store.recent(FAILED) == [] and [r.uuid for r in store.recent(tag="t")] == ["a"]


@pytest.mark.usefixtures("configured")
def test_one_record_is_found_by_its_uuid_while_it_is_kept() -> None:
    store = repository("one")
    kept = job("a", tags=("order:1", "vip"))
    store.record([kept, job("old", ago_s=3700), job("f", FAILED, ago_s=10)], RETENTION)
    assert store.find("a") == kept  # every field, times included
    assert store.find("f").status == FAILED  # type: ignore[union-attr]
    assert store.find("old") is None  # a completed job's hour is over
    assert store.find("nope") is None and store.find("") is None
    assert repository("two").find("a") is None  # another connection's records


@pytest.mark.usefixtures("configured")
def test_expired_records_are_never_listed_and_trimmed_on_the_next_write() -> None:
    store = repository("one")
    store.record([job("old", ago_s=3700, tags=("t",)), job("old-failure", FAILED, ago_s=3700),
                  job("new", tags=("t",))], RETENTION)
    assert [r.uuid for r in store.recent(COMPLETED)] == ["new"]  # an hour for completed jobs
    assert [r.uuid for r in store.recent(FAILED)] == ["old-failure"]  # two for failures
    assert [r.uuid for r in store.recent(tag="t")] == ["new"]


@pytest.mark.usefixtures("configured")
def test_a_monitored_tag_keeps_its_jobs_longer_and_counts_them() -> None:
    store = repository("one")
    assert store.watch("vip") is True and store.watch("vip") is False
    assert store.monitored() == ["vip"]
    store.record([job("kept", ago_s=5000, tags=("vip",)), job("dropped", ago_s=5000, tags=("other",)),
                  job("fresh", tags=("vip", "other"))], RETENTION)
    assert [r.uuid for r in store.recent(tag="vip")] == ["fresh", "kept"]  # a day for monitored tags
    assert [r.uuid for r in store.recent(tag="other")] == ["fresh"]
    assert store.count("vip", RETENTION) == 2 and store.count("none", RETENTION) == 0
    # "dropped" is no longer listed (a completed job's hour is over), but still counted: the
    # index of a tag that is not monitored keeps its jobs for the longest status's retention
    assert store.count("other", RETENTION) == 2
    assert store.unwatch("vip") is True and store.unwatch("vip") is False and store.monitored() == []


@pytest.mark.usefixtures("configured")
def test_connections_keep_their_own_records_and_monitored_tags() -> None:
    one, two = repository("one"), repository("two")
    one.record([job("a", tags=("t",))], RETENTION)
    two.record([job("b", tags=("t",), connection="two")], RETENTION)
    one.watch("t")
    assert [r.uuid for r in one.recent(tag="t")] == ["a"] and [r.uuid for r in two.recent()] == ["b"]
    assert one.monitored() == ["t"] and two.monitored() == []


@pytest.mark.usefixtures("configured")
def test_bad_arguments_are_refused_before_any_round_trip() -> None:
    store = repository("one")
    with pytest.raises(ValueError, match="status must be one of completed, failed"):
        store.recent("pending")
    with pytest.raises(ValueError, match="a tag is non-empty text"):
        store.watch("x" * 200)
    with pytest.raises(ValueError, match="a tag is non-empty text"):
        store.recent(tag="")
    assert store.recent(limit=-5) == []


def test_the_memory_repository_keeps_the_contract_without_configuration() -> None:
    store = MemoryJobRepository("one")
    store.record([job("a", tags=("t",))], RETENTION)
    assert [r.uuid for r in store.recent(tag="t")] == ["a"]


def test_retention_and_silenced_are_checked_by_configure() -> None:
    current = eventbus.configure(retention={"completed": 120}, silenced=["shop.jobs.Ping"])
    assert current.retention_s == {"completed": 120.0, "failed": 604800.0, "monitored": 604800.0}
    assert current.silenced == frozenset({"shop.jobs.Ping"})
    assert eventbus.configure().retention_s == {"completed": 3600.0, "failed": 604800.0, "monitored": 604800.0}
    assert eventbus.configure(retention={"completed": 0}).retention_s["completed"] == 0.0  # none kept
    for bad, message in (({"recent": 60}, "'retention' has unknown kind 'recent'"),
                         ({"completed": -1}, "'retention' for 'completed' must be a number of seconds >= 0"),
                         ([60], "'retention' must be a dict of kind -> seconds")):
        with pytest.raises(eventbus.ConfigurationError, match=message):
            eventbus.configure(retention=bad)
    with pytest.raises(eventbus.ConfigurationError, match="'silenced' must be a list of job class names"):
        eventbus.configure(silenced="shop.jobs.Ping")


class Noted(eventbus.Job):
    def __init__(self, n: int) -> None:
        self.n = n

    def tags(self) -> list[str]:
        return [f"n:{self.n}"]

    def handle(self) -> None:
        if self.n == 2:
            raise RuntimeError("two")


def test_a_worker_on_the_memory_driver_records_what_it_finished() -> None:
    from eventbus.testing import memory_queue

    with memory_queue() as run:
        done, failed = Noted(1).dispatch(), Noted(2).dispatch()
        assert run.drain() == 2
        store = repository()
        assert [(r.uuid, r.status, r.tags) for r in store.recent()] in (
            [(failed, FAILED, ("n:2",)), (done, COMPLETED, ("n:1",))],
            [(done, COMPLETED, ("n:1",)), (failed, FAILED, ("n:2",))])  # the same instant, or not
        [failure] = store.recent(FAILED)
        assert failure.exception == "RuntimeError: two" and failure.name.endswith("Noted")
