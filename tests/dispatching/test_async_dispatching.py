"""``await adispatch`` / ``adispatch_many`` / ``aemit``: the sync verbs' behaviour, pushed without
blocking the loop (natively on Redis, on a worker thread elsewhere)."""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import json
import sys
import threading
from collections.abc import Awaitable, Iterator
from typing import Any, TypeVar
from urllib.parse import urlsplit

import pytest
import redis
from apps import jobs
from helpers import PG_URL, REDIS_URL, database_reason, run_worker, traces
from proxies import TcpProxy

import eventbus
from eventbus.contrib import aio
from eventbus.errors import ConfigurationError
from eventbus.testing import fake_queue
from listeners import listener

T = TypeVar("T")


class Ping(eventbus.Job):
    def __init__(self, n: int = 0) -> None:
        self.n = n

    def handle(self) -> None: ...


class Once(Ping):
    unique = True

    def unique_id(self) -> str:
        return str(self.n)


RAN: list[tuple[int, str]] = []


class RunsHere(Ping):
    async def handle(self) -> None:
        RAN.append((self.n, threading.current_thread().name))


@dataclasses.dataclass
class Shipped(eventbus.Event):
    order_id: int


@pytest.fixture
def shop_listeners() -> object:
    """The app module the worker loads, (re)imported so its listeners are registered here too."""
    if "apps.shop_listeners" in sys.modules:
        return importlib.reload(sys.modules["apps.shop_listeners"])
    return importlib.import_module("apps.shop_listeners")


@pytest.fixture
def slow_redis(redis_client: redis.Redis) -> Iterator[TcpProxy]:
    """The default connection is Redis behind a link that holds every reply 0.1 s."""
    target = urlsplit(REDIS_URL)
    proxy = TcpProxy(target.hostname or "127.0.0.1", target.port or 6379)
    eventbus.configure(default="redis", connections={"redis": {"driver": "redis",
                                                               "url": proxy.url(int(target.path[1:] or 0))}})
    yield proxy
    proxy.close()


async def ticking_while(work: Awaitable[T]) -> tuple[T, int, set[str]]:
    """Await ``work`` while a task ticks every 5 ms; return its result, the ticks, and the names
    of the threads that appeared meanwhile."""
    ticks = 0
    before = set(threading.enumerate())  # threads, not names: an old asyncio_0 may still live
    appeared: set[str] = set()
    done = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            appeared.update(t.name for t in threading.enumerate() if t not in before)
            await asyncio.sleep(0.005)

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    try:
        result = await work
    finally:
        done.set()
        await task
    appeared.update(t.name for t in threading.enumerate() if t not in before)
    return result, ticks, appeared


def test_the_async_verbs_are_public_and_the_integrations_share_them() -> None:
    assert eventbus.adispatch is aio.adispatch and eventbus.adispatch_many is aio.adispatch_many
    assert eventbus.aemit is aio.aemit


@pytest.mark.integration
def test_jobs_pushed_by_await_reach_redis_and_a_worker_runs_them(
        use_redis: redis.Redis, start_worker: object, shop_listeners: Any) -> None:
    async def app() -> list[str | None]:
        first = await eventbus.adispatch(jobs.Record(1))
        rest = await eventbus.adispatch_many([jobs.Record(2), jobs.Record(3)])
        await eventbus.aemit(shop_listeners.Shipped(order_id=4, items=[5]))
        return [first, *rest]

    uuids = asyncio.run(app())
    queue = eventbus.connection()
    assert len(set(uuids)) == 3 and queue.size() == 4
    assert queue._async.clients.opened == 1  # type: ignore[attr-defined]  # pushed by redis.asyncio
    code, out, err = run_worker(start_worker, "--stop-when-empty", env={"EVENTBUS_APP": "apps.shop_listeners"})
    assert code == 0, out + err
    assert traces(use_redis, "ran") == ["1", "2", "3"] and traces(use_redis, "queued") == ["4:[5]"], out + err


@pytest.mark.integration
def test_the_loop_keeps_running_and_no_thread_starts_while_pushes_wait_on_a_slow_server(
        slow_redis: TcpProxy) -> None:
    @listener(queued=True, queue="mail")
    def send_mail(event: Shipped) -> None: ...

    async def pushes() -> int:
        await eventbus.adispatch(Ping(0))  # connected before the measuring starts
        slow_redis.reply_delay_s = 0.1

        async def many() -> int:
            for n in range(4):
                await eventbus.adispatch(Ping(n), delay=n)
            await eventbus.adispatch_many([Ping(5), Ping(6)])
            await eventbus.aemit(Shipped(7))
            return 6

        pushed, ticks, appeared = await ticking_while(many())
        assert ticks >= 60, ticks       # six pushes of >= 0.1 s each: ~120 ticks of 5 ms
        assert appeared == set()        # no worker thread (nor anything else) started
        return pushed

    assert asyncio.run(pushes()) == 6
    slow_redis.reply_delay_s = 0
    queue = eventbus.connection()
    assert queue.size() == 7 and queue.size("mail") == 1


@pytest.mark.integration
def test_aemit_pushes_delayed_queued_listeners_too_and_before_a_listener_raises(use_redis: redis.Redis) -> None:
    @listener(queued=True, queue="now")
    def now(event: Shipped) -> None: ...

    @listener(queued=True, queue="later", delay=60)
    def later(event: Shipped) -> None: ...

    @listener
    def broken(event: Shipped) -> None:
        raise RuntimeError("broken listener")

    with pytest.raises(RuntimeError):
        asyncio.run(eventbus.aemit(Shipped(1)))
    queue = eventbus.connection()
    assert queue.size("now") == 1 and queue.size("later") == 1
    assert use_redis.zcard("queues:{later}:delayed") == 1


def test_fakes_see_every_async_push() -> None:
    @listener(queued=True)
    def send_mail(event: Shipped) -> None: ...

    async def app() -> None:
        await eventbus.adispatch(Ping(1))
        await eventbus.adispatch_many([Ping(2), Ping(3)], queue="bulk")
        await eventbus.aemit(Shipped(4))

    with fake_queue() as queue:
        asyncio.run(app())
    queue.assert_pushed(Ping, times=3)
    queue.assert_pushed(send_mail, times=1)


@pytest.mark.integration
def test_a_bulk_block_collects_async_pushes_and_sends_them_when_it_ends(use_redis: redis.Redis) -> None:
    async def app() -> tuple[int, int]:
        with eventbus.bulk_pushes():
            await eventbus.adispatch(Ping(1))
            await eventbus.adispatch(Ping(2))
            inside = eventbus.connection().size()
        return inside, eventbus.connection().size()

    assert asyncio.run(app()) == (0, 2)


def test_an_inline_connection_runs_the_job_off_the_loop_before_the_push_returns() -> None:
    RAN.clear()

    async def app() -> str | None:
        uuid = await eventbus.adispatch(RunsHere(1), connection="sync")
        assert RAN and RAN[0][0] == 1
        return uuid

    assert asyncio.run(app()) is not None
    assert RAN[0][1] != threading.current_thread().name  # its own loop, on a worker thread


@pytest.mark.integration
def test_queue_events_and_checks_happen_as_with_dispatch(use_redis: redis.Redis) -> None:
    queued: list[eventbus.JobQueued] = []
    dropped: list[eventbus.JobNotQueuedAsDuplicate] = []

    async def on_queued(event: eventbus.JobQueued) -> None:  # async listeners are awaited
        await asyncio.sleep(0)
        queued.append(event)

    eventbus.listen(eventbus.JobQueued, on_queued)
    eventbus.listen(eventbus.JobNotQueuedAsDuplicate, dropped.append)

    class TooSlow(Ping):
        timeout = 120  # not below retry_after (90)

    async def app() -> tuple[str | None, str | None]:
        first = await eventbus.adispatch(Once(7), queue="q", delay=5)
        second = await eventbus.adispatch(Once(7), queue="q")
        with pytest.raises(ConfigurationError, match="retry_after"):
            await eventbus.adispatch(TooSlow())
        return first, second

    first, second = asyncio.run(app())
    assert first is not None and second is None
    assert [(e.queue, e.uuid, e.delay) for e in queued] == [("q", first, 5.0)]
    assert dropped[0].held_by == first
    assert eventbus.connection().size("q") == 1 and eventbus.connection().size() == 0


@pytest.mark.integration
def test_after_commit_pushes_wait_for_the_block(use_redis: redis.Redis) -> None:
    async def ship(fail: bool) -> int:
        with eventbus.after_commit():
            await eventbus.adispatch(Ping(1), after_commit=True)
            assert eventbus.connection().size() == 0
            if fail:
                raise ValueError("rolled back")
        return eventbus.connection().size()

    with pytest.raises(ValueError):
        asyncio.run(ship(fail=True))
    assert eventbus.connection().size() == 0
    assert asyncio.run(ship(fail=False)) == 1


@pytest.mark.integration
def test_the_payload_carries_the_trace_context(use_redis: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from eventbus.integrations import otel

    provider, exporter = TracerProvider(), InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    otel.instrument(tracer_provider=provider)
    try:
        uuid = asyncio.run(eventbus.adispatch(Ping(1), queue="traced"))
    finally:
        otel.uninstrument()
        monkeypatch.setattr(otel, "_enabled", None)
    [raw] = eventbus.connection().peek("traced")
    assert json.loads(raw)["uuid"] == uuid and "traceparent" in json.loads(raw)["headers"]
    assert [span.name for span in exporter.get_finished_spans()] == ["send traced"]


@pytest.mark.integration
@pytest.mark.parametrize("database", ["sqlite", "postgres"])
def test_sqlite_pushes_on_a_worker_thread_and_postgresql_on_the_loop(database: str, tmp_path: Any) -> None:
    url = PG_URL if database == "postgres" else f"sqlite:///{tmp_path}/jobs.sqlite3"
    if database == "postgres" and database_reason(PG_URL):
        pytest.skip(database_reason(PG_URL) or "")
    table = "jobs_async_push"
    eventbus.configure(default="database", connections={"database": {"driver": "database", "url": url,
                                                                      "table": table}})
    queue = eventbus.connection()
    queue.clear("async")

    async def app() -> tuple[list[str], str, set[str]]:
        uuids, _, appeared = await ticking_while(eventbus.adispatch_many([Ping(1), Ping(2)], queue="async"))
        one, _, more = await ticking_while(eventbus.adispatch(Ping(3), queue="async"))
        return uuids, str(one), appeared | more

    uuids, one, appeared = asyncio.run(app())
    assert len(uuids) == 2 and queue.size("async") == 3
    threads = any(name.startswith("asyncio_") for name in appeared)
    # SQLite: Queue.apush's default, a worker thread; PostgreSQL: psycopg's async connection
    assert threads is (database == "sqlite")
    assert sorted(json.loads(raw)["uuid"] for raw in queue.peek("async")) == sorted([*uuids, one])
    queue.clear("async")


@pytest.mark.integration
def test_an_async_postgresql_push_survives_a_terminated_connection() -> None:
    if database_reason(PG_URL):
        pytest.skip(database_reason(PG_URL) or "")
    import psycopg

    from eventbus.queue.database.aio import conninfo

    eventbus.configure(default="database", connections={"database": {"driver": "database", "url": PG_URL,
                                                                      "table": "jobs_async_push"}})
    queue = eventbus.connection()
    queue.clear("async")

    async def app() -> None:
        await eventbus.adispatch(Ping(1), queue="async")
        with psycopg.connect(conninfo(PG_URL), autocommit=True) as admin:  # end the loop's connection
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                          "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                          "AND query LIKE '%jobs_async_push%' AND state = 'idle'")
        await eventbus.adispatch(Ping(2), queue="async")  # sent again on a fresh connection

    asyncio.run(app())
    assert queue.size("async") == 2
    queue.clear("async")
