"""What the beanstalkd driver does beyond the shared contract: the protocol's own rules.

Reservations belong to the TCP connection that made them, so two connections stand for two
worker processes here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import greenstalk
import pytest
from helpers import BeanstalkdServer, address_of, free_port

import eventbus
from eventbus import ConfigurationError, ConnectionUnavailableError, EventBusError, MissingDependencyError
from eventbus.payload import Payload
from eventbus.queue import beanstalkd
from eventbus.queue.beanstalkd import BeanstalkdQueue

pytestmark = pytest.mark.integration


def payload(n: int = 0, **extra: object) -> Payload:
    return Payload(display_name="Test", command_name="test.Job", command={"n": n, **extra})


@pytest.fixture
def two(beanstalkd_url: str) -> Iterator[tuple[BeanstalkdQueue, BeanstalkdQueue]]:
    """Two connections to one server, as two worker processes would have (TTR 2s)."""
    conn = {"driver": "beanstalkd", "url": beanstalkd_url, "retry_after": 2, "block_for": 1}
    eventbus.configure(default="a", connections={"a": conn, "b": conn})
    a, b = eventbus.connection("a"), eventbus.connection("b")
    assert isinstance(a, BeanstalkdQueue) and isinstance(b, BeanstalkdQueue)
    yield a, b


@pytest.mark.parametrize("queue, why", [
    ("queues:default", "not starting with '-'"),
    ("-dash", "not starting with '-'"),
    ("x" * 201, "1 to 200 characters"),
    ("zażółć", "A-Z a-z 0-9"),
    ("eventbus.signals.default", "kept for the driver's signals and counters"),
])
def test_queue_names_must_be_tube_names(beanstalkd_url: str, queue: str, why: str) -> None:
    with pytest.raises(ConfigurationError, match="cannot be used on beanstalkd connection 'b'") as caught:
        eventbus.configure(connections={"b": {"driver": "beanstalkd", "url": beanstalkd_url, "queue": queue}})
    assert why in str(caught.value)
    eventbus.configure(default="b", connections={"b": {"driver": "beanstalkd", "url": beanstalkd_url}})
    with pytest.raises(ConfigurationError, match=why.replace("(", r"\(")):
        eventbus.connection().push(payload(), queue)


def test_the_url_and_options_are_checked() -> None:
    with pytest.raises(ConfigurationError, match="expected beanstalk://127.0.0.1:11300"):
        eventbus.configure(connections={"b": {"driver": "beanstalkd", "url": "redis://127.0.0.1:11300"}})
    with pytest.raises(ConfigurationError, match="'priority' must be an integer"):
        eventbus.configure(connections={"b": {"driver": "beanstalkd", "url": "beanstalk://h", "priority": -1}})


def test_without_greenstalk_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(beanstalkd, "greenstalk", None)
    eventbus.configure(default="b", connections={"b": {"driver": "beanstalkd", "url": "beanstalk://127.0.0.1"}})
    with pytest.raises(MissingDependencyError, match=r"pip install 'eventbus\[beanstalkd\]'"):
        eventbus.connection()


def test_a_job_over_the_servers_size_limit_names_both_sizes() -> None:
    try:
        server = BeanstalkdServer("-z", "1024")
    except (OSError, RuntimeError) as exc:
        pytest.skip(f"cannot start beanstalkd: {exc}")
    try:
        eventbus.configure(default="b", connections={"b": {"driver": "beanstalkd", "url": server.url}})
        q = eventbus.connection()
        big = payload(text="x" * 2000)
        with pytest.raises(EventBusError, match=r"is \d{4} bytes; beanstalkd .* at most 1024 bytes") as caught:
            q.push(big)
        assert caught.value.job_uuid == big.uuid
        q.push(payload())  # the connection is still in step after the refusal
        assert q.size() == 1
    finally:
        eventbus.runtime.reset()
        server.stop()


def test_an_unreachable_server_is_a_lost_connection() -> None:
    url = f"beanstalk://127.0.0.1:{free_port()}"
    eventbus.configure(default="b", connections={"b": {"driver": "beanstalkd", "url": url}})
    q = eventbus.connection()
    for call in (lambda: q.push(payload()), q.pop, q.ping, q.signals):
        with pytest.raises(ConnectionUnavailableError, match=f"cannot reach beanstalkd at {url}"):
            call()


def speak(queue: BeanstalkdQueue) -> None:
    """One command on the reserving connection: beanstalkd 1.12 may leave an expired reservation
    alone until its connection speaks (see the driver's docstring)."""
    with queue.consumer.session("test") as client:
        client.using()


def test_a_stale_worker_in_another_process_cannot_release_or_delete(
        two: tuple[BeanstalkdQueue, BeanstalkdQueue]) -> None:
    a, b = two
    a.push(payload())
    stale = a.pop()
    assert stale is not None
    time.sleep(2.1)  # TTR 2s
    speak(a)  # back to ready
    taken = b.pop()
    assert taken is not None and taken.attempts == 2
    assert not stale.release(0) and not stale.delete()  # NOT_FOUND: b's connection holds it
    assert a.size() == 1 and taken.delete() and a.size() == 0


def test_a_late_delete_of_a_job_back_in_ready_is_refused(two: tuple[BeanstalkdQueue, BeanstalkdQueue]) -> None:
    """beanstalkd would delete a ready job for anyone: the driver first asks if it is still reserved."""
    a, b = two
    a.push(payload())
    late = a.pop()
    assert late is not None
    time.sleep(2.1)
    assert not late.delete()
    again = b.pop()
    assert again is not None and again.attempts == 2


def test_a_closed_connection_hands_its_jobs_back_at_once_and_that_counts_an_attempt(
        two: tuple[BeanstalkdQueue, BeanstalkdQueue]) -> None:
    """As a worker killed with -9: ``reserves`` counts the lost attempt (``releases`` would not)."""
    a, b = two
    a.push(payload())
    assert a.pop() is not None
    a.close()
    assert b.stats().ready == 1
    again = b.pop()
    assert again is not None and again.attempts == 2


def test_touch_keeps_a_long_job_reserved(two: tuple[BeanstalkdQueue, BeanstalkdQueue]) -> None:
    a, b = two
    a.push(payload())
    job = a.pop()
    assert job is not None
    time.sleep(1.2)
    assert job.touch()
    time.sleep(1.3)  # past the first TTR, within the second
    speak(a)  # an expired reservation would be handed back now
    assert b.pop() is None and b.stats().reserved == 1
    assert job.delete() and not job.touch()


def test_a_running_job_touches_its_own_reservation(two: tuple[BeanstalkdQueue, BeanstalkdQueue]) -> None:
    """``Job.touch()`` inside ``handle`` reaches the reservation the worker holds."""
    a, b = two
    a.push(payload())
    reserved = a.pop()
    assert reserved is not None
    command = eventbus.Job()
    assert not command.touch()  # inline: nothing to extend
    command._queue_job = reserved  # as the handler attaches it
    time.sleep(1.2)
    assert command.touch()
    time.sleep(1.3)
    speak(a)
    assert b.pop() is None and b.stats().reserved == 1
    assert reserved.delete() and not command.touch()


def test_the_idle_wait_blocks_in_the_server_and_hands_its_job_to_the_next_pop(
        two: tuple[BeanstalkdQueue, BeanstalkdQueue]) -> None:
    a, b = two
    threading.Timer(0.5, lambda: b.push(payload(1))).start()
    started = time.monotonic()
    a.wait(["other", "default"], 5)
    assert time.monotonic() - started < 2.0  # woken by the push, not after 5s
    assert a.pop("other") is None  # the job the wait reserved goes first
    job = a.pop("default")
    assert job is not None and job.attempts == 1 and job.queue_name == "default"
    assert job.delete() and a.size() == 0


def test_peek_walks_past_other_tubes_delayed_and_reserved_jobs(beanstalkd_url: str) -> None:
    eventbus.configure(default="b", connections={"b": {"driver": "beanstalkd", "url": beanstalkd_url}})
    q = eventbus.connection()
    mine = []
    for n in range(6):
        p = payload(n)
        q.push(p)
        q.push(payload(100 + n), "other")
        q.later(60, payload(200 + n))
        mine.append(p.to_json())
    first = q.pop()
    assert first is not None and first.raw == mine[0]
    assert q.peek(limit=3) == mine[1:4]
    assert q.peek(limit=50) == mine[1:]
    assert q.peek("nothing-here") == []


def test_max_exceptions_counters_are_removed_with_their_job(beanstalkd_url: str) -> None:
    eventbus.configure(default="b", connections={"b": {"driver": "beanstalkd", "url": beanstalkd_url}})
    q = eventbus.connection()
    assert isinstance(q, BeanstalkdQueue)
    counted = Payload(display_name="Test", command_name="test.Job", command={}, max_exceptions=3)
    q.push(counted)
    job = q.pop()
    assert job is not None
    assert q.record_exception(counted.uuid) == 1 and q.record_exception(counted.uuid) == 2
    assert q.queues() == ["default"]  # the counter tube is the driver's own
    assert job.delete()
    client: greenstalk.Client[bytes] = greenstalk.Client(address_of(beanstalkd_url), encoding=None)
    try:
        left = client.stats_tube(q._counter_tube(counted.uuid))["current-jobs-ready"]
    except greenstalk.NotFoundError:  # the server forgot the empty tube
        left = 0
    finally:
        client.close()
    assert left == 0


def test_signals_are_kept_per_default_queue(beanstalkd_url: str) -> None:
    base = {"driver": "beanstalkd", "url": beanstalkd_url}
    eventbus.configure(connections={"shop": {**base, "queue": "shop"}, "mail": {**base, "queue": "mail"}})
    shop, mail = eventbus.connection("shop"), eventbus.connection("mail")
    shop.set_signal("restart", 5.0)
    assert shop.signals() == {"restart": 5.0} and mail.signals() == {}


def test_a_body_that_is_not_json_fails_under_a_stable_id(beanstalkd_url: str) -> None:
    eventbus.configure(default="b", connections={"b": {"driver": "beanstalkd", "url": beanstalkd_url,
                                                       "retry_after": 2}})
    q = eventbus.connection()
    pushed_as = q.push_raw("not json \x00\xff")
    job = q.pop()
    assert job is not None and job.raw == "not json \x00\xff" and job.uuid == pushed_as
    assert job.release(0)
    again = q.pop()
    assert again is not None and again.uuid == pushed_as
