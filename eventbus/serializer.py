"""Tagged JSON: Python values to JSON-safe structures and back, without pickle.

Plain JSON values (``None``, bool, int, float, str, lists, dicts with string keys) are written as
they are. Everything else becomes a dict with a ``"__t__"`` tag::

    datetime, date, time   {"__t__": "datetime", "v": "2026-11-22T10:00:00+00:00"}
    timedelta              {"__t__": "timedelta", "v": [days, seconds, microseconds]}
    Decimal, UUID          {"__t__": "decimal", "v": "1.10"}
    bytes                  {"__t__": "bytes", "v": "<base64>"}
    tuple, set, frozenset  {"__t__": "tuple", "v": [...]}
    Enum                   {"__t__": "enum", "cls": "app.Color", "v": <value>}
    model by identifier    {"__t__": "model", "cls": "app.User", "key": 7}
    pydantic model         {"__t__": "pydantic", "cls": "app.Address", "v": {...}}
    dataclass / registered {"__t__": "obj", "cls": "app.Order", "v": {field: value}}
    dict with other keys   {"__t__": "dict", "v": [[key, value], ...]}

Class names resolve on the way back only through :mod:`eventbus.registry`. Objects are rebuilt
without calling ``__init__`` (their state is restored as stored), so decoding runs no user code
except a model adapter's ``load``.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import decimal
import enum
import math
import uuid
from collections.abc import Callable
from typing import Any, cast

from eventbus import registry, runtime
from eventbus.errors import DeserializationError, ModelNotFoundError, SerializationError

TAG = "__t__"

# Attributes that belong to a running job, never to its serialized state.
RUNTIME_ATTRIBUTES = frozenset({"_queue_job", "_chained", "_dispatch_options", "_fake_batch"})


@dataclasses.dataclass(frozen=True)
class ModelAdapter:
    """How to store a model as ``{class, key}`` and load it again when the job runs."""

    key: Callable[[Any], Any]
    load: Callable[[type, Any], Any]


def register_model(
    cls: type, *, key: Callable[[Any], Any], load: Callable[[type, Any], Any]
) -> None:
    """Store instances of ``cls`` by identifier (Laravel's SerializesModels).

    ``key(obj)`` returns a JSON-able identifier; ``load(cls, key)`` returns the fresh object or
    ``None`` when it is gone, which fails the job with :class:`ModelNotFoundError`.
    """
    registry.register(cls)
    tables = runtime.registries()
    with tables.lock:
        tables.model_adapters[cls] = ModelAdapter(key=key, load=load)


ModelResolver = Callable[[type], "ModelAdapter | None"]


def register_model_resolver(resolver: ModelResolver) -> ModelResolver:
    """Find adapters for whole families of classes without a ``register_model`` call each.

    ``resolver(cls)`` returns a :class:`ModelAdapter` for a class it knows (every SQLAlchemy
    mapped class, every Django model) or None. Explicitly registered models win.
    """
    tables = runtime.registries()
    with tables.lock:
        tables.model_resolvers.append(resolver)
        tables.resolved_models.clear()
    return resolver


def adapter_for(cls: type) -> ModelAdapter | None:
    """The model adapter for ``cls`` or its nearest registered base class, else a resolver's."""
    tables = runtime.registries()
    adapters = tables.model_adapters
    for klass in cls.__mro__:
        if klass in adapters:
            return cast("ModelAdapter", adapters[klass])
    resolvers = tables.model_resolvers
    if not resolvers:
        return None
    resolved = tables.resolved_models
    if cls not in resolved:
        resolved[cls] = next((a for a in (r(cls) for r in resolvers) if a is not None), None)
    return cast("ModelAdapter | None", resolved[cls])


def _is_pydantic(value: Any) -> bool:
    return registry.is_pydantic_model(type(value))


def object_state(obj: Any) -> dict[str, Any]:
    """The attributes of ``obj`` that make up its serialized state."""
    if dataclasses.is_dataclass(obj) and not hasattr(obj, "__dict__"):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    return {k: v for k, v in vars(obj).items() if k not in RUNTIME_ATTRIBUTES}


def encode(value: Any, path: str = "value") -> Any:
    """Turn ``value`` into JSON-safe data; raise :class:`SerializationError` naming the field."""
    try:
        return _encode(value, path)
    except RecursionError:
        raise SerializationError(f"cannot serialize {path}: it is nested too deeply (or refers to "
                                 "itself)", path=path) from None


def _encode(value: Any, path: str) -> Any:
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int) and not isinstance(value, enum.Enum):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise SerializationError(f"cannot serialize {path}: {value!r} is not JSON (NaN and "
                                     "Infinity are not)", path=path)
        return value
    if isinstance(value, list):
        return [_encode(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        return _encode_dict(value, path)
    encoder = _ENCODERS.get(type(value))
    if encoder is not None:
        return encoder(value, path)
    return _encode_object(value, path)


def _encode_dict(value: dict[Any, Any], path: str) -> Any:
    if all(isinstance(k, str) for k in value) and TAG not in value:
        return {k: _encode(v, f"{path}.{k}") for k, v in value.items()}
    return {
        TAG: "dict",
        "v": [[_encode(k, f"{path}<key>"), _encode(v, f"{path}[{k!r}]")] for k, v in value.items()],
    }


def class_name(cls: type, path: str = "value") -> str:
    """The name a payload stores for ``cls``; refuses a class a worker could never import."""
    if cls.__module__ == "__main__":
        raise SerializationError(
            f"cannot queue {path}: {cls.__qualname__} is defined in __main__ (the script you ran), "
            "which a worker cannot import; move it into a module and import it from there",
            path=path)
    return registry.dotted_name(cls)


def _encode_object(value: Any, path: str) -> Any:
    cls = type(value)
    if cls.__module__ == "__main__":
        class_name(cls, path)
    if isinstance(value, enum.Enum):
        return {TAG: "enum", "cls": registry.dotted_name(cls), "v": _encode(value.value, path)}
    adapter = adapter_for(cls)
    if adapter is not None:
        return {TAG: "model", "cls": registry.dotted_name(cls), "key": _encode(adapter.key(value), path)}
    if isinstance(value, dt.datetime):
        return _encode_datetime(value, path)
    if isinstance(value, dt.date):
        return {TAG: "date", "v": value.isoformat()}
    if _is_pydantic(value):
        return {TAG: "pydantic", "cls": registry.dotted_name(cls), "v": value.model_dump(mode="json")}
    if dataclasses.is_dataclass(value) or registry.is_registered(registry.dotted_name(cls)):
        state = object_state(value)
        return {
            TAG: "obj",
            "cls": registry.dotted_name(cls),
            "v": {k: _encode(v, f"{path}.{k}") for k, v in state.items()},
        }
    raise SerializationError(
        f"cannot serialize {path}: {cls.__module__}.{cls.__qualname__} is not JSON, a dataclass, "
        "a pydantic model or a registered class (decorate it with @eventbus.serializable, "
        "or register a model adapter with eventbus.register_model)",
        path=path,
    )


def _seq(tag: str) -> Callable[[Any, str], Any]:
    return lambda v, path: {TAG: tag, "v": [_encode(x, f"{path}[{i}]") for i, x in enumerate(v)]}


def _encode_datetime(value: dt.datetime, path: str) -> Any:
    """Naive ISO text plus the exact UTC offset (and the zone name for zoneinfo zones)."""
    out: dict[str, Any] = {TAG: "datetime", "v": value.replace(tzinfo=None).isoformat()}
    offset = value.utcoffset()
    if offset is not None:
        out["tz"] = [offset.days, offset.seconds, offset.microseconds]
        key = getattr(value.tzinfo, "key", None)
        if isinstance(key, str):
            out["zone"] = key
    return out


def _decode_datetime(data: dict[str, Any]) -> dt.datetime:
    naive = dt.datetime.fromisoformat(data["v"])
    if "zone" in data:
        import zoneinfo

        return naive.replace(tzinfo=zoneinfo.ZoneInfo(data["zone"]))
    if data.get("tz") is not None:
        return naive.replace(tzinfo=dt.timezone(dt.timedelta(*data["tz"])))
    return naive


_ENCODERS: dict[type, Callable[[Any, str], Any]] = {
    dt.datetime: _encode_datetime,
    dt.date: lambda v, p: {TAG: "date", "v": v.isoformat()},
    dt.time: lambda v, p: {TAG: "time", "v": v.isoformat()},
    dt.timedelta: lambda v, p: {TAG: "timedelta", "v": [v.days, v.seconds, v.microseconds]},
    decimal.Decimal: lambda v, p: {TAG: "decimal", "v": str(v)},
    uuid.UUID: lambda v, p: {TAG: "uuid", "v": str(v)},
    bytes: lambda v, p: {TAG: "bytes", "v": base64.b64encode(v).decode("ascii")},
    tuple: _seq("tuple"),
    set: _seq("set"),
    frozenset: _seq("frozenset"),
}


def decode(data: Any) -> Any:
    """Rebuild the value that :func:`encode` wrote. Names resolve only through the registry."""
    try:
        return _decode(data)
    except RecursionError:
        raise DeserializationError("payload is nested too deeply to decode") from None


def _decode(data: Any) -> Any:
    if isinstance(data, list):
        return [_decode(v) for v in data]
    if not isinstance(data, dict):
        return data
    tag = data.get(TAG)
    if tag is None:
        return {k: _decode(v) for k, v in data.items()}
    decoder = _DECODERS.get(tag)
    if decoder is None:
        raise DeserializationError(f"unknown tag {tag!r} in payload")
    try:
        return decoder(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise DeserializationError(f"malformed {tag!r} value in payload: {exc}") from exc


def restore_object(cls: type, state: dict[str, Any]) -> Any:
    """Make an instance of ``cls`` from stored state without calling its ``__init__``."""
    obj: Any = cls.__new__(cls)  # type: ignore[call-overload]  # the class's own __new__ (dict subclasses need theirs)
    if hasattr(obj, "__dict__"):
        obj.__dict__.update(state)  # bypasses properties and frozen dataclasses alike
        return obj
    for key, value in state.items():  # __slots__ classes
        object.__setattr__(obj, key, value)
    return obj


def _decode_obj(data: dict[str, Any]) -> Any:
    cls = registry.resolve(data["cls"])
    state = {k: _decode(v) for k, v in data["v"].items()}
    return restore_object(cls, state)


def _decode_model(data: dict[str, Any]) -> Any:
    cls = registry.resolve(data["cls"], accept=lambda found: adapter_for(found) is not None)
    adapter = adapter_for(cls)
    if adapter is None:
        raise DeserializationError(f"{data['cls']} has no model adapter registered")
    key = _decode(data["key"])
    obj = adapter.load(cls, key)
    if obj is None:
        raise ModelNotFoundError(f"no {data['cls']} with key {key!r} any more")
    return obj


_DECODERS: dict[str, Callable[[dict[str, Any]], Any]] = {
    "datetime": _decode_datetime,
    "date": lambda d: dt.date.fromisoformat(d["v"]),
    "time": lambda d: dt.time.fromisoformat(d["v"]),
    "timedelta": lambda d: dt.timedelta(*d["v"]),
    "decimal": lambda d: decimal.Decimal(d["v"]),
    "uuid": lambda d: uuid.UUID(d["v"]),
    "bytes": lambda d: base64.b64decode(d["v"].encode("ascii"), validate=True),
    "tuple": lambda d: tuple(_decode(x) for x in d["v"]),
    "set": lambda d: {_decode(x) for x in d["v"]},
    "frozenset": lambda d: frozenset(_decode(x) for x in d["v"]),
    "dict": lambda d: {_decode(k): _decode(v) for k, v in d["v"]},
    "enum": lambda d: registry.resolve_enum(d["cls"])(_decode(d["v"])),
    "pydantic": lambda d: registry.resolve_pydantic(d["cls"]).model_validate(d["v"]),
    "model": _decode_model,
    "obj": _decode_obj,
}
