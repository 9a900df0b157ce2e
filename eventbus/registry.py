"""The type registry: the only way a name inside a payload becomes a Python object.

A payload is data from outside the process. Decoding never imports or calls whatever a payload
names: a name resolves through this registry, and, failing that, through a lazy import of a module
under a *trusted* prefix (the app package, ``listeners``, ``notifications``), after which the name
must be registered, or be a plain data type (dataclass, Enum, pydantic model) defined there.
Anything else raises :class:`UnsafePayloadError`.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
import threading
from collections.abc import Iterable
from typing import Any, TypeVar

from eventbus.errors import UnsafePayloadError

T = TypeVar("T")

_names: dict[str, Any] = {}
_trusted: list[str] = ["listeners", "notifications"]
_lock = threading.Lock()


def dotted_name(obj: Any) -> str:
    """The name an object is registered under: ``module.QualName``."""
    return f"{obj.__module__}.{obj.__qualname__}"


def register(obj: T, name: str | None = None) -> T:
    """Register a class (or handler callable) under ``name`` (default: its dotted name)."""
    with _lock:
        _names[name or dotted_name(obj)] = obj
    return obj


def serializable(cls: type[T]) -> type[T]:
    """Class decorator: allow instances of ``cls`` inside payloads (as fields of jobs and events)."""
    return register(cls)


def is_registered(name: str) -> bool:
    return name in _names


def trust(*prefixes: str) -> None:
    """Allow lazy imports of modules under these package prefixes while decoding."""
    with _lock:
        for prefix in prefixes:
            if prefix and prefix not in _trusted:
                _trusted.append(prefix)


def trusted_prefixes() -> tuple[str, ...]:
    return tuple(_trusted)


def _is_trusted_module(module: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in _trusted)


def _is_plain_data_type(obj: Any) -> bool:
    if not isinstance(obj, type):
        return False
    if dataclasses.is_dataclass(obj) or issubclass(obj, enum.Enum):
        return True
    return any(dotted_name(base) == "pydantic.main.BaseModel" for base in obj.__mro__)


def _candidate_modules(name: str) -> Iterable[tuple[str, str]]:
    """Split ``a.b.C.D`` into (module, qualname) pairs, longest module first."""
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        yield ".".join(parts[:cut]), ".".join(parts[cut:])


def resolve(name: str) -> Any:
    """Return the object registered as ``name``, importing a trusted module if needed."""
    found = _names.get(name)
    if found is not None:
        return found
    for module, qualname in _candidate_modules(name):
        if not _is_trusted_module(module):
            continue
        try:
            mod = importlib.import_module(module)
        except ImportError:
            continue
        if name in _names:
            return _names[name]
        obj: Any = mod
        for attr in qualname.split("."):
            obj = getattr(obj, attr, None)
        if _is_plain_data_type(obj):
            return register(obj, name)
        break
    raise UnsafePayloadError(
        f"refusing to load {name!r}: it is not registered (subclass eventbus.Job or eventbus.Event, "
        f"or decorate it with @eventbus.serializable) and not in a trusted module "
        f"({', '.join(_trusted)})"
    )
