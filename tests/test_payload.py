"""The payload document and configuration."""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
import uuid

import pytest

import eventbus
from eventbus import runtime, urls
from eventbus.errors import ConfigurationError, DeserializationError, SerializationError
from eventbus.dispatching import make_payload
from eventbus.payload import NO_HEADERS, Payload, new_uuid, sign, verify


class Podcast(eventbus.Job):
    queue = "podcasts"
    tries = 3
    backoff = 5
    timeout = 60

    def __init__(self, podcast_id: int) -> None:
        self.podcast_id = podcast_id

    def handle(self) -> None:
        pass


def test_payload_has_laravels_shape() -> None:
    doc = json.loads(make_payload(Podcast(7)).to_json())
    assert set(doc) >= {"uuid", "displayName", "job", "maxTries", "maxExceptions", "backoff", "timeout",
                        "retryUntil", "failOnTimeout", "data", "attempts", "pushedAt"}
    assert doc["job"] == "eventbus.CallQueuedHandler@call"
    assert doc["displayName"] == "test_payload.Podcast"
    assert doc["data"] == {"commandName": "test_payload.Podcast", "command": {"podcast_id": 7}}
    assert (doc["maxTries"], doc["backoff"], doc["timeout"], doc["attempts"]) == (3, [5.0], 60.0, 0)


def test_payload_round_trips() -> None:
    payload = make_payload(Podcast(7))
    assert Payload.from_json(payload.to_json()) == payload


def test_the_fast_constructor_builds_what_the_dataclass_builds_and_refuses_a_missing_field() -> None:
    built = make_payload(Podcast(7))  # through Payload.from_fields
    again = Payload.from_dict(json.loads(built.to_json()))  # through Payload.checked
    assert again == built == dataclasses.replace(built)  # the dataclass's own __init__
    assert vars(built).keys() == vars(again).keys() == {f.name for f in dataclasses.fields(Payload)}
    fields = {name: value for name, value in vars(built).items() if name != "headers"}
    with pytest.raises(TypeError, match=r"missing \['headers'\], unknown \[\]"):
        Payload.checked(**fields)
    with pytest.raises(TypeError, match=r"missing \['headers'\], unknown \['header'\]"):
        Payload.checked(**fields, header={})


def test_replace_changes_fields_and_signs_again_or_drops_the_signature() -> None:
    """``Payload.replace``: the one way to change a payload, so a change never keeps a signature
    that covered the fields before it."""
    key, other = "k" * 32, "o" * 32
    signed = Payload.checked(**{**vars(make_payload(Podcast(7))), "signature": None}, key=key)
    assert signed.signature is not None and verify(signed.to_dict(), key)
    step = {"destination": {"queue": "q"}, "payload": {"uuid": "s"}}
    changed = signed.replace(uuid="u-2", chained=[step], key=key)
    assert (changed.uuid, changed.chained) == ("u-2", (step,)) and signed.uuid != "u-2"
    assert changed.signature not in (None, signed.signature) and verify(changed.to_dict(), key)
    assert changed == dataclasses.replace(signed, uuid="u-2", chained=(step,), signature=changed.signature)
    unsigned = signed.replace(headers={"traceparent": "00-x"})
    assert unsigned.signature is None and unsigned.headers == {"traceparent": "00-x"}
    assert not verify(signed.replace(key=other).to_dict(), key) and signed.signed(key) == signed
    assert signed.replace(signature="forged").signature == "forged"
    with pytest.raises(TypeError, match="Payload has no field 'header'"):
        signed.replace(header={})


def test_a_payload_without_steps_or_headers_holds_shared_read_only_empties() -> None:
    """A payload held for a bulk push costs the garbage collector for every container it holds;
    the empty step lists and headers are shared, so they must be ones nobody can change."""
    built, parsed = make_payload(Podcast(7)), Payload.from_json(make_payload(Podcast(8)).to_json())
    for payload in (built, parsed, Payload(display_name="P", command_name="p.P", command={})):
        assert payload.chained == payload.chain_catch == payload.chain_finally == ()
        assert payload.headers is NO_HEADERS and payload.headers == {}
    with pytest.raises(TypeError, match="read-only"):
        built.headers["traceparent"] = "00-abc"  # type: ignore[index]
    for copied in (copy.deepcopy(built), pickle.loads(pickle.dumps(built))):
        assert copied == built and copied.headers is NO_HEADERS
    assert dataclasses.asdict(built)["headers"] == {} and json.dumps(built.headers) == "{}"
    steps = [{"destination": {"connection": "sync", "queue": None, "delay": 0.0}, "payload": {}}]
    chained = make_payload(Podcast(7), chained=steps, chain_catch=steps, chain_finally=steps)
    steps.clear()  # the caller's list is copied, not kept
    again = Payload.from_json(chained.to_json())
    assert again == chained and len(again.chained) == len(again.chain_catch) == 1
    by_hand = Payload(display_name="P", command_name="p.P", command={}, chained=[{"n": 1}])
    assert Payload.from_json(by_hand.to_json()) == by_hand and by_hand.chained == ({"n": 1},)
    assert json.loads(chained.to_json())["chainFinally"] == json.loads(again.to_json())["chainFinally"]


def test_a_payload_that_refers_to_itself_is_refused_with_one_clear_error() -> None:
    looped: dict[str, object] = {}
    looped["self"] = looped
    with pytest.raises(SerializationError, match="nested too deeply"):
        Payload(display_name="P", command_name="p.P", command=looped).to_json()


def test_retry_until_seconds_become_a_timestamp() -> None:
    job = Podcast(1)
    job.retry_until = 30  # type: ignore[misc]
    payload = make_payload(job)
    assert payload.retry_until is not None and payload.retry_until - payload.pushed_at == pytest.approx(30, abs=1)


@pytest.mark.parametrize("text", ["not json", "[]", '{"uuid": "x"}'])
def test_bad_payload_text_is_a_deserialization_error(text: str) -> None:
    with pytest.raises(DeserializationError):
        Payload.from_json(text)


def test_signature_detects_tampering() -> None:
    doc = make_payload(Podcast(7)).to_dict()
    doc["signature"] = sign(doc, "secret")
    assert verify(doc, "secret")
    doc["data"]["command"]["podcast_id"] = 8
    assert not verify(doc, "secret")


def test_defaults_without_configuration() -> None:
    s = runtime.settings()
    assert s.default == "database"
    assert s.connection_config()["url"] == "sqlite:///eventbus.sqlite3"
    assert s.connection_config("redis")["url"] == "redis://127.0.0.1:6379/0"
    assert (s.connection_config("redis")["retry_after"], s.mail, s.sms) == (90.0, "log", "log")


def test_environment_is_read_at_first_use(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVENTBUS_CONNECTION", "redis")
    monkeypatch.setenv("EVENTBUS_REDIS_URL", "redis://10.0.0.1:6390/3")
    assert runtime.settings().default == "redis"
    assert runtime.settings().connection_config()["url"] == "redis://10.0.0.1:6390/3"
    assert runtime.settings().failed == "redis://10.0.0.1:6390/3"


def test_connections_merge_by_name() -> None:
    s = eventbus.configure(connections={"redis": {"driver": "redis", "url": "redis://h/1", "block_for": 0},
                                        "fast": {"driver": "sync"}})
    assert s.connection_config("redis")["block_for"] == 0
    assert {"database", "redis", "sync", "null", "fast"} <= set(s.connections)


@pytest.mark.parametrize("kwargs, message", [
    ({"default": "nope"}, "unknown default connection 'nope'"),
    ({"connections": {"x": {"driver": "kafka"}}}, "connection 'x' has unknown driver 'kafka'"),
    ({"connections": {"x": {"driver": "redis", "url": "http://h"}}}, "connection 'x' has a bad redis URL"),
    ({"connections": {"x": {"driver": "database"}}}, "connection 'x' needs a 'url'"),
    ({"connections": {"x": {"driver": "redis", "url": "redis://h", "retry_after": -1}}}, "'retry_after' must be"),
])
def test_bad_configuration_is_one_clear_sentence(kwargs: dict, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        eventbus.configure(**kwargs)


def test_unknown_connection_names_the_connection() -> None:
    with pytest.raises(ConfigurationError, match="unknown connection 'nowhere'"):
        eventbus.connection("nowhere")


def test_redact_url_hides_the_password() -> None:
    assert urls.redact_url("postgresql://u:secret@h:5/db") == "postgresql://u:***@h:5/db"


def test_settings_never_show_secrets() -> None:
    s = eventbus.configure(
        connections={"redis": {"driver": "redis", "url": "redis://:hunter2@h:6379/0?password=hunter3"},
                     "db": {"driver": "database", "url": "postgresql://app:hunter4@db/app"},
                     "sqs": {"driver": "sqs", "key": "AKIA", "secret": "hunter9", "token": "hunter10",
                             "region": "eu-west-1", "queue": "default"}},
        mail="smtp://user:hunter5@smtp.example.com:587", sms="twilio://SID:hunter6@api.twilio.com",
        failed="postgresql://app:hunter7@db/app", key="hunter8")
    shown = repr(s)
    assert not any(f"hunter{n}" in shown for n in range(2, 11)), shown
    assert "***" in shown and "eu-west-1" in shown


@pytest.mark.parametrize("url", ["redis://user:hunter2@[::1:6379/0", "postgresql://u:hunter2@h:notaport/db",
                                 "redis://h:6379/0?password=hunter2&db=1"])
def test_errors_never_print_a_password(url: str) -> None:
    for driver in ("redis", "database"):
        try:
            eventbus.configure(connections={"x": {"driver": driver, "url": url}})
            eventbus.connection("x").ping()
        except eventbus.EventBusError as exc:
            assert "hunter2" not in str(exc), exc
        else:  # pragma: no cover - these URLs cannot work
            raise AssertionError(f"{url} was accepted")


def test_unknown_settings_and_connection_options_name_the_key() -> None:
    with pytest.raises(ConfigurationError, match="unknown setting 'conections' \\(did you mean 'connections'\\?\\)"):
        eventbus.configure(conections={})
    with pytest.raises(ConfigurationError, match="connection 'redis' has unknown option 'retry_afer' "
                                                  "\\(did you mean 'retry_after'\\?\\)"):
        eventbus.configure(connections={"redis": {"driver": "redis", "url": "redis://h", "retry_afer": 5}})


def test_a_parsed_payload_sets_every_field_and_equals_the_payload_it_was_made_from() -> None:
    """from_dict fills the dataclass's fields itself: a field added to Payload must be read too."""
    full = Payload(display_name="app.Job", command_name="app.Job", command={"n": 1}, max_tries=3,
                   max_exceptions=2, backoff=[1.0, 5.0], timeout=30.0, retry_until=2_000_000_000.0,
                   fail_on_timeout=True, attempts=2, chained=({"destination": {}, "payload": {}},),
                   unique={"key": "k", "via": None, "untilProcessing": False}, batch_id="b@redis",
                   chain_catch=({"destination": {}, "payload": {}},), signature="sig",
                   headers={"traceparent": "00-abc"})
    bare = Payload(display_name="app.Job", command_name="app.Job", command={})
    for made in (full, bare):
        parsed = Payload.from_json(made.to_json())
        assert set(vars(parsed)) == {field.name for field in dataclasses.fields(Payload)}
        assert parsed == made


def test_new_uuids_are_random_version_4_uuids() -> None:
    made = [new_uuid() for _ in range(2000)]
    parsed = [uuid.UUID(text) for text in made]
    assert [str(u) for u in parsed] == made  # the canonical form, lower case
    assert {u.version for u in parsed} == {4} and {u.variant for u in parsed} == {uuid.RFC_4122}
    assert {text[19] for text in made} == set("89ab")  # the variant digit keeps its two random bits
    assert len(set(made)) == len(made)
