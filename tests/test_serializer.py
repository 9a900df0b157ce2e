"""Tagged JSON round trips and the registry's refusals."""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import enum
import json
import uuid

import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st

import eventbus
from eventbus import registry, serializer
from eventbus.errors import ModelNotFoundError, SerializationError, UnsafePayloadError


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


registry.register(Color)


@eventbus.serializable
@dataclasses.dataclass
class Address:
    street: str
    zip: tuple[int, ...]


@eventbus.serializable
@dataclasses.dataclass(frozen=True)
class Customer:
    name: str
    address: Address
    tags: set[str]


class Point(pydantic.BaseModel):
    x: int
    y: float


registry.register(Point)


def roundtrip(value: object) -> object:
    text = json.dumps(serializer.encode(value))  # must be plain JSON
    return serializer.decode(json.loads(text))


json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
plain_json = st.recursive(json_scalars, lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner), max_leaves=20)
datetimes = st.datetimes(timezones=st.none() | st.just(dt.timezone.utc) | st.builds(
    dt.timezone, st.timedeltas(min_value=dt.timedelta(hours=-12), max_value=dt.timedelta(hours=12))))
tagged = (datetimes | st.dates() | st.times() | st.timedeltas() | st.decimals(allow_nan=False, allow_infinity=False)
          | st.uuids() | st.sampled_from(Color) | st.binary() | st.tuples(st.integers(), st.text())
          | st.sets(st.integers()) | st.frozensets(st.text()))
values = st.recursive(json_scalars | tagged, lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner)
                      | st.dictionaries(st.integers(), inner), max_leaves=15)


@given(plain_json)
def test_plain_json_is_stored_as_is(value: object) -> None:
    assert serializer.encode(value) == value
    assert roundtrip(value) == value


@given(values)
def test_tagged_values_round_trip(value: object) -> None:
    assert roundtrip(value) == value


@given(st.integers(min_value=10**16, max_value=10**30))
def test_big_integers_stay_integers(n: int) -> None:
    back = roundtrip([n, {"n": n}])
    assert back == [n, {"n": n}] and isinstance(back[0], int)  # type: ignore[index]


@given(st.builds(Customer, st.text(), st.builds(Address, st.text(), st.tuples(st.integers())), st.sets(st.text())))
def test_nested_dataclasses_round_trip(customer: Customer) -> None:
    assert roundtrip(customer) == customer


def test_naive_and_aware_datetimes_keep_their_kind() -> None:
    naive = dt.datetime(2026, 11, 22, 10, 0, 0, 123456)
    aware = naive.replace(tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert roundtrip([naive, aware]) == [naive, aware]
    assert roundtrip(aware).utcoffset() == dt.timedelta(hours=2)  # type: ignore[union-attr]


def test_pydantic_models_round_trip() -> None:
    assert roundtrip({"p": Point(x=1, y=2.5)}) == {"p": Point(x=1, y=2.5)}


def test_dict_with_the_tag_key_is_not_mistaken_for_a_tag() -> None:
    value = {"__t__": "datetime", "v": "not a date"}
    assert roundtrip(value) == value


def test_decimal_precision_is_kept() -> None:
    assert roundtrip(decimal.Decimal("1.10")) == decimal.Decimal("1.10")
    assert str(roundtrip(decimal.Decimal("1.10"))) == "1.10"


def test_unserializable_value_names_the_field() -> None:
    class Opaque:
        pass

    with pytest.raises(SerializationError) as info:
        serializer.encode({"order": {"items": [1, Opaque()]}}, "event")
    assert info.value.path == "event.order.items[1]"
    assert "event.order.items[1]" in str(info.value)


@pytest.mark.parametrize("name", ["os.system", "builtins.eval", "subprocess.Popen", "tests.nowhere.Thing"])
def test_decoding_refuses_names_outside_the_registry(name: str) -> None:
    with pytest.raises(UnsafePayloadError, match="refusing to load"):
        serializer.decode({"__t__": "obj", "cls": name, "v": {}})


def test_trusted_prefix_allows_plain_data_types_only(monkeypatch: pytest.MonkeyPatch) -> None:
    registry.trust("apps")
    # a dataclass-free module attribute that is a function is still refused
    with pytest.raises(UnsafePayloadError):
        serializer.decode({"__t__": "obj", "cls": "apps.jobs.trace", "v": {}})
    # registered classes in the trusted module resolve after a lazy import
    job = serializer.decode({"__t__": "obj", "cls": "apps.jobs.Record", "v": {"n": 3, "sleep": 0}})
    assert type(job).__name__ == "Record" and job.n == 3


def test_decoding_does_not_call_init() -> None:
    calls = []

    @eventbus.serializable
    class Guarded:
        def __init__(self) -> None:
            calls.append(1)
            self.x = 1

    obj = roundtrip(Guarded())
    assert calls == [1] and obj.x == 1  # type: ignore[attr-defined]


def test_models_are_stored_by_key_and_reloaded() -> None:
    @dataclasses.dataclass
    class User:
        id: int
        name: str

    db = {7: User(7, "Ada")}
    eventbus.register_model(User, key=lambda u: u.id, load=lambda cls, key: db.get(key))
    encoded = serializer.encode(User(7, "stale name"))
    assert encoded == {"__t__": "model", "cls": registry.dotted_name(User), "key": 7}
    assert serializer.decode(encoded) == User(7, "Ada")
    del db[7]
    with pytest.raises(ModelNotFoundError):
        serializer.decode(encoded)


def test_uuid_and_bytes() -> None:
    u = uuid.uuid4()
    assert roundtrip((u, b"\x00\xff")) == (u, b"\x00\xff")


class Launch(eventbus.Job):
    """A registered job whose __init__ has a side effect a payload must never trigger."""

    started: list[object] = []

    def __init__(self, target: object) -> None:
        Launch.started.append(target)


def test_the_enum_tag_builds_only_enums() -> None:
    Launch.started.clear()
    name = registry.dotted_name(Launch)
    with pytest.raises(UnsafePayloadError, match="not an Enum"):
        serializer.decode({"__t__": "enum", "cls": name, "v": "moon"})
    assert Launch.started == []  # the job's __init__ never ran
    assert serializer.decode({"__t__": "enum", "cls": registry.dotted_name(Color), "v": "red"}) is Color.RED


def test_the_pydantic_tag_builds_only_pydantic_models() -> None:
    with pytest.raises(UnsafePayloadError, match="not a pydantic model"):
        serializer.decode({"__t__": "pydantic", "cls": registry.dotted_name(Launch), "v": {}})
    assert serializer.decode({"__t__": "pydantic", "cls": registry.dotted_name(Point),
                              "v": {"x": 1, "y": 2}}) == Point(x=1, y=2)


def test_callables_are_not_data_types() -> None:
    """A listener function or a handler is registered apart: no tag can name it."""
    from listeners import listener

    @dataclasses.dataclass
    class Ping(eventbus.Event):
        n: int

    @listener(Ping)
    def on_ping(event: Ping) -> None:
        raise AssertionError("must not run")

    name = registry.dotted_name(on_ping)
    for tag in ({"__t__": "obj", "cls": name, "v": {}}, {"__t__": "enum", "cls": name, "v": 1},
                {"__t__": "pydantic", "cls": name, "v": {}}):
        with pytest.raises(UnsafePayloadError):
            serializer.decode(tag)


def test_classes_defined_in_main_are_refused_at_dispatch() -> None:
    Stray = type("Stray", (eventbus.Job,), {"__module__": "__main__", "handle": lambda self: None})
    with pytest.raises(SerializationError, match="defined in __main__.*move it into a module"):
        eventbus.dispatch(Stray(), connection="null")
    Note = dataclasses.make_dataclass("Note", [("text", str)])
    Note.__module__ = "__main__"
    with pytest.raises(SerializationError, match="defined in __main__"):
        serializer.encode({"note": Note("hi")})


def test_nan_and_infinity_are_refused_at_dispatch() -> None:
    class Measure(eventbus.Job):
        def __init__(self, value: float) -> None:
            self.value = value

        def handle(self) -> None: ...

    with pytest.raises(SerializationError, match="NaN"):
        eventbus.dispatch(Measure(float("nan")), connection="null")
    with pytest.raises(SerializationError, match=r"Measure.value: inf is not JSON"):
        eventbus.dispatch(Measure(float("inf")), connection="null")
    with pytest.raises(SerializationError, match=r"value.points\[1\]: -inf is not JSON"):
        serializer.encode({"points": [1.5, float("-inf")]})
