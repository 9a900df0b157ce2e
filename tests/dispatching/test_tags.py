"""Tags travel in the payload: a job's own ``tags()``, ``Class:key`` for each model it carries,
the event of a queued listener, the notification and notifiable of a queued notification. They
are signed with the rest, bounded, and a payload without them stays valid."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

import eventbus
from eventbus.dispatching import make_payload
from eventbus.errors import DeserializationError, SerializationError
from eventbus.payload import MAX_TAG_LENGTH, MAX_TAGS, Payload, parse_document, verify
from eventbus.testing import memory_queue
from listeners import listener
from notifications import Notifiable, Notification

USERS: dict[int, Any] = {}


class User(Notifiable):
    """A model stored by identifier (Laravel's SerializesModels)."""

    def __init__(self, id: int, email: str = "") -> None:
        self.id = id
        self.email = email


eventbus.register_model(User, key=lambda u: u.id, load=lambda cls, key: USERS.get(key))


class ShipOrder(eventbus.Job):
    def __init__(self, order_id: int, buyer: User, others: list[User] | None = None) -> None:
        self.order_id = order_id
        self.buyer = buyer
        self.others = others or []

    def tags(self) -> list[str]:
        return [f"order:{self.order_id}", "shipping"]

    def handle(self) -> None:
        pass


class Untagged(eventbus.Job):
    def __init__(self, n: int) -> None:
        self.n = n

    def handle(self) -> None:
        pass


class Sealed(ShipOrder):
    encrypted = True


class Chatty(eventbus.Job):
    def __init__(self, given: Any) -> None:
        self.given = given

    def tags(self) -> Any:
        return self.given

    def handle(self) -> None:
        pass


@dataclasses.dataclass
class OrderShipped(eventbus.Event):
    order_id: int
    buyer: User

    def tags(self) -> list[str]:
        return [f"order:{self.order_id}"]


class SendShipmentMail:
    """Registered by the test that needs it (each test starts with no listeners)."""

    def tags(self, event: OrderShipped) -> list[str]:
        return ["mail"]

    def handle(self, event: OrderShipped) -> None:
        pass


class Shipped(Notification):
    queued = True

    def __init__(self, order_id: int) -> None:
        self.order_id = order_id

    def via(self, notifiable: Any) -> list[str]:
        return ["log"]

    def tags(self, notifiable: Any) -> list[str]:
        return [f"order:{self.order_id}"]

    def to_log(self, notifiable: Any) -> str:
        return "shipped"


def queued_docs() -> list[dict[str, Any]]:
    return [parse_document(raw) for raw in eventbus.connection().peek(limit=100)]


def test_a_jobs_tags_and_its_models_travel_in_the_payload() -> None:
    payload = make_payload(ShipOrder(42, User(7), [User(8), User(7)]))
    assert payload.tags == ("order:42", "shipping", "test_tags.User:7", "test_tags.User:8")
    assert json.loads(payload.to_json())["tags"] == list(payload.tags)
    assert Payload.from_json(payload.to_json()).tags == payload.tags


def test_a_job_without_tags_or_models_has_none_and_no_field() -> None:
    payload = make_payload(Untagged(1))
    assert payload.tags == () and "tags" not in payload.to_dict()


def test_an_encrypted_job_keeps_its_own_tags_but_names_no_model() -> None:
    eventbus.configure(key="k" * 32)
    assert make_payload(Sealed(42, User(7))).tags == ("order:42", "shipping")


def test_tags_are_signed_with_the_rest() -> None:
    eventbus.configure(key="secret-key")
    doc = make_payload(ShipOrder(1, User(2))).signed("secret-key").to_dict()
    assert verify(doc, "secret-key")
    doc["tags"] = ["order:2"]  # someone relabels a queued job
    assert not verify(doc, "secret-key")


def test_a_payload_from_before_tags_is_still_read() -> None:
    doc = make_payload(Untagged(1)).to_dict()
    assert "tags" not in doc and Payload.from_dict(doc).tags == ()


def test_tags_are_bounded_at_dispatch() -> None:
    payload = make_payload(Chatty(["a" * 500, "", "b", "b", *[f"t{n}" for n in range(100)]]))
    assert payload.tags[0] == "a" * MAX_TAG_LENGTH and payload.tags[1] == "b"
    assert len(payload.tags) == MAX_TAGS
    with pytest.raises(SerializationError, match=r"Chatty.tags\(\) must return a list of strings"):
        make_payload(Chatty("order:1"))
    with pytest.raises(SerializationError, match=r"must return strings, not int"):
        make_payload(Chatty(["ok", 3]))


def test_many_models_give_at_most_the_bound() -> None:
    payload = make_payload(Untagged([User(n) for n in range(500)]))  # type: ignore[arg-type]
    assert len(payload.tags) == MAX_TAGS and payload.tags[0] == "test_tags.User:0"


@pytest.mark.parametrize("tags", [
    "order:1", ["ok", 7], [""], ["x" * (MAX_TAG_LENGTH + 1)], [f"t{n}" for n in range(MAX_TAGS + 1)], {"a": 1}])
def test_a_hostile_payload_with_bad_tags_is_refused(tags: Any) -> None:
    doc = make_payload(Untagged(1)).to_dict()
    doc["tags"] = tags
    with pytest.raises(DeserializationError, match="payload field 'tags'"):
        Payload.from_dict(doc)


def test_a_queued_listener_is_tagged_with_its_event_its_own_tags_and_the_events_models() -> None:
    listener(queued=True)(SendShipmentMail)
    with memory_queue():
        eventbus.emit(OrderShipped(42, User(7)))
        [doc] = queued_docs()
    assert doc["tags"] == ["test_tags.OrderShipped", "mail", "order:42", "test_tags.User:7"]


def test_a_queued_notification_is_tagged_with_its_class_and_its_notifiable() -> None:
    with memory_queue():
        User(7, "a@example.com").notify(Shipped(42))
        [doc] = queued_docs()
    assert doc["tags"] == ["test_tags.Shipped", "test_tags.User:7", "order:42"]
