"""The Redis driver's async push (redis.asyncio): the sync driver's scripts and promises, on the
running loop, one client per loop."""

from __future__ import annotations

import asyncio
import gc
import threading
import weakref
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
import redis
from helpers import REDIS_URL
from proxies import TcpProxy

import eventbus
from eventbus.errors import ConnectionUnavailableError
from eventbus.payload import Payload
from eventbus.queue.redis import RedisQueue, bodies

pytestmark = pytest.mark.integration
DB = int(urlsplit(REDIS_URL).path.lstrip("/") or 0)


def payload(n: int, attempts: int = 0) -> Payload:
    return Payload(display_name="T", command_name="t.J", command={"n": n, "big": 2**60 + 1, "empty": []},
                   attempts=attempts)


def redis_queue(url: str = REDIS_URL, name: str = "apush") -> RedisQueue:
    eventbus.configure(connections={name: {"driver": "redis", "url": url}})
    queue = eventbus.connection(name)
    assert isinstance(queue, RedisQueue)
    return queue


def connections_named(admin: redis.Redis, name: str) -> int:
    return sum(1 for c in admin.client_list() if c.get("name") == name and str(c.get("db")) == str(DB))


@pytest.fixture
def proxy() -> Iterator[TcpProxy]:
    target = urlsplit(REDIS_URL)
    relay = TcpProxy(target.hostname or "127.0.0.1", target.port or 6379)
    yield relay
    relay.close()


def test_async_pushes_leave_what_the_sync_driver_leaves(redis_client: redis.Redis) -> None:
    queue = redis_queue()
    items = [payload(n, attempts=n % 3) for n in range(1203)]  # bulk crosses its 500-job chunks

    queue.push(items[0], "sync")
    queue.later(60, items[1], "sync")
    queue.bulk(items[2:], "sync")

    async def push_all() -> None:
        await queue.apush(items[0], "async")
        await queue.alater(60, items[1], "async")
        await queue.abulk(items[2:], "async")
        await queue.apush(items[0], "async")  # idempotent by uuid: nothing added
        await queue.abulk(items[2:5], "async")

    asyncio.run(push_all())
    for suffix, read in [("", lambda k: redis_client.lrange(k, 0, -1)),
                         (":bodies", redis_client.hgetall), (":attempts", redis_client.hgetall),
                         (":notify", redis_client.llen),
                         (":delayed", lambda k: redis_client.zrange(k, 0, -1))]:
        assert read(f"queues:{{async}}{suffix}") == read(f"queues:{{sync}}{suffix}"), suffix
    stored = redis_client.hget("queues:{async}:bodies", items[0].uuid)
    assert stored == bodies.pack(items[0]).encode()
    assert bodies.unpack(stored.decode()) == items[0].to_json()
    assert queue.size("async") == 1203


def test_a_script_the_server_forgot_is_loaded_again(redis_client: redis.Redis) -> None:
    queue = redis_queue()

    async def push_across_a_flush() -> None:
        await queue.apush(payload(1))
        redis_client.script_flush()       # a restarted server knows no script
        await queue.apush(payload(2))
        await queue.abulk([payload(3), payload(4)])

    asyncio.run(push_across_a_flush())
    assert queue.size() == 4


def test_each_loop_gets_its_own_client_closed_when_the_loop_ends(redis_client: redis.Redis) -> None:
    queue = redis_queue()
    seen: dict[str, object] = {}
    loops: list[weakref.ref[asyncio.AbstractEventLoop]] = []
    both_pushing = threading.Barrier(2)

    async def push_from(thread: str) -> None:
        await queue.apush(payload(1 if thread == "a" else 2))
        loops.append(weakref.ref(asyncio.get_running_loop()))
        seen[thread] = client = await queue._async.clients.get()
        await asyncio.to_thread(both_pushing.wait, 5)  # both loops hold their client at once
        await queue.apush(payload(3 if thread == "a" else 4))
        assert await queue._async.clients.get() is client  # reused on its loop

    threads = [threading.Thread(target=asyncio.run, args=(push_from(t),)) for t in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert seen["a"] is not seen["b"] and queue._async.clients.opened == 2
    assert queue._async.clients.values() == []  # closed with their loops...
    assert connections_named(redis_client, "eventbus:apush") == 0  # ...and their sockets with them
    assert queue.size() == 4
    seen.clear()
    gc.collect()
    assert [ref() for ref in loops] == [None, None]  # nothing keeps a finished loop alive


def test_a_reply_lost_with_its_connection_is_sent_again_and_the_job_is_queued_once(
        redis_client: redis.Redis, proxy: TcpProxy) -> None:
    queue = redis_queue(proxy.url(DB))
    job = payload(7)

    async def push_losing_the_reply() -> str:
        await queue.apush(payload(1))     # connected: the next reply is the push's
        proxy.drop_next_reply = True
        return await queue.apush(job)

    assert asyncio.run(push_losing_the_reply()) == job.uuid
    assert proxy.replies_dropped == 1 and proxy.accepted == 2  # the retry came on a new connection
    ready = redis_client.lrange("queues:{default}", 0, -1)
    assert ready.count(job.uuid.encode()) == 1 and len(ready) == 2


def test_an_unreachable_server_is_the_sync_drivers_error(redis_client: redis.Redis, proxy: TcpProxy) -> None:
    proxy.refuse = True
    queue = redis_queue(proxy.url(DB), name="down")

    with pytest.raises(ConnectionUnavailableError) as sync_error:
        queue.push(payload(1))
    tries = proxy.accepted
    with pytest.raises(ConnectionUnavailableError) as async_error:
        asyncio.run(queue.apush(payload(1)))
    with pytest.raises(ConnectionUnavailableError) as bulk_error:
        asyncio.run(queue.abulk([payload(2)]))

    assert proxy.accepted == 3 * tries == 9  # sent three times, as the sync driver does
    expected = f"cannot reach Redis at {proxy.url(DB)} for connection 'down' (push): "
    assert str(sync_error.value).startswith(expected) and str(async_error.value).startswith(expected)
    assert str(bulk_error.value).startswith(expected.replace("(push)", "(bulk push)"))
    assert async_error.value.connection == "down"
