"""The registry: the only way a name inside a payload becomes a Python object.

A payload is data from outside the process. Decoding never imports or calls whatever a payload
names: a name resolves through this registry, and, failing that, through a lazy import of a module
under a *trusted* prefix (the app package, ``listeners``, ``notifications``), after which the name
must be registered, or be a plain data type (dataclass, Enum, pydantic model) defined there.
Anything else raises :class:`UnsafePayloadError`.

Three tables, kept apart so that no payload can reach a callable through a data tag:

- **types** — classes whose instances travel in payloads (jobs, events, notifications,
  ``@serializable`` classes, models). Decoding rebuilds them without calling ``__init__``; the
  ``enum`` and ``pydantic`` tags additionally require an Enum or a pydantic model.
- **listeners** — ``@listener`` functions and classes, each with the one method a queued call
  may run (``handle`` for a class). Only :class:`listeners.CallQueuedListener` looks here.
- **handlers** — objects registered with ``eventbus.ext.register_handler(name, handler)``.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
from collections.abc import Callable, Iterable
from typing import Any, TypeVar, cast

from eventbus.errors import UnsafePayloadError
from eventbus.runtime import registries
from eventbus.runtime import trust as trust  # ``registry.trust`` predates the runtime's

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class ListenerEntry:
    """A registered listener: the function or class, and the method a queued call runs."""

    target: Any
    method: str


APP_HINT = ("start the worker with --app YOUR_APP_MODULE (or set EVENTBUS_APP) so it imports the "
            "module that defines it")


def dotted_name(obj: Any) -> str:
    """The name an object is registered under: ``module.QualName``."""
    return f"{obj.__module__}.{obj.__qualname__}"


def register(cls: T, name: str | None = None) -> T:
    """Allow instances of the class ``cls`` in payloads, under ``name`` (default: its dotted name)."""
    if not isinstance(cls, type):
        raise TypeError(f"only classes are registered as payload types, not {cls!r} "
                        "(listeners use @listener, handlers register_handler)")
    tables = registries()
    with tables.lock:
        tables.types[name or dotted_name(cls)] = cls
    return cls


def serializable(cls: type[T]) -> type[T]:
    """Class decorator: allow instances of ``cls`` inside payloads (as fields of jobs and events)."""
    return register(cls)


def register_listener(target: Any, method: str, name: str | None = None) -> None:
    """Let a queued call run ``target`` (a function, ``method=""``) or ``target().method``."""
    if method.startswith("_"):
        raise ValueError(f"a queued listener method cannot be private: {method!r}")
    tables = registries()
    with tables.lock:
        tables.listeners[name or dotted_name(target)] = ListenerEntry(target, method)


def register_handler_object(name: str, handler: Any) -> None:
    tables = registries()
    with tables.lock:
        tables.handlers[name] = handler


def is_registered(name: str) -> bool:
    """Whether ``name`` is a registered payload type."""
    return name in registries().types


def is_handler(name: str) -> bool:
    return name in registries().handlers


def handler(name: str) -> Any:
    return registries().handlers[name]


def trusted_prefixes() -> tuple[str, ...]:
    return tuple(registries().trusted)


def _is_trusted_module(module: str) -> bool:
    return any(module == p or module.startswith(p + ".") for p in registries().trusted)


def _is_plain_data_type(obj: Any) -> bool:
    if not isinstance(obj, type):
        return False
    if dataclasses.is_dataclass(obj) or issubclass(obj, enum.Enum):
        return True
    return is_pydantic_model(obj)


def is_pydantic_model(cls: Any) -> bool:
    return isinstance(cls, type) and any(dotted_name(base) == "pydantic.main.BaseModel"
                                         for base in cls.__mro__)


def _candidate_modules(name: str) -> Iterable[tuple[str, str]]:
    """Split ``a.b.C.D`` into (module, qualname) pairs, longest module first."""
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        yield ".".join(parts[:cut]), ".".join(parts[cut:])


def _import_trusted(name: str) -> Any:
    """Import the trusted module ``name`` lives in; return the attribute it names, or None."""
    for module, qualname in _candidate_modules(name):
        if not _is_trusted_module(module):
            continue
        try:
            mod = importlib.import_module(module)
        except ImportError:
            continue
        obj: Any = mod
        for attr in qualname.split("."):
            obj = getattr(obj, attr, None)
        return obj
    return None


def _refusal(name: str, what: str) -> UnsafePayloadError:
    return UnsafePayloadError(
        f"refusing to load {name!r}: it is not a registered {what} (subclass eventbus.Job or "
        f"eventbus.Event, or decorate it with @eventbus.serializable) and not in a trusted module "
        f"({', '.join(registries().trusted)}); if it is your app's, {APP_HINT}")


def resolve(name: str, *, accept: Callable[[type], bool] | None = None) -> type:
    """The payload type registered as ``name``, importing a trusted module if needed.

    A class found in a trusted module is accepted when it is a plain data type, or when
    ``accept(cls)`` says so (the serializer accepts classes it has a model adapter for).
    """
    types = registries().types
    found = types.get(name)
    if found is not None:
        return found
    obj = _import_trusted(name)
    if name in types:
        return types[name]
    if isinstance(obj, type) and (_is_plain_data_type(obj) or (accept is not None and accept(obj))):
        return register(obj, name)
    raise _refusal(name, "payload type")


def resolve_enum(name: str) -> type[enum.Enum]:
    cls = resolve(name)
    if not issubclass(cls, enum.Enum):
        raise UnsafePayloadError(f"refusing {name!r} in an enum value: it is not an Enum")
    return cls


def resolve_pydantic(name: str) -> Any:
    cls = resolve(name)
    if not is_pydantic_model(cls):
        raise UnsafePayloadError(f"refusing {name!r} in a pydantic value: it is not a pydantic model")
    return cls


def resolve_listener(name: str) -> ListenerEntry:
    """The ``@listener`` registered as ``name`` (its module imported if trusted), or a refusal."""
    listeners = registries().listeners
    found = listeners.get(name)
    if found is None:
        _import_trusted(name)
        found = listeners.get(name)
    if found is None:
        raise UnsafePayloadError(f"refusing to call {name!r}: it is not registered with @listener; "
                                 f"if it is your app's, {APP_HINT}")
    return cast(ListenerEntry, found)
