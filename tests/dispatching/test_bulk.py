"""The public bulk API: dispatch_many, emit_many and bulk_pushes; dispatch_if/unless; backoff."""

from __future__ import annotations

import concurrent.futures
import contextvars
import dataclasses
import pathlib
from collections.abc import Iterator

import pytest
import redis
from apps import jobs
from chaos.servers import RedisServer
from helpers import traces

import eventbus
from eventbus import Event, JobQueued, Worker, WorkerOptions
from eventbus.dispatching import make_payload
from eventbus.queue.redis.queue import STREAM_CHUNK
from eventbus.testing import fake_queue
from listeners import listener


def drain() -> int:
    options = WorkerOptions(stop_when_empty=True, sleep_s=0, memory_mb=0)
    return Worker.for_connection(options=options).run()


def count_commands(client: redis.Redis) -> int:
    return int(client.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0))


def warm_up() -> None:
    """Load the push script on the server (a first call meets NOSCRIPT and loads it)."""
    eventbus.dispatch_many([jobs.Record(-1)])
    eventbus.connection().clear()


@pytest.fixture
def counted_redis(use_redis: redis.Redis, tmp_path: pathlib.Path) -> Iterator[redis.Redis]:
    """The default connection on a private ``redis-server``: its command counts see this test's
    commands only, whatever else runs on the shared server meanwhile."""
    with RedisServer(tmp_path / "redis") as server:
        eventbus.configure(connections={"redis": {"driver": "redis", "url": server.url(), "block_for": 1}})
        client = server.client()
        yield client
        client.close()


def test_dispatch_many_streams_one_script_call_per_chunk(use_redis: redis.Redis, counted_redis: redis.Redis) -> None:
    """Sent every 500 jobs (``BULK_FLUSH_EVERY``) as script calls of ``STREAM_CHUNK`` jobs each,
    written one after the other and their replies read together: the server stores a chunk
    while the next one is encoded."""
    warm_up()
    queued: list[JobQueued] = []
    eventbus.listen(JobQueued, queued.append)
    counted_redis.config_resetstat()
    uuids = eventbus.dispatch_many(jobs.Record(n) for n in range(1200))
    assert STREAM_CHUNK == 100
    assert count_commands(counted_redis) == 5 + 5 + 2  # flushes of 500, 500 and 200 jobs
    assert len(uuids) == len(set(uuids)) == 1200 and len(queued) == 1200
    assert eventbus.connection().size() == 1200
    assert drain() == 0
    assert traces(use_redis, "ran") == [str(n) for n in range(1200)]


def test_a_streamed_chunk_the_server_has_no_script_for_is_sent_again(use_redis: redis.Redis,
                                                                      counted_redis: redis.Redis) -> None:
    warm_up()
    counted_redis.script_flush()  # a restarted server: every chunk of the stream meets NOSCRIPT
    counted_redis.config_resetstat()
    uuids = eventbus.dispatch_many(jobs.Record(n) for n in range(250))
    assert int(counted_redis.info("commandstats").get("cmdstat_eval", {}).get("calls", 0)) == 3  # 100, 100, 50
    assert len(uuids) == 250 and eventbus.connection().size() == 250
    assert drain() == 0
    assert traces(use_redis, "ran") == [str(n) for n in range(250)]


class Measure(eventbus.Job):
    def __init__(self, value: float) -> None:
        self.value = value

    def handle(self) -> None: ...


def test_a_job_that_cannot_be_encoded_fails_its_own_dispatch_in_a_bulk_push(use_redis: redis.Redis) -> None:
    """NaN is refused while the job is dispatched, not when the block sends it with others: the
    jobs dispatched before it are queued as the block ends, as after any error in a block."""
    batch = [jobs.Record(n) for n in range(150)] + [Measure(float("nan"))] + [jobs.Record(n) for n in range(3)]
    with pytest.raises(eventbus.SerializationError, match=r"Measure.value: nan is not JSON"):
        eventbus.dispatch_many(batch)
    assert eventbus.connection().size() == 150


def test_a_payload_that_cannot_be_encoded_mid_stream_leaves_the_connection_in_step(
        use_redis: redis.Redis, counted_redis: redis.Redis) -> None:
    """A hand-built payload the serializer never saw: its chunk and the later ones are not sent,
    the chunks written before it are queued, and their replies are read before the error goes
    on, so that the next command on the connection reads its own reply."""
    warm_up()
    good = [make_payload(jobs.Record(n)) for n in range(150)]
    bad = dataclasses.replace(make_payload(jobs.Record(150)), command={"n": float("nan")})
    q = eventbus.connection()
    with pytest.raises(eventbus.SerializationError, match="NaN"):
        q.bulk([*good, bad, *good[:3]])
    assert q.size() == 100  # the first chunk
    assert q._wire.call("ECHO", "in step") == b"in step"  # type: ignore[attr-defined]


def test_an_empty_bulk_push_asks_nothing_of_the_server() -> None:
    from helpers import free_port

    eventbus.configure(connections={"nowhere": {"driver": "redis", "url": f"redis://127.0.0.1:{free_port()}/0"}})
    assert eventbus.connection("nowhere").bulk([]) == []  # no server there: nothing was sent
    assert eventbus.dispatch_many([], connection="nowhere") == []


def test_dispatch_many_keeps_each_jobs_own_queue_and_delay(use_redis: redis.Redis) -> None:
    class Mail(eventbus.Job):
        queue = "mail"

        def handle(self) -> None: ...

    eventbus.dispatch_many([jobs.Record(1), Mail(), jobs.Record(2)])
    eventbus.dispatch_many([jobs.Record(3)], queue="later-queue")
    q = eventbus.connection()
    assert (q.size("default"), q.size("mail"), q.size("later-queue")) == (2, 1, 1)


def test_bulk_pushes_send_delayed_jobs_at_once_and_the_rest_at_the_end(use_redis: redis.Redis) -> None:
    q = eventbus.connection()
    with eventbus.bulk_pushes():
        jobs.Record(1).dispatch()
        jobs.Record(2).dispatch(delay=60)
        assert q.size() == 1  # the delayed one went at once; the other waits for the block's end
    assert q.size() == 2


def test_bulk_pushes_send_what_they_hold_every_500_jobs(use_redis: redis.Redis) -> None:
    q = eventbus.connection()
    assert eventbus.dispatching.BULK_FLUSH_EVERY == 500
    with eventbus.bulk_pushes():
        for n in range(500):
            jobs.Record(n).dispatch()
        assert q.size() == 0
        jobs.Record(500).dispatch()  # the block holds 500: they go first, then this one joins it
        assert q.size() == 500  # sent, so that a long block does not hold every payload to the end
        jobs.Record(501).dispatch()
        assert q.size() == 500
    assert q.size() == 502
    assert drain() == 0
    assert traces(use_redis, "ran") == [str(n) for n in range(502)]


class Unique(eventbus.Job):
    unique = True

    def __init__(self, n: int) -> None:
        self.n = n

    def unique_id(self) -> str:
        return str(self.n)

    def handle(self) -> None: ...


def test_a_send_that_fails_inside_a_bulk_block_fails_the_dispatch_that_set_it_off_only(
        use_redis: redis.Redis) -> None:
    q = eventbus.connection()
    failures = [RuntimeError("a JobQueued listener broke")]

    def listener(event: JobQueued) -> None:
        if failures:
            raise failures.pop()

    eventbus.listen(JobQueued, listener)
    with pytest.raises(RuntimeError, match="listener broke"):
        with eventbus.bulk_pushes():
            for n in range(500):
                assert Unique(n).dispatch() is not None
            Unique(500).dispatch()  # sends the 500 first; the listener raises there
    assert q.size() == 500
    assert Unique(499).dispatch() is None  # queued, so its lock is held
    assert Unique(500).dispatch() is not None  # it was not queued, so its lock was let go
    assert q.size() == 501


class Parent(eventbus.Job):
    def __init__(self, n: int) -> None:
        self.n = n

    def handle(self) -> None:
        jobs.Record(self.n).dispatch()


def test_what_the_final_send_of_a_bulk_block_sets_off_is_sent_too(use_redis: redis.Redis) -> None:
    eventbus.dispatch_many([Parent(1), Parent(2)], connection="sync")  # run at the block's end
    assert eventbus.connection().size() == 2  # each one's own dispatch, made during that send


def test_threads_sharing_a_bulk_block_lose_no_push(use_redis: redis.Redis) -> None:
    def dispatch_from_threads() -> list[str | None]:
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            context = contextvars.copy_context()  # as asyncio.to_thread shares the block
            return list(pool.map(lambda n: context.copy().run(jobs.Record(n).dispatch), range(3000)))

    with eventbus.bulk_pushes():
        uuids = dispatch_from_threads()
    assert len(set(uuids)) == 3000 and eventbus.connection().size() == 3000


def test_emit_many_pushes_queued_listeners_in_bulk(counted_redis: redis.Redis) -> None:
    @dataclasses.dataclass
    class Sold(Event):
        n: int

    ran: list[int] = []

    @listener(Sold)
    def count(event: Sold) -> None:
        ran.append(event.n)

    @listener(Sold, queued=True)
    def later(event: Sold) -> None: ...

    warm_up()
    counted_redis.config_resetstat()
    results = eventbus.emit_many(Sold(n) for n in range(100))
    assert ran == list(range(100)) and len(results) == 100
    assert count_commands(counted_redis) == 1 and eventbus.connection().size() == 100


def test_fakes_see_every_job_of_a_bulk_dispatch() -> None:
    with fake_queue() as queue:
        eventbus.dispatch_many([jobs.Record(n) for n in range(3)])
    queue.assert_pushed(jobs.Record, times=3)


def test_dispatch_if_and_unless() -> None:
    with fake_queue() as queue:
        assert eventbus.dispatch_if(False, jobs.Record(1)) is None
        assert eventbus.dispatch_if(lambda: True, jobs.Record(2)) is not None
        assert eventbus.dispatch_unless(True, jobs.Record(3)) is None
        assert eventbus.dispatch_unless(0, jobs.Record(4), queue="q") is not None
    assert [p.command.n for p in queue.pushed] == [2, 4] and queue.pushed[1].queue == "q"


def test_exponential_backoff_becomes_delays_at_dispatch() -> None:
    class Sync(eventbus.Job):
        tries = 5
        backoff = eventbus.exponential(first=2, base=3, cap=30, jitter=False)

        def handle(self) -> None: ...

    class Jittery(Sync):
        backoff = eventbus.exponential(first=10, cap=1000)

    with fake_queue() as queue:
        Sync().dispatch()
        Jittery().dispatch()
        Jittery().dispatch()
    plain, first, second = (p.payload.backoff for p in queue.pushed)
    assert plain == [2.0, 6.0, 18.0, 30.0]  # one per retry: tries - 1
    assert first is not None and second is not None and first != second  # each job its own spread
    for delays in (first, second):
        assert [5 <= delays[0] <= 10, 10 <= delays[1] <= 20, 20 <= delays[2] <= 40] == [True] * 3
    with pytest.raises(ValueError):
        eventbus.exponential(base=0.5)


def test_a_destination_due_now_is_shared_and_one_with_a_delay_is_not() -> None:
    """A bulk push holds one destination a job until it sends; the ones without a delay are
    shared (they are immutable), so holding 500 jobs does not hold 500 of them."""
    from eventbus.dispatching.payloads import _DUE_NOW_MAX, Destination

    first = Destination.of(jobs.Record(1))
    assert Destination.of(jobs.Record(2)) is first
    assert Destination.of(jobs.Record(2), queue="other") is not first
    assert Destination.of(jobs.Record(2), queue="other").queue == "other"
    assert Destination.of(jobs.Record(2), delay=5) is not Destination.of(jobs.Record(2), delay=5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.queue = "changed"  # type: ignore[misc]
    for n in range(_DUE_NOW_MAX + 5):  # per-tenant queue names do not grow the table for ever
        assert Destination.of(jobs.Record(n), queue=f"tenant-{n}").queue == f"tenant-{n}"
    from eventbus.dispatching import payloads
    assert len(payloads._DUE_NOW) <= _DUE_NOW_MAX
