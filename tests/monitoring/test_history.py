"""The metrics history on every state store (Redis, SQLite, PostgreSQL, MariaDB): one snapshot a
minute however many processes offer to take it, per queue with the backlog, kept for
``metrics_retention``; taken by real workers and by ``eventbus monitor``; read back downsampled."""

from __future__ import annotations

import pathlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
import sqlalchemy as sa
from apps import jobs
from helpers import MYSQL_URL, PG_URL, REDIS_URL, database_reason, run_worker, wait_for

import eventbus
from eventbus import runtime
from eventbus.errors import ConfigurationError
from eventbus.monitoring import keys
from eventbus.monitoring.history import (
    CATCH_UP_MINUTES,
    HistoryWriter,
    QueuePoint,
    Snapshot,
    downsample,
    read_snapshots,
)
from eventbus.monitoring.metrics import BUCKET_S, MetricsRecorder, Tally, bucket_of
from eventbus.state import StateStore

BACKENDS = ["redis", "sqlite", "postgres", "mariadb"]


def _empty(url: str) -> None:
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            for table in ("eventbus_state", "jobs"):
                if sa.inspect(conn).has_table(table):
                    conn.execute(sa.text(f"DELETE FROM {table}"))
    finally:
        engine.dispose()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> Iterator[str]:
    """The kind of store; the default connection ``under_test`` keeps its queues there."""
    if request.param == "redis":
        request.getfixturevalue("redis_client")
        conn: dict[str, Any] = {"driver": "redis", "url": REDIS_URL, "prefix": "history-test:", "block_for": 0}
    else:
        url = {"sqlite": f"sqlite:///{tmp_path}/history.sqlite3", "postgres": PG_URL, "mariadb": MYSQL_URL}[request.param]
        reason = None if request.param == "sqlite" else database_reason(url)
        if reason:
            pytest.skip(reason)
        if request.param != "sqlite":
            _empty(url)
        conn = {"driver": "database", "url": url}
    eventbus.configure(default="under_test", connections={"under_test": conn})
    yield request.param
    if request.param in ("postgres", "mariadb"):
        _empty(conn["url"])


def another_store(kind: str) -> StateStore:
    """A store of its own (its own client or connections) on the same server, as another process has."""
    from eventbus.state import RedisStateStore, SqlStateStore  # once the drivers are loaded

    conn = runtime.settings().connection_config("under_test")
    if kind == "redis":
        return RedisStateStore(redis.Redis.from_url(REDIS_URL), conn["prefix"], name="under_test")
    return SqlStateStore(conn["url"])


def seed(minute: int, store: StateStore) -> None:
    """Two queues' attempts in ``minute``, flushed as workers flush them."""
    recorder = MetricsRecorder("under_test")
    at = minute + 10
    for n in range(6):
        recorder.record("default", "shop.SendMail", "done", 0.5, wait_s=2.0, at=at)
    recorder.record("default", "shop.Charge", "failed", 1.5, wait_s=4.0, at=at)
    recorder.record("mail", "shop.SendMail", "released", 0.25, at=at)
    recorder.record("default", "shop.SendMail", "done", 9.0, at=minute + BUCKET_S + 1)  # the next minute
    recorder.flush(store)


def test_a_snapshot_sums_the_minute_per_queue_with_the_backlog(backend: str) -> None:
    store, minute = runtime.state(), bucket_of(time.time()) - 5 * BUCKET_S
    seed(minute, store)
    for n in range(3):
        jobs.Record(n).dispatch()

    assert HistoryWriter(store, "under_test", queue=eventbus.connection()).take(minute) is True

    [snapshot] = read_snapshots(store, "under_test", since=minute - 600)
    default, mail = snapshot.queues["default"], snapshot.queues["mail"]
    assert (default.tally.done, default.tally.failed, default.tally.processed) == (6, 1, 7)
    assert default.tally.avg_runtime_s == pytest.approx(4.5 / 7)
    assert default.tally.avg_wait_s == pytest.approx(16.0 / 7)
    assert default.backlog == 3  # the ready jobs when the snapshot was taken
    assert (mail.tally.released, mail.tally.processed, mail.backlog) == (1, 0, 0)
    # compact: one short JSON value for the minute
    raw = store.get(keys.snapshot("under_test", minute))
    assert raw is not None and len(raw) < 120 and raw.startswith('{"v":1,"q":{')


def test_many_writers_write_one_snapshot_a_minute(backend: str) -> None:
    """Eight processes (each with a store of its own) offer the same minute at once: one writes."""
    minute = bucket_of(time.time()) - 3 * BUCKET_S
    seed(minute, runtime.state())
    stores = [another_store(backend) for _ in range(8)]
    start, won = threading.Barrier(len(stores)), []

    def offer(store: StateStore) -> None:
        start.wait()
        won.append(HistoryWriter(store, "under_test").take(minute))

    threads = [threading.Thread(target=offer, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    try:
        assert sorted(won) == [False] * 7 + [True]
        [snapshot] = read_snapshots(runtime.state(), "under_test", since=minute)
        assert snapshot.queues["default"].tally.processed == 7
    finally:
        for store in stores:
            store.close()
            client = getattr(store, "redis", None)
            if client is not None:
                client.close()


def test_the_first_offer_catches_up_then_each_minute_once(backend: str) -> None:
    store, now = runtime.state(), float(bucket_of(time.time()) + 45)
    writer = HistoryWriter(store, "under_test", settle_s=30)
    written = writer.take_due(now=now)
    assert len(written) == CATCH_UP_MINUTES and written[-1] == bucket_of(now) - BUCKET_S
    assert writer.take_due(now=now + 5) == []  # nothing new
    assert writer.take_due(now=now + BUCKET_S) == [bucket_of(now)]
    # a process started later finds them taken: it writes nothing
    assert HistoryWriter(store, "under_test", settle_s=30).take_due(now=now + BUCKET_S) == []
    assert len(read_snapshots(store, "under_test", since=now - 3600)) == CATCH_UP_MINUTES + 1


def test_snapshots_expire_after_the_retention(backend: str) -> None:
    minute = bucket_of(time.time()) - 2 * BUCKET_S
    eventbus.configure(default="under_test", connections={"under_test": runtime.settings().connection_config(
        "under_test")}, metrics_retention=1.5)
    store = runtime.state()
    assert HistoryWriter(store, "under_test").take(minute) is True
    assert len(read_snapshots(store, "under_test", since=minute)) == 1
    wait_for(lambda: read_snapshots(store, "under_test", since=minute) == [], timeout=20, interval=0.2)
    assert HistoryWriter(store, "under_test").take(minute) is True  # expired: the minute is free again


def test_a_writer_that_fails_gives_the_minute_back(backend: str) -> None:
    class Broken(HistoryWriter):
        def build(self, minute: int) -> Snapshot:
            raise RuntimeError("scan failed")

    store, minute = runtime.state(), bucket_of(time.time()) - 4 * BUCKET_S
    with pytest.raises(RuntimeError):
        Broken(store, "under_test").take(minute)
    assert HistoryWriter(store, "under_test").take(minute) is True


def test_a_worker_takes_the_snapshots_of_the_minutes_before_it_started(
        use_redis: redis.Redis, start_worker: Any) -> None:
    minute = bucket_of(time.time()) - 5 * BUCKET_S
    recorder = MetricsRecorder("redis")
    for _ in range(4):
        recorder.record("default", "apps.jobs.Record", "done", 0.1, wait_s=1.0, at=minute + 5)
    recorder.flush(runtime.state())
    jobs.Record(1).dispatch()

    code, _, err = run_worker(start_worker, "--stop-when-empty", "--sleep", "0", "--app", "apps.jobs")

    assert code == 0, err
    found = {s.minute: s for s in read_snapshots(runtime.state(), "redis", since=minute - 3600)}
    assert len(found) >= CATCH_UP_MINUTES and found[minute].queues["default"].tally.done == 4
    assert found[minute].queues["default"].backlog in (0, 1)  # the job waiting, or taken already


def test_eventbus_monitor_takes_the_snapshots(backend: str) -> None:
    if backend != "sqlite":
        pytest.skip("one CLI test is enough: the writer is the same on every store")
    from click.testing import CliRunner

    from eventbus.cli import main

    minute = bucket_of(time.time()) - 2 * BUCKET_S
    seed(minute, runtime.state())
    jobs.Record(1).dispatch()
    result = CliRunner().invoke(main, ["monitor", "--max", "100"])
    assert result.exit_code == 0, result.output
    found = {s.minute: s for s in read_snapshots(runtime.state(), "under_test", since=minute - 3600)}
    assert len(found) == CATCH_UP_MINUTES and found[minute].queues["default"].backlog == 1
    assert found[minute].queues["default"].tally.processed == 7


# -- reading: downsampling, configuration ----------------------------------------------------------

def snapshot(minute: int, done: float, runtime_s: float, backlog: int | None = None) -> Snapshot:
    return Snapshot(minute, {"default": QueuePoint(Tally(done=done, runtime=runtime_s), backlog)})


def test_downsampling_averages_jobs_not_minutes_and_keeps_gaps() -> None:
    hour = 1_764_000_000 // 3600 * 3600
    kept = [snapshot(hour, done=1, runtime_s=10.0, backlog=4),  # one slow job
            snapshot(hour + 60, done=9, runtime_s=9.0, backlog=12),  # nine quick ones
            snapshot(hour + 120, done=0, runtime_s=0.0, backlog=2),
            snapshot(hour + 7200, done=5, runtime_s=5.0)]
    first, second, third = downsample(kept, hour, hour + 3 * 3600 - 1, 3600)
    assert first.at == hour and first.point is not None
    assert first.point.tally.processed == 10 and first.point.tally.avg_runtime_s == pytest.approx(1.9)
    assert first.point.backlog == 12  # the peak of the hour
    assert second.point is None  # nothing was watching: a gap, not a zero
    assert third.point is not None and third.point.tally.done == 5 and third.point.backlog is None
    assert third.to_dict()["processed"] == 5 and second.to_dict()["processed"] is None


def test_a_damaged_or_unfinished_snapshot_is_skipped() -> None:
    assert Snapshot.from_json(60, "taking 1234") is None
    assert Snapshot.from_json(60, '{"v":1,"q":{"default":[1,2]}}') is None
    good = snapshot(60, done=2, runtime_s=1.0, backlog=3)
    again = Snapshot.from_json(60, good.to_json())
    assert again is not None and again.queues["default"].tally.done == 2 and again.queues["default"].backlog == 3


def test_metrics_retention_is_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert eventbus.configure().metrics_retention_s == 7 * 24 * 3600
    assert eventbus.configure(metrics_retention=3600).metrics_retention_s == 3600
    monkeypatch.setenv("EVENTBUS_METRICS_RETENTION", "86400")
    assert eventbus.configure().metrics_retention_s == 86400
    with pytest.raises(ConfigurationError, match="'metrics_retention' must be a number of seconds > 0"):
        eventbus.configure(metrics_retention=0)
