"""One contract for every batch store: Redis (Lua), SQLite, PostgreSQL and MariaDB (one
transaction per step) and memory: the rules of :mod:`eventbus.batching.rules`, each step safe to
repeat, and concurrent outcomes deciding each callback exactly once."""

from __future__ import annotations

import pathlib
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from helpers import MYSQL_URL, PG_URL, REDIS_URL, database_reason

import eventbus
from eventbus.batching.repository import BatchRepository, MemoryBatchRepository
from eventbus.batching.stores import repository

BACKENDS = ["memory", "redis", "sqlite", "postgres", "mariadb"]
TABLES = ("eventbus_batches", "eventbus_batch_jobs", "eventbus_batch_outbox")


def _drop_tables(url: str) -> None:
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            for table in TABLES:
                conn.execute(sa.text(f"DROP TABLE IF EXISTS {table}"))
    finally:
        engine.dispose()


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[BatchRepository]:
    if request.param == "memory":  # configure() closed the last test's connection: this one starts empty
        conn: dict[str, Any] = {"driver": "memory"}
    elif request.param == "redis":
        request.getfixturevalue("redis_client")
        conn = {"driver": "redis", "url": REDIS_URL, "prefix": "batch-test:"}
    else:
        url = {"sqlite": f"sqlite:///{tmp_path}/batches.sqlite3", "postgres": PG_URL,
               "mariadb": MYSQL_URL}[request.param]
        reason = None if request.param == "sqlite" else database_reason(url)
        if reason:
            pytest.skip(reason)
        if request.param != "sqlite":
            _drop_tables(url)
        conn = {"driver": "database", "url": url}
    eventbus.configure(default="under_test", connections={"under_test": conn})
    found = repository()
    assert isinstance(found, MemoryBatchRepository) == (request.param == "memory")
    yield found


def describe(**callbacks: int) -> dict[str, Any]:
    """A description with ``n`` placeholder callbacks of each kind named."""
    allow = bool(callbacks.pop("allow_failures", 0))
    return {"name": "contract", "allow_failures": allow,
            "callbacks": {kind: [{"placeholder": i} for i in range(n)] for kind, n in callbacks.items()}}


def keys(found: list[Any] | None) -> list[str]:
    assert found is not None
    return [d.key for d in found]


def test_creating_twice_creates_once_and_reads_back(store: BatchRepository) -> None:
    assert store.create("b1", describe(then=1), 3, owner="b1") == []
    assert store.create("b1", describe(then=1), 9, owner="b1") == []
    found = store.find("b1")
    assert found is not None
    assert (found.name, found.total, found.pending, found.failed, found.finished_at) == ("contract", 3, 3, 0, None)
    assert store.description("b1") == describe(then=1)
    assert store.ids() == ["b1"]
    assert store.find("nope") is None and store.description("nope") is None


def test_a_success_counts_once_and_the_last_one_makes_then_and_finally_due(store: BatchRepository) -> None:
    store.create("b", describe(then=1, **{"finally": 1}), 2, owner="b")
    assert keys(store.record("b", "j1", True)) == []
    assert keys(store.record("b", "j1", True)) == []  # ran twice: counted once
    assert store.find("b").pending == 1  # type: ignore[union-attr]
    assert keys(store.record("b", "j2", True)) == ["then", "finally"]
    found = store.find("b")
    assert found is not None and found.pending == 0 and found.finished_at is not None
    # the same job reporting again (its worker died before pushing) gets them again, until marked
    assert keys(store.record("b", "j2", True)) == ["then", "finally"]
    assert keys(store.record("b", "j1", True)) == []  # owned by j2 only
    store.mark_pushed("b", ["then"])
    assert keys(store.record("b", "j2", True)) == ["finally"]
    store.mark_pushed("b", ["finally"])
    assert keys(store.record("b", "j2", True)) == []


def test_the_first_failure_cancels_makes_catch_due_and_settles_unrun_steps(store: BatchRepository) -> None:
    store.create("b", describe(then=1, catch=1, **{"finally": 1}), 4, owner="b")
    due = store.record("b", "j1", False, unrun=["j2", "j3"], failure="ValueError: boom")
    assert due is not None and [(d.key, d.failure) for d in due] == [("catch", "ValueError: boom")]
    found = store.find("b")
    assert found is not None and found.cancelled_at is not None
    assert (found.failed, found.failed_job_ids, found.finished_at) == (3, ("j1", "j2", "j3"), None)
    assert keys(store.record("b", "j1", False, failure="ValueError: again")) == ["catch"]  # no second count
    assert store.find("b").failed == 3  # type: ignore[union-attr]
    assert keys(store.record("b", "j4", True)) == ["finally"]  # then: not after a cancel
    assert store.find("b").finished_at is not None  # type: ignore[union-attr]


def test_allowed_failures_call_back_per_failure_and_do_not_cancel(store: BatchRepository) -> None:
    store.create("b", describe(allow_failures=1, then=1, catch=1, failure=1, progress=1), 3, owner="b")
    assert keys(store.record("b", "j1", True)) == ["progress:j1:ok"]
    assert keys(store.record("b", "j2", False, failure="E: x")) == ["progress:j2:fail", "failure:j2", "catch"]
    assert keys(store.record("b", "j3", False, failure="E: y")) == ["progress:j3:fail", "failure:j3"]
    found = store.find("b")
    assert found is not None and found.cancelled_at is None and found.finished_at is not None
    store.mark_pushed("b", ["progress:j3:fail", "failure:j3"])
    assert keys(store.record("b", "j3", False, failure="E: y")) == []  # per-job ones go for good


def test_a_retried_failure_that_succeeds_counts_as_a_success(store: BatchRepository) -> None:
    store.create("b", describe(allow_failures=1, then=1, **{"finally": 1}), 2, owner="b")
    store.record("b", "j1", True)
    assert keys(store.record("b", "j2", False, failure="E: x")) == ["finally"]
    store.mark_pushed("b", ["finally"])
    assert keys(store.record("b", "j2", True)) == ["then"]  # eventbus retry-batch, say
    found = store.find("b")
    assert found is not None and (found.pending, found.failed, found.failed_job_ids) == (0, 0, ())
    assert keys(store.record("b", "j2", False, failure="E: late")) == ["then"]  # a success is final
    assert store.find("b").failed == 0  # type: ignore[union-attr]


def test_an_empty_batch_is_finished_at_once(store: BatchRepository) -> None:
    assert keys(store.create("e", describe(then=1, catch=1, **{"finally": 1}), 0, owner="me")) == ["then", "finally"]
    assert store.find("e").finished_at is not None  # type: ignore[union-attr]
    assert keys(store.create("e", describe(then=1), 0, owner="me")) == ["then", "finally"]  # until marked
    store.mark_pushed("e", ["then", "finally"])
    assert store.create("e", describe(then=1), 0, owner="me") == []


def test_added_jobs_cancel_delete_and_a_missing_batch(store: BatchRepository) -> None:
    store.create("b", describe(then=1), 1, owner="b")
    assert store.add_jobs("b", 2)
    assert (store.find("b").total, store.find("b").pending) == (3, 3)  # type: ignore[union-attr]
    assert store.cancel("b") and not store.cancel("b")
    assert store.delete("b") and not store.delete("b")
    assert store.record("b", "j1", True) is None
    assert not store.add_jobs("b", 1) and not store.cancel("b") and store.ids() == []


def test_callback_jobs_note_that_they_ran(store: BatchRepository) -> None:
    store.create("b", describe(then=1), 1, owner="b")
    assert store.callbacks_ran("b", ["c1", "c2"]) == set()
    store.callback_ran("b", "c2")
    store.callback_ran("b", "c2")
    assert store.callbacks_ran("b", ["c1", "c2"]) == {"c2"}


def test_concurrent_outcomes_make_each_callback_due_exactly_once(store: BatchRepository) -> None:
    jobs, threads = 120, 6
    store.create("b", describe(then=1, catch=1, **{"finally": 1}), jobs, owner="b")
    seen: list[str] = []
    lock = threading.Lock()

    def report(part: int) -> None:
        for n in range(part, jobs, threads):
            for _ in range(2):  # each job reports twice, as a job whose worker died would
                due = store.record("b", f"j{n}", n % 40 != 7, failure="E: x") or []
                with lock:
                    seen.extend(f"{d.key}@{n}" for d in due)
                store.mark_pushed("b", [d.key for d in due])

    workers = [threading.Thread(target=report, args=(p,)) for p in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    found = store.find("b")
    assert found is not None
    assert (found.total, found.pending, found.failed, found.finished_at is not None) == (jobs, 3, 3, True)
    assert sorted(key.split("@")[0] for key in seen) == ["catch", "finally"]


def test_the_job_names_the_outcomes_know_are_the_registered_ones() -> None:
    from eventbus import registry
    from eventbus.batches import ChainedBatch
    from eventbus.batching.callbacks import CallBatchCallback
    from eventbus.batching.records import CALLS_FUNCTION, HANDS_ON

    assert (registry.dotted_name(ChainedBatch), registry.dotted_name(CallBatchCallback)) == (HANDS_ON, CALLS_FUNCTION)


def test_migrate_creates_the_batch_tables(tmp_path: pathlib.Path) -> None:
    url = f"sqlite:///{tmp_path}/migrated.sqlite3"
    eventbus.configure(default="db", connections={"db": {"driver": "database", "url": url}})
    from eventbus import runtime
    assert "db: batches eventbus_batches, eventbus_batch_jobs, eventbus_batch_outbox ready" in runtime.migrate()
    engine = sa.create_engine(url)
    assert set(TABLES) <= set(sa.inspect(engine).get_table_names())
    engine.dispose()
