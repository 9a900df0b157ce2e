"""Job bodies are stored packed in Redis (``queue.redis.bodies``) and come back byte for byte."""

from __future__ import annotations

import dataclasses
import json

import pytest
import redis

import eventbus
from apps import jobs
from eventbus.dispatching import make_payload
from eventbus.errors import ConfigurationError, SerializationError
from eventbus.payload import Payload
from eventbus.queue.redis import RedisQueue, bodies
from helpers import REDIS_URL, run_worker, traces

#: A value other than the default for every field of a payload: a field added to Payload
#: without a place in the packed form fails ``test_every_field_comes_back``.
EVERY_FIELD = {
    "display_name": "shop.jobs.Ship «express»", "command_name": "shop.jobs.Ship",
    "command": {"order": 7, "weight": 1.5e-7, "big": 2**70, "note": 'a "quoted"\n\x1f\x00 é 🚚',
                "nested": {"list": [None, True, False, -0.0, 1e16]}},
    "uuid": "9b2d1f4e-0000-4000-8000-000000000001", "job": "custom.Handler@run",
    "max_tries": 3, "max_exceptions": 2, "backoff": [1.0, 5.5], "timeout": 60.0,
    "retry_until": 1795813005.25, "fail_on_timeout": True, "attempts": 4, "pushed_at": 1795813000.125,
    "chained": ({"destination": "redis/default", "payload": "{}"},),
    "unique": {"key": "k", "via": "redis", "untilProcessing": False}, "batch_id": "b1@redis",
    "chain_catch": ({"destination": "redis/default", "payload": "{\"a\":1}"},),
    "chain_finally": ({"destination": "redis/x", "payload": "{}"},),
    "signature": "c2lnbmF0dXJl", "headers": {"traceparent": "00-abc-def-01"}, "tags": ("Order:7", "vip"),
}


def plain(**fields: object) -> Payload:
    return Payload(**{"display_name": "apps.jobs.Record", "command_name": "apps.jobs.Record",
                      "command": {}, **fields})  # type: ignore[arg-type]


def test_every_field_comes_back() -> None:
    assert set(EVERY_FIELD) == {f.name for f in dataclasses.fields(Payload)}
    payload = Payload(**EVERY_FIELD)  # type: ignore[arg-type]
    packed = bodies.pack(payload)
    assert packed.startswith(bodies.PACKED)
    assert bodies.unpack(packed) == payload.to_json()


@pytest.mark.parametrize("fields", [
    {}, {"attempts": 0, "max_tries": 0}, {"timeout": 0.5}, {"fail_on_timeout": False},
    {"command_name": "other.Name"}, {"display_name": "Name with ünïcode"}, {"job": "eventbus.CallQueuedHandler@call"},
    {"headers": {"k": "v"}}, {"tags": ("t",)}, {"signature": "s"}, {"batch_id": "b@c"},
    {"chained": ({"destination": "d", "payload": "{}"},)}, {"command": {"x": [1, 2.5, "three", None]}},
], ids=repr)
def test_a_payload_comes_back_as_its_json(fields: dict[str, object]) -> None:
    payload = plain(**fields)
    assert bodies.unpack(bodies.pack(payload)) == payload.to_json()


def test_a_job_of_no_data_packs_to_under_a_third_of_its_json() -> None:
    payload = plain()
    assert len(bodies.pack(payload)) * 3 < len(payload.to_json())


def test_a_payload_that_cannot_be_encoded_fails_as_to_json_fails() -> None:
    for bad in (plain(timeout=float("nan")), plain(command={"x": float("inf")}), plain(command={"x": object()})):
        with pytest.raises((SerializationError, TypeError)) as packing:
            bodies.pack(bad)
        with pytest.raises(type(packing.value)):
            bad.to_json()


@pytest.mark.parametrize("text", ["plain text", "", "{\"uuid\":\"x\"}", "\x00starts with the mark",
                                  "\x001\x1f\x1fstarts like a packed body", "\x000", "\x00"])
def test_text_given_as_is_comes_back_as_is(text: str) -> None:
    assert bodies.unpack(bodies.store_raw(text)) == text


@pytest.mark.parametrize("stored", ["\x001", "\x001only one field", "\x001" + "\x1f" * 30, "\x009unknown",
                                    "\x001\"u\"\x1f\"d\"\x1f\x1f\x1f\x1f\x1f\x1f\x1f\x1f\x1f\x1f\x1f\x1f"])
def test_a_broken_packed_body_is_returned_as_stored(stored: str) -> None:
    """The worker then fails it as a payload it cannot read (it is never dropped)."""
    assert bodies.unpack(stored) == stored


@pytest.mark.integration
def test_a_queued_job_is_stored_packed_and_read_back_as_json(redis_client: redis.Redis) -> None:
    eventbus.configure(connections={"r": {"driver": "redis", "url": REDIS_URL}})
    queue = eventbus.connection("r")
    assert isinstance(queue, RedisQueue)
    first, second, delayed = plain(), plain(command={"n": 2}), plain(command={"n": 3})
    queue.push(first)
    queue.bulk([second])
    queue.later(60, delayed)
    for payload in (first, second, delayed):
        stored = redis_client.hget("queues:{default}:bodies", payload.uuid)
        assert stored is not None and stored.startswith(b"\x001")
        assert bodies.unpack(stored.decode()) == payload.to_json()
    assert queue.peek() == [first.to_json(), second.to_json()]
    found = queue.find(delayed.uuid)
    assert found is not None and found.raw == delayed.to_json()
    job = queue.pop()
    assert job is not None and job.raw == first.to_json()


@pytest.mark.integration
def test_with_compact_bodies_off_the_body_is_the_json(redis_client: redis.Redis) -> None:
    eventbus.configure(connections={"r": {"driver": "redis", "url": REDIS_URL, "compact_bodies": False}})
    payload = plain()
    eventbus.connection("r").push(payload)
    assert redis_client.hget("queues:{default}:bodies", payload.uuid) == payload.to_json().encode()


@pytest.mark.integration
def test_raw_text_that_begins_with_the_mark_comes_back_as_pushed(use_redis: redis.Redis) -> None:
    queue = eventbus.connection()
    text = "\x001not a packed body"
    queue.push_raw(text)
    assert queue.peek() == [text]
    job = queue.pop()
    assert job is not None and job.raw == text


@pytest.mark.integration
def test_a_worker_runs_json_bodies_of_an_earlier_version_and_fails_a_broken_packed_one(
        use_redis: redis.Redis, start_worker: object) -> None:
    """Bodies queued as JSON before an upgrade still run; a packed body cut short becomes a
    failed record that keeps its bytes."""
    eventbus.configure(connections={"redis": {"driver": "redis", "url": REDIS_URL, "block_for": 1,
                                              "compact_bodies": False}})
    jobs.Record(1).dispatch()  # stored as JSON, as an earlier version stored it
    stored = use_redis.hvals("queues:{default}:bodies")
    assert [s[:1] for s in stored] == [b"{"]
    eventbus.configure(connections={"redis": {"driver": "redis", "url": REDIS_URL, "block_for": 1}})
    queue = eventbus.connection()
    broken = "\x001\"cut-short\""
    use_redis.hset("queues:{default}:bodies", "cut", broken)
    use_redis.rpush("queues:{default}", "cut")
    use_redis.rpush("queues:{default}:notify", 1)
    jobs.Record(2).dispatch()
    code, _, err = run_worker(start_worker, "--stop-when-empty", "--quiet")
    assert code == 0, err
    assert sorted(traces(use_redis, "ran")) == ["1", "2"]
    [record] = eventbus.failed_store().all()
    assert record.payload == broken
    assert queue.size() == 0


@pytest.mark.integration
def test_a_packed_body_pushed_as_text_runs(use_redis: redis.Redis, start_worker: object) -> None:
    """A worker of an earlier release keeps a packed body it cannot read as a failed record;
    retried (``push_raw`` of that text), it is stored as the packed body it is, and runs."""
    payload = make_payload(jobs.Record(3))
    eventbus.connection().push_raw(bodies.pack(payload))
    assert eventbus.connection().peek() == [payload.to_json()]
    code, _, err = run_worker(start_worker, "--stop-when-empty", "--quiet")
    assert code == 0, err
    assert traces(use_redis, "ran") == ["3"]
    assert eventbus.failed_store().all() == []


def test_text_that_only_looks_packed_is_kept_as_given() -> None:
    """Text that splits into the fields but does not make JSON is not taken for a packed body."""
    text = bodies.PACKED + bodies.SEPARATOR.join(["x"] * 14)
    assert bodies.unpack(bodies.store_raw(text)) == text


def test_a_job_name_that_only_compares_equal_to_the_handler_is_written_out() -> None:
    class Loose(str):
        def __eq__(self, other: object) -> bool:
            return isinstance(other, str) and self.lower() == other.lower()

        __hash__ = str.__hash__

    payload = plain(job=Loose("EVENTBUS.CallQueuedHandler@CALL"))
    assert bodies.unpack(bodies.pack(payload)) == payload.to_json()


@pytest.mark.integration
def test_raw_text_keeps_the_id_it_reads_as(use_redis: redis.Redis) -> None:
    """Escaped text is pushed under an id of its own, not the uuid of the JSON inside it."""
    queue = eventbus.connection()
    first = plain()
    queue.push(first)
    text = "\x000" + json.dumps({"uuid": first.uuid, "attempts": 7})
    queue.push_raw(text)
    assert queue.peek() == [first.to_json(), text]


def test_compact_bodies_must_be_true_or_false() -> None:
    with pytest.raises(ConfigurationError, match="'compact_bodies' must be true or false"):
        eventbus.configure(connections={"r": {"driver": "redis", "url": REDIS_URL, "compact_bodies": "false"}})
        eventbus.connection("r")


@pytest.mark.integration
def test_a_payload_pushed_as_text_is_stored_packed_when_it_comes_back_the_same(redis_client: redis.Redis) -> None:
    """``eventbus retry`` pushes a failed record's text: packed too, when packing gives it back
    byte for byte; text written any other way (spaces, another key order) is stored as given."""
    eventbus.configure(connections={"r": {"driver": "redis", "url": REDIS_URL},
                                    "plain": {"driver": "redis", "url": REDIS_URL, "compact_bodies": False,
                                              "queue": "plain"}})
    queue = eventbus.connection("r")
    ours, spaced = plain(), plain()
    spaced_text = json.dumps(spaced.to_dict())  # ", " and ": " separators: not what to_json writes
    queue.push_raw(ours.to_json())
    queue.push_raw(spaced_text)
    eventbus.connection("plain").push_raw(plain().to_json())
    stored = redis_client.hgetall("queues:{default}:bodies")
    assert stored[ours.uuid.encode()] == bodies.pack(ours).encode()
    assert stored[spaced.uuid.encode()] == spaced_text.encode()
    assert all(body.startswith(b"{") for body in redis_client.hvals("queues:{plain}:bodies"))
    assert queue.peek() == [ours.to_json(), spaced_text]


def test_text_too_deeply_nested_to_read_is_kept_as_given() -> None:
    fields = ['"u"', '"D"'] + [""] * 8 + ["[" * 100_000 + "]" * 100_000, "", "", "1.0"]
    text = bodies.PACKED + bodies.SEPARATOR.join(fields)
    assert bodies.unpack(bodies.store_raw(text)) == text


def test_without_compact_bodies_a_packed_body_given_as_text_is_stored_as_its_json() -> None:
    """Going back to an earlier release: a retried record of packed text must reach the old
    workers as JSON."""
    payload = plain()
    assert bodies.store_raw(bodies.pack(payload), compact=False) == payload.to_json()
    assert bodies.store_raw(payload.to_json(), compact=False) == payload.to_json()
