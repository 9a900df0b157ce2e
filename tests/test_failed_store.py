"""The failed job stores (Redis, SQLite, PostgreSQL, memory): nothing a payload says can make one
lose a record."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import redis
from click.testing import CliRunner
from helpers import PG_URL, REDIS_URL, database_reason

import eventbus
from eventbus.failed import FailedJobStore, store_for

STORES = ["redis", "sqlite", "postgres", "memory"]


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: object) -> Iterator[FailedJobStore]:
    kind = request.param
    if kind == "redis":
        request.getfixturevalue("redis_client")
        url = REDIS_URL
    elif kind == "postgres":
        reason = database_reason(PG_URL)
        if reason:
            pytest.skip(reason)
        url = PG_URL
    elif kind == "sqlite":
        url = f"sqlite:///{tmp_path}/failed.sqlite3"
    else:
        url = "memory"
    found = store_for(url)
    found.flush()
    yield found
    found.flush()
    found.close()


def test_a_uuid_that_looks_like_a_cutoff_is_just_a_uuid(store: FailedJobStore) -> None:
    """``eventbus forget before:+inf`` must forget nothing but a record of that name."""
    store.log("c", "q", "{}", "E: one", "kept-1")
    store.log("c", "q", "{}", "E: two", "kept-2")
    assert store.forget("before:+inf") is False
    assert {r.uuid for r in store.all()} == {"kept-1", "kept-2"}
    store.log("c", "q", "{}", "E: three", "before:+inf")
    assert store.forget("before:+inf") is True
    assert {r.uuid for r in store.all()} == {"kept-1", "kept-2"}


def test_prune_by_age_is_its_own_operation(store: FailedJobStore) -> None:
    store.log("c", "q", "{}", "E: old", "old")
    time.sleep(0.05)
    cutoff = time.time()
    time.sleep(0.05)
    store.log("c", "q", "{}", "E: new", "new")
    assert store.flush(older_than_s=time.time() - cutoff) == 1
    assert [r.uuid for r in store.all()] == ["new"]


def test_a_second_failure_with_the_same_uuid_never_overwrites_the_first(store: FailedJobStore) -> None:
    first = store.log("c", "q", '{"uuid":"dup"}', "E: the real failure", "dup")
    second = store.log("c", "q", '{"uuid":"dup","forged":true}', "E: an impostor", "dup")
    assert first.uuid == "dup" and second.uuid != "dup" and second.uuid.startswith("dup")
    kept = store.find("dup")
    assert kept is not None and kept.summary == "E: the real failure"
    assert {r.summary for r in store.all()} == {"E: the real failure", "E: an impostor"}


def test_any_body_text_is_kept_even_bytes_that_are_not_utf8(store: FailedJobStore) -> None:
    raw = b'{"uuid":"bin","x":"\xff\xfe"}'.decode("utf-8", "surrogateescape")
    store.log("c", "q", raw, "E: not utf-8", "bin")
    record = store.find("bin")
    assert record is not None and record.payload.encode("utf-8", "surrogateescape") == \
        raw.encode("utf-8", "surrogateescape") or "\\xff" in record.payload  # SQL keeps escapes
    assert [r.uuid for r in store.all()] == ["bin"]


def test_the_cli_lists_records_it_cannot_parse(redis_client: redis.Redis) -> None:
    eventbus.configure(default="redis", connections={"redis": {"driver": "redis", "url": REDIS_URL}})
    store = eventbus.failed_store()
    store.log("redis", "default", "{}", "E: fine", "good")
    redis_client.hset("queues:failed:{failed_jobs}", "broken", b"{not json")
    redis_client.zadd("queues:failed:{failed_jobs}:index", {"broken": time.time()})
    from eventbus.cli import main

    result = CliRunner().invoke(main, ["failed"])
    assert result.exit_code == 0, result.output
    assert "good" in result.output and "broken" in result.output
    assert "unreadable" in result.output


def test_records_kept_beside_their_queues_are_listed_found_and_removed_with_the_rest(
        redis_client: redis.Redis) -> None:
    """On the queue's own Redis a failure is recorded in the queue's hash slot: every command
    still sees it (``failed``, ``retry``, ``forget``, ``flush``)."""
    from eventbus.failed.base import record_for
    from eventbus.payload import Payload

    eventbus.configure(default="redis", connections={"redis": {"driver": "redis", "url": REDIS_URL}})
    queue, store = eventbus.connection(), eventbus.failed_store()
    store.log("redis", "default", "{}", "E: in the store itself", "own")
    for name in ("mail", "sms"):
        queue.push(Payload(display_name="T", command_name="t.J", command={}), name)
        job = queue.pop(name)
        assert job is not None
        store.fail_reserved(job, record_for(job, f"E: failed on {name}"))
    assert queue.size("mail") == queue.size("sms") == 0
    assert {r.summary for r in store.all()} == {"E: in the store itself", "E: failed on mail", "E: failed on sms"}
    assert redis_client.hlen("queues:{mail}:failed") == 1
    from eventbus.cli import main

    listed = CliRunner().invoke(main, ["failed"])
    assert listed.exit_code == 0 and "E: failed on sms" in listed.output
    mail = next(r for r in store.all() if r.queue == "mail")
    assert store.find(mail.uuid) == mail and store.forget(mail.uuid) and store.find(mail.uuid) is None
    assert store.flush() == 2 and store.all() == []


def test_the_failed_store_knows_every_redis_url_scheme_without_importing_redis() -> None:
    """Choosing a store reads the scheme from a list of its own (importing no redis-py); it
    must name every scheme the Redis driver accepts."""
    from eventbus.failed import REDIS_SCHEMES
    from eventbus.queue.redis.topology import SCHEMES

    assert set(REDIS_SCHEMES) == set(SCHEMES)
