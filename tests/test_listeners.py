"""@listener in all its forms, queued listeners, fakes, and a real worker on Redis."""

from __future__ import annotations

import dataclasses
import signal
import time

import pytest
import redis
from helpers import run_worker, traces, wait_for

import eventbus
from eventbus import Event, emit
from eventbus.errors import SerializationError
from eventbus.testing import fake_events, fake_queue
from listeners import CallQueuedListener, listener


@dataclasses.dataclass
class Shipped(Event):
    order_id: int


@dataclasses.dataclass
class Cancelled(Event):
    order_id: int


def test_event_type_comes_from_the_annotation() -> None:
    seen: list[int] = []

    @listener
    def on_shipped(event: Shipped) -> None:
        seen.append(event.order_id)

    emit(Shipped(3))
    assert seen == [3] and on_shipped(Shipped(4)) is None and seen == [3, 4]


def test_union_annotation_listens_to_each() -> None:
    seen: list[str] = []

    @listener
    def on_either(event: Shipped | Cancelled) -> None:
        seen.append(type(event).__name__)

    emit(Shipped(1))
    emit(Cancelled(1))
    assert seen == ["Shipped", "Cancelled"]


def test_explicit_events_and_class_listeners_are_instantiated_per_call() -> None:
    instances: list[object] = []

    @listener(Shipped, "order.named")
    class Counter:
        def handle(self, event: object) -> str:
            instances.append(self)
            return "handled"

    assert emit(Shipped(1)) == ["handled"]
    assert emit("order.named", "payload") == ["handled"]
    assert len(instances) == 2 and instances[0] is not instances[1]


def test_a_listener_without_annotation_is_a_clear_error() -> None:
    with pytest.raises(TypeError, match="annotate its first parameter"):
        @listener
        def nameless(event):  # type: ignore[no-untyped-def]
            pass


def test_unknown_options_are_refused() -> None:
    with pytest.raises(TypeError, match="unknown listener option"):
        listener(Shipped, queued=True, retries=3)


def test_queued_listener_is_pushed_not_run(use_redis: redis.Redis) -> None:
    ran: list[int] = []

    @listener(queued=True, queue="mail", tries=3, backoff=[5, 30])
    class SendMail:
        def handle(self, event: Shipped) -> None:
            ran.append(event.order_id)

    with fake_queue() as queue:
        emit(Shipped(7))
    assert ran == []
    queue.assert_pushed(SendMail, lambda job: job.event == Shipped(7), times=1)
    queue.assert_pushed_on("mail", SendMail)
    [pushed] = queue.pushed
    assert pushed.payload.max_tries == 3 and pushed.payload.backoff == [5.0, 30.0]
    assert isinstance(pushed.command, CallQueuedListener)
    # the options travel once, in the envelope the worker reads, not again inside the command
    assert set(pushed.payload.command) == {"listener", "method", "args", "display_name"}


def test_class_attributes_override_decorator_defaults() -> None:
    @listener(queued=True, queue="default", tries=1)
    class Tuned:
        queue = "slow"
        tries = 5

        def handle(self, event: Shipped) -> None:
            pass

    with fake_queue() as queue:
        emit(Shipped(1))
    assert queue.pushed[0].queue == "slow" and queue.pushed[0].payload.max_tries == 5


def test_should_queue_false_pushes_nothing() -> None:
    @listener(queued=True)
    class Picky:
        def should_queue(self, event: Shipped) -> bool:
            return event.order_id > 10

        def handle(self, event: Shipped) -> None:
            pass

    with fake_queue() as queue:
        emit(Shipped(1))
        emit(Shipped(11))
    queue.assert_pushed(Picky, times=1)


def test_unserializable_event_fails_at_emit_naming_the_field() -> None:
    @dataclasses.dataclass
    class WithSocket(Event):
        conn: object

    @listener(WithSocket, queued=True)
    def later(event: WithSocket) -> None:
        pass

    with pytest.raises(SerializationError, match=r"CallQueuedListener\.args\[0\]\.conn"):
        emit(WithSocket(conn=object()))


def test_sync_connection_runs_queued_listeners_inline() -> None:
    ran: list[int] = []

    @listener(queued=True, connection="sync")
    def inline(event: Shipped) -> None:
        ran.append(event.order_id)

    emit(Shipped(5))
    assert ran == [5]


def test_sync_connection_calls_failed_and_raises() -> None:
    failures: list[str] = []

    @listener(queued=True, connection="sync")
    class Broken:
        def handle(self, event: Shipped) -> None:
            raise RuntimeError("nope")

        def failed(self, event: Shipped, exc: BaseException) -> None:
            failures.append(f"{event.order_id}:{exc}")

    with pytest.raises(RuntimeError, match="nope"):
        emit(Shipped(9))
    assert failures == ["9:nope"]


def test_after_commit_listeners_wait_for_the_block() -> None:
    @listener(queued=True, after_commit=True)
    def audit_later(event: Shipped) -> None:
        pass

    with fake_queue() as queue:
        with eventbus.after_commit():
            emit(Shipped(1))
            queue.assert_nothing_pushed()
        queue.assert_pushed(audit_later, times=1)
        with pytest.raises(ValueError):
            with eventbus.after_commit():
                emit(Shipped(2))
                raise ValueError("rolled back")
        queue.assert_pushed(audit_later, times=1)


def test_events_cli_lists_listeners() -> None:
    from click.testing import CliRunner

    from eventbus.cli import main

    @listener
    def sync_one(event: Shipped) -> None:
        pass

    @listener(queued=True, connection="redis", queue="mail")
    class QueuedOne:
        def handle(self, event: Shipped) -> None:
            pass

    result = CliRunner().invoke(main, ["events"])
    assert result.exit_code == 0, result.output
    assert "test_listeners.Shipped" in result.output
    assert "sync_one (sync)" in result.output
    assert "QueuedOne (queued on redis, queue mail)" in result.output


# -- fakes ------------------------------------------------------------------------------------

def test_fake_events_records_and_asserts() -> None:
    ran: list[int] = []

    @listener
    def real(event: Shipped) -> None:
        ran.append(1)

    with fake_events() as events:
        emit(Shipped(1))
        emit(Shipped(2))
    assert ran == []
    events.assert_emitted(Shipped, times=2)
    events.assert_emitted(Shipped, lambda e: e.order_id == 2)
    events.assert_not_emitted(Cancelled)
    events.assert_listening(Shipped, real)
    with pytest.raises(AssertionError, match=r"Seen instead:\n  Shipped\(order_id=1\)"):
        events.assert_emitted(Shipped, lambda e: e.order_id == 3)
    with pytest.raises(AssertionError, match="expected no events"):
        events.assert_nothing_emitted()


def test_fake_events_only_some() -> None:
    ran: list[str] = []
    eventbus.listen(Cancelled, lambda e: ran.append("cancelled"))
    eventbus.listen(Shipped, lambda e: ran.append("shipped"))
    with fake_events(Shipped) as events:
        emit(Shipped(1))
        emit(Cancelled(1))
    assert ran == ["cancelled"]
    events.assert_emitted(Shipped)
    events.assert_not_emitted(Cancelled)


def test_fake_queue_assertions_list_what_was_pushed() -> None:
    class Job1(eventbus.Job):
        def handle(self) -> None:
            pass

    with fake_queue() as queue:
        Job1().dispatch(queue="q1")
    queue.assert_pushed(Job1)
    queue.assert_pushed_on("q1", Job1)
    with pytest.raises(AssertionError, match="on queue 'q2'"):
        queue.assert_pushed_on("q2", Job1)
    with pytest.raises(AssertionError, match="Job1 on database:q1"):
        queue.assert_nothing_pushed()
    with pytest.raises(AssertionError):
        queue.assert_not_pushed(Job1)


def test_pytest_fixtures_events_and_queue(events: object, queue: object) -> None:
    emit(Shipped(1))
    events.assert_emitted(Shipped)  # type: ignore[attr-defined]
    queue.assert_nothing_pushed()  # type: ignore[attr-defined]


# -- with a real worker ----------------------------------------------------------------------

@pytest.fixture
def shop_listeners() -> object:
    """The app module, (re)imported so its listeners are registered for this test."""
    import importlib
    import sys

    if "apps.shop_listeners" in sys.modules:
        return importlib.reload(sys.modules["apps.shop_listeners"])
    return importlib.import_module("apps.shop_listeners")


@pytest.mark.integration
def test_queued_listener_runs_once_in_a_worker(use_redis: redis.Redis, start_worker: object, shop_listeners: object) -> None:
    emit(shop_listeners.Shipped(order_id=7, items=[1, 2, 3]))
    assert traces(use_redis, "sync") == ["7"]  # the sync one ran inside emit
    code, out, _ = run_worker(start_worker, "--stop-when-empty", env={"EVENTBUS_APP": "apps.shop_listeners"})
    assert code == 0
    assert traces(use_redis, "queued") == ["7:[1, 2, 3]"]
    assert "apps.shop_listeners.Remember" in out


@pytest.mark.integration
def test_failing_queued_listener_is_retried_then_failed(use_redis: redis.Redis, start_worker: object, shop_listeners: object) -> None:
    emit(shop_listeners.Refunded(order_id=3))
    w = start_worker("--sleep", "0.05", env={"EVENTBUS_APP": "apps.shop_listeners"})
    wait_for(lambda: traces(use_redis, "refund_failed"), timeout=20)
    w.signal(signal.SIGTERM)
    assert w.wait() == 0
    assert traces(use_redis, "refund_attempt") == ["1", "2", "3"]
    assert traces(use_redis, "refund_failed") == ["3:RuntimeError:refund service down"]
    assert len(eventbus.runtime.failed_store().all()) == 1


@pytest.mark.integration
def test_queued_listener_delay_is_honoured(use_redis: redis.Redis, start_worker: object, shop_listeners: object) -> None:
    emitted = time.time()
    emit(shop_listeners.Reviewed(order_id=1))
    w = start_worker("--sleep", "0.05", env={"EVENTBUS_APP": "apps.shop_listeners"})
    wait_for(lambda: traces(use_redis, "reviewed"), timeout=20)
    w.signal(signal.SIGTERM)
    w.wait()
    assert float(traces(use_redis, "reviewed")[0]) - emitted >= 1.0


@pytest.mark.integration
def test_should_queue_false_runs_nothing_in_the_worker(use_redis: redis.Redis, start_worker: object, shop_listeners: object) -> None:
    emit(shop_listeners.Shipped(order_id=0, items=[]))  # should_queue is False for order 0
    assert eventbus.connection().size() == 0
    code, out, _ = run_worker(start_worker, "--stop-when-empty", env={"EVENTBUS_APP": "apps.shop_listeners"})
    assert code == 0 and out == "" and traces(use_redis, "queued") == []


class Detonator(eventbus.Job):
    """A registered job (not a listener) whose methods a forged payload must not reach."""

    fired: list[str] = []

    def handle(self) -> None:
        Detonator.fired.append("handle")

    def explode(self, *args: object) -> None:
        Detonator.fired.append("explode")


@listener(Shipped, queued=True, on=eventbus.EventBus())  # registered, but on a bus of its own
class Courier:
    def handle(self, event: Shipped) -> None:
        Detonator.fired.append("courier.handle")

    def _secret(self, event: Shipped) -> None:
        Detonator.fired.append("courier._secret")

    def other(self, event: Shipped) -> None:
        Detonator.fired.append("courier.other")


@pytest.mark.parametrize("target, method", [
    (f"{__name__}.Detonator", "explode"),      # a registered class that is no listener
    (f"{__name__}.Detonator", "__init__"),
    (f"{__name__}.Courier", "_secret"),         # a listener, but a private method
    (f"{__name__}.Courier", "__class__"),
    (f"{__name__}.Courier", "other"),           # a listener, but not the registered method
    ("os.system", ""),
])
def test_a_forged_queued_listener_is_refused(use_redis: redis.Redis, target: str, method: str) -> None:
    from eventbus import Worker, WorkerOptions
    from eventbus.dispatching import Destination, push_command

    Detonator.fired.clear()
    forged = CallQueuedListener(target, method, [Shipped(1)], display_name="forged", options={})
    push_command(forged, Destination("redis", None, 0.0))
    assert Worker.for_connection(options=WorkerOptions(stop_when_empty=True, sleep_s=0, memory_mb=0)).run() == 0
    assert Detonator.fired == []
    [record] = eventbus.failed_store().all()
    assert "refusing to call" in record.summary


def test_the_registered_method_of_a_queued_listener_still_runs(use_redis: redis.Redis) -> None:
    from eventbus import Worker, WorkerOptions
    from eventbus.dispatching import Destination, push_command

    Detonator.fired.clear()
    real = CallQueuedListener(f"{__name__}.Courier", "handle", [Shipped(1)], display_name="c", options={})
    push_command(real, Destination("redis", None, 0.0))
    assert Worker.for_connection(options=WorkerOptions(stop_when_empty=True, sleep_s=0, memory_mb=0)).run() == 0
    assert Detonator.fired == ["courier.handle"] and eventbus.failed_store().all() == []


def test_after_commit_state_belongs_to_each_asyncio_task() -> None:
    """Request A's rollback must not drop a job request B emitted outside any block."""
    import asyncio

    @listener(queued=True, after_commit=True)
    def notify_later(event: Shipped) -> None:
        pass

    async def request_a(entered: asyncio.Event, b_done: asyncio.Event) -> None:
        with pytest.raises(ValueError):
            with eventbus.after_commit():
                emit(Shipped(1))
                entered.set()
                await b_done.wait()  # B runs while A's block is open
                raise ValueError("A rolls back")

    async def request_b(entered: asyncio.Event, b_done: asyncio.Event) -> None:
        await entered.wait()
        emit(Shipped(2))
        b_done.set()

    async def both() -> None:
        entered, b_done = asyncio.Event(), asyncio.Event()
        await asyncio.gather(request_a(entered, b_done), request_b(entered, b_done))

    with fake_queue() as queue:
        asyncio.run(both())
    assert [job.event.order_id for job in queue.pushed_of(notify_later)] == [2]


def test_after_commit_applies_to_plain_jobs() -> None:
    class Invoice(eventbus.Job):
        after_commit = True

        def handle(self) -> None: ...

    class Receipt(eventbus.Job):
        def handle(self) -> None: ...

    with fake_queue() as queue:
        with eventbus.after_commit():
            Invoice().dispatch()
            eventbus.dispatch(Receipt(), after_commit=True)
            eventbus.dispatch(Receipt())               # not marked: pushed at once
            assert len(queue.pushed) == 1
        assert len(queue.pushed) == 3
        with pytest.raises(ValueError):
            with eventbus.after_commit():
                Invoice().dispatch()
                eventbus.chain([Invoice(), Receipt()]).dispatch()
                raise ValueError("rolled back")
        assert len(queue.pushed) == 3
        Invoice().dispatch()                             # outside a block: at once
        assert len(queue.pushed) == 4


def test_a_chain_steps_own_queue_and_connection_win() -> None:
    class Step(eventbus.Job):
        def handle(self) -> None: ...

    class Pinned(eventbus.Job):
        queue = "own-queue"
        connection = "null"

        def handle(self) -> None: ...

    with fake_queue() as queue:
        eventbus.chain([Step(), Pinned(), Step()]).dispatch(queue="chain-queue", connection="redis")
    [first] = queue.pushed
    assert first.destination.queue == "chain-queue"
    steps = first.payload.chained
    assert [s["destination"]["queue"] for s in steps] == ["own-queue", "chain-queue"]
    assert [s["destination"]["connection"] for s in steps] == ["null", "redis"]


def test_a_hold_opened_by_an_integration_works_like_the_block() -> None:
    from eventbus.dispatching.transactions import Hold

    class Invoice(eventbus.Job):
        after_commit = True

        def handle(self) -> None: ...

    with fake_queue() as queue:
        hold = Hold.open()
        Invoice().dispatch()
        assert queue.pushed == []
        hold.close(committed=True)
        assert len(queue.pushed) == 1
        hold = Hold.open()
        Invoice().dispatch()
        hold.close(committed=False)
        hold.close(committed=True)  # closing twice changes nothing
        assert len(queue.pushed) == 1
        Invoice().dispatch()
        assert len(queue.pushed) == 2


def test_fake_queue_knows_the_queue_a_job_without_one_goes_to() -> None:
    """A job that names no queue goes to its connection's default queue, and the fake says so."""
    class Plain(eventbus.Job):
        def handle(self) -> None:
            pass

    eventbus.configure(connections={"database": {"driver": "database", "url": "sqlite:///q.sqlite3",
                                                 "queue": "main"}})
    with fake_queue() as queue:
        Plain().dispatch()
    queue.assert_pushed_on("main", Plain)
    with pytest.raises(AssertionError, match="Plain on database:main"):
        queue.assert_pushed_on("default", Plain)
