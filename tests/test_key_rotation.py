"""Key rotation: payloads are signed with the current key and verified with it and the previous
ones (``EVENTBUS_PREVIOUS_KEYS`` / ``configure(previous_keys=[...])``), so changing the key does
not fail the jobs in flight; the keys themselves are validated."""

from __future__ import annotations

import json
from typing import Any

import pytest
import redis

import eventbus
from apps import jobs
from apps.sealed import SealedRecord
from eventbus import runtime
from eventbus.errors import ConfigurationError
from eventbus.payload import verify
from helpers import REDIS_URL, run_worker, traces

OLD, NEW, STRANGER = "key-of-last-year", "key-of-this-year", "nobody's-key"


def use_key(key: str, **options: Any) -> None:
    eventbus.configure(default="redis", key=key, connections={"redis": {
        "driver": "redis", "url": REDIS_URL, "block_for": 1}}, **options)


@pytest.mark.parametrize("bad", [["k1", "k2"], b"bytes-key", 42])
def test_a_key_that_is_not_text_is_refused_at_configure(bad: Any) -> None:
    with pytest.raises(ConfigurationError, match="'key' must be a non-empty string"):
        eventbus.configure(key=bad)


@pytest.mark.parametrize("bad", ["one-string", [""], [7], 3])
def test_previous_keys_must_be_a_list_of_text(bad: Any) -> None:
    with pytest.raises(ConfigurationError, match="'previous_keys' must (be a list|hold non-empty) "):
        eventbus.configure(key=NEW, previous_keys=bad)


def test_previous_keys_come_from_the_environment_and_need_a_current_key(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVENTBUS_PREVIOUS_KEYS", f"{OLD}, older-still,")
    with pytest.raises(ConfigurationError, match="need a current key"):
        runtime.settings()
    monkeypatch.setenv("EVENTBUS_KEY", NEW)
    runtime.reset()
    current = runtime.settings()
    assert current.previous_keys == (OLD, "older-still")
    assert current.verification_keys == (NEW, OLD, "older-still")
    assert OLD not in repr(current) and NEW not in repr(current)


def test_dispatch_signs_with_the_current_key_only(use_redis: redis.Redis) -> None:
    use_key(NEW, previous_keys=[OLD])
    jobs.Record(1).dispatch()
    [raw] = eventbus.connection().peek()
    assert verify(json.loads(raw), NEW) and not verify(json.loads(raw), OLD)


@pytest.mark.integration
def test_jobs_signed_or_sealed_with_a_previous_key_still_run(use_redis: redis.Redis,
                                                             start_worker: object) -> None:
    use_key(OLD)
    jobs.Record(1).dispatch()
    SealedRecord(2).dispatch()
    use_key(STRANGER)
    jobs.Record(3).dispatch()  # signed with a key the worker does not know: refused
    use_key(NEW)
    jobs.Record(4).dispatch()
    SealedRecord(5).dispatch()
    code, _, err = run_worker(start_worker, "--stop-when-empty", "--quiet",
                              env={"EVENTBUS_KEY": NEW, "EVENTBUS_PREVIOUS_KEYS": OLD})
    assert code == 0, err
    assert sorted(traces(use_redis, "ran")) == ["1", "2", "4", "5"]
    [refused] = eventbus.failed_store().all()
    assert "signature does not match" in refused.summary and json.loads(refused.payload)["data"][
        "command"]["n"] == 3


@pytest.mark.integration
def test_without_the_previous_key_jobs_in_flight_are_refused(use_redis: redis.Redis,
                                                            start_worker: object) -> None:
    use_key(OLD)
    jobs.Record(1).dispatch()
    code, _, err = run_worker(start_worker, "--stop-when-empty", "--quiet", env={"EVENTBUS_KEY": NEW})
    assert code == 0, err
    assert traces(use_redis, "ran") == [] and len(eventbus.failed_store().all()) == 1
