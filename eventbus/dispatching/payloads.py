"""Building a job's payload and saying where it goes: :func:`make_payload` turns a registered
command into a :class:`~eventbus.payload.Payload`, a :class:`Destination` names its connection,
queue and delay. Nothing here talks to a queue: pushing is :mod:`eventbus.dispatching.plan`'s.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from collections.abc import Sequence
from typing import Any

from eventbus import encryption, registry, serializer
from eventbus.backoff import Exponential
from eventbus.dispatching.tags import tags_for
from eventbus.errors import ConfigurationError, SerializationError
from eventbus.payload import HANDLER_NAME, NO_HEADERS, Payload, new_uuid, verify
from eventbus.queue.base import Delay, Queue, delay_seconds
from eventbus.runtime import settings
from eventbus.worker.timeouts import grace_s, timeout_conflict


def option(command: Any, name: str, default: Any = None) -> Any:
    """A class or instance option; a method of that name (``def backoff(self)``) is called."""
    value = getattr(command, name, default)
    if callable(value) and not isinstance(value, type) and name != "retry_until":
        value = value()
    return default if value is None else value


def _backoff_list(value: Any, tries: int | None = None) -> list[float] | None:
    if value is None:
        return None
    if isinstance(value, Exponential):
        return value.delays(tries)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [float(value)]
    try:
        return [float(v) for v in value]
    except TypeError as exc:
        raise SerializationError(f"backoff must be seconds or a list of seconds, not {value!r}") from exc


def _retry_until_timestamp(value: Any) -> float | None:
    if callable(value):
        value = value()
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return value.timestamp()
    if isinstance(value, dt.timedelta):
        return time.time() + value.total_seconds()
    return time.time() + float(value)


def command_name(command: Any) -> str:
    """The registered name of ``command``'s class; SerializationError when it has none."""
    name = serializer.class_name(type(command), type(command).__qualname__)
    if not registry.is_registered(name):
        raise SerializationError(
            f"{name} cannot be queued: it is not registered (subclass eventbus.Job, "
            "or decorate it with @eventbus.serializable)")
    return name


#: Values that are their own JSON (exact types: a bool or an IntEnum is not taken for an int here;
#: a float goes through the serializer, which refuses NaN and Infinity while the job is dispatched,
#: not when a bulk block sends it with others).
_PLAIN = frozenset({str, int, bool, type(None)})


def make_payload(command: Any, *, display_name: str | None = None,
                 chained: Sequence[dict[str, Any]] | None = None,
                 unique: dict[str, Any] | None = None, batch_id: str | None = None,
                 chain_catch: Sequence[dict[str, Any]] | None = None,
                 chain_finally: Sequence[dict[str, Any]] | None = None, name: str | None = None) -> Payload:
    """Build the JSON payload for ``command`` from its state and options (``name``: its
    registered name, when the caller looked it up already)."""
    name = name or command_name(command)
    state = serializer.object_state(command)
    encoded = {k: v if type(v) in _PLAIN else serializer.encode(v, f"{type(command).__name__}.{k}")
               for k, v in state.items()}
    key = settings().key
    sealed = bool(getattr(command, "encrypted", False))
    tags = tags_for(command, encoded, sealed)
    if sealed:
        encoded = encryption.seal(encoded, key)
    timeout = option(command, "timeout")
    tries = option(command, "tries")
    return Payload.from_fields({
        "display_name": display_name or getattr(command, "display_name", None) or name,
        "command_name": name,
        "command": encoded,
        "uuid": new_uuid(),
        "job": HANDLER_NAME,
        "max_tries": tries,
        "max_exceptions": option(command, "max_exceptions"),
        "backoff": _backoff_list(option(command, "backoff"), tries),
        "timeout": float(timeout) if timeout is not None else None,
        "retry_until": _retry_until_timestamp(getattr(command, "retry_until", None)),
        "fail_on_timeout": bool(option(command, "fail_on_timeout", False)),
        "attempts": 0,
        "pushed_at": time.time(),
        "chained": tuple(chained or getattr(command, "_chained", None) or ()),
        "unique": unique,
        "batch_id": batch_id,
        "chain_catch": tuple(chain_catch or ()),
        "chain_finally": tuple(chain_finally or ()),
        "signature": None,
        "headers": NO_HEADERS,
        "tags": tags,
    }, key)


@dataclasses.dataclass(frozen=True)
class Destination:
    """Where a command goes: connection, queue, delay (arguments win over the command's options)."""

    connection: str
    queue: str | None
    delay: float

    @classmethod
    def of(cls, command: Any, *, queue: str | None = None, delay: Delay | None = None,
           connection: str | None = None) -> Destination:
        conn = connection or option(command, "connection") or settings().default
        q = queue or option(command, "queue")
        d = delay_seconds(delay if delay is not None else option(command, "delay"))
        if d > 0 or cls is not Destination:
            return cls(conn, q, d)
        found = _DUE_NOW.get((conn, q))
        if found is None:
            if len(_DUE_NOW) >= _DUE_NOW_MAX:  # queue names made per tenant, say: start over
                _DUE_NOW.clear()
            found = _DUE_NOW[conn, q] = cls(conn, q, 0.0)
        return found

    def to_dict(self) -> dict[str, Any]:
        return {"connection": self.connection, "queue": self.queue, "delay": self.delay}


#: The destinations without a delay, shared: a destination is immutable, and a bulk push holds
#: one per job until it is sent, which the garbage collector pays for (see ``bulk_pushes``).
_DUE_NOW: dict[tuple[str, str | None], Destination] = {}
_DUE_NOW_MAX = 1024


def with_headers(payload: Payload, headers: dict[str, str]) -> Payload:
    """The payload with ``headers`` added, signed again when it was signed with one of our keys.

    Only then: a payload that was not ours (unsigned, or changed after signing) must not become
    ours because a trace context was added to it on its way out.
    """
    current = settings()
    ours = bool(current.key) and payload.signature is not None and verify(
        payload.to_dict(), current.verification_keys)
    return payload.replace(headers={**payload.headers, **headers}, key=current.key if ours else None)


def refuse_timeout_beyond_reservation(queue: Queue, payload: Payload) -> None:
    """A job's own timeout plus the watchdog grace must be below the connection's retry_after
    (see :mod:`eventbus.worker.timeouts`): refuse it here, where the mistake is made."""
    if payload.timeout is None or not queue.holds_reservations:
        return
    problem = timeout_conflict(f"{payload.display_name}'s timeout", payload.timeout, grace_s(),
                               queue.retry_after, queue.connection_name,
                               "Lower the job's timeout or raise retry_after.")
    if problem is not None:
        raise ConfigurationError(problem, job_uuid=payload.uuid, connection=queue.connection_name)


def holds_until_commit(command: Any, after_commit: bool | None = None) -> bool:
    """The call's ``after_commit`` if given, else the command's own option."""
    return bool(option(command, "after_commit", False) if after_commit is None else after_commit)
