"""The state store contract: a small key/value store beside a connection's queues.

It holds what several processes must agree on without another database: worker heartbeats,
metrics counters, paused queues, and (for the add-ons) unique-job locks, rate limits and batch
counters. Every operation is atomic on its own; there are no transactions across keys.

- ``add`` sets a key only when it is absent (or expired): a lock. ``delete_if`` removes it only
  while it still holds the owner's value, so a holder whose lock expired and was taken over
  cannot release the new holder's lock.
- ``incr`` is an atomic counter; the TTL is set when the key is created (a later ``incr`` does
  not extend it, so a rate-limit window ends on time).
- Expiry runs on the server's clock (Redis, the database), never a worker's.
- ``scan`` lists keys by prefix; it is meant for dashboards and listings, not for every job.

Keys are text of 1 to 255 characters without NUL; values are text. A counter's value reads back
as its decimal text (``"3"``, or ``"3.0"`` on SQLite). :class:`MemoryStateStore` is a real
implementation for one process (tests, the sync driver in a script).
"""

from __future__ import annotations

import abc
import math
import threading
import time
from collections.abc import Mapping
from typing import TypeVar

MAX_KEY_LENGTH = 255


def check_key(key: str) -> str:
    """``key`` if it is a valid state key; ValueError naming the problem otherwise."""
    if not isinstance(key, str) or not key:
        raise ValueError(f"a state key must be non-empty text, not {key!r}")
    if len(key) > MAX_KEY_LENGTH or "\x00" in key:
        raise ValueError(f"a state key must be at most {MAX_KEY_LENGTH} characters without NUL: "
                         f"{key[:40]!r}...")
    return key


def check_ttl(ttl_s: float | None) -> float | None:
    """``ttl_s`` if it is None or a finite number of seconds above zero."""
    if ttl_s is None:
        return None
    if isinstance(ttl_s, bool) or not isinstance(ttl_s, (int, float)) or not math.isfinite(ttl_s) \
            or ttl_s <= 0:
        raise ValueError(f"ttl_s must be a number of seconds above 0, not {ttl_s!r}")
    return float(ttl_s)


def check_value(value: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"a state value must be text, not {type(value).__name__}")
    return value


def check_amount(amount: float) -> float:
    if isinstance(amount, bool) or not isinstance(amount, (int, float)) or not math.isfinite(amount):
        raise ValueError(f"an increment must be a finite number, not {amount!r}")
    return float(amount)


class StateStore(abc.ABC):
    """Atomic key/value operations with expiry; see the module docstring for the contract.

    The public methods check their arguments and call the ``_``-prefixed ones an
    implementation provides. A server that cannot be reached raises
    :class:`~eventbus.ConnectionUnavailableError`.
    """

    def get(self, key: str) -> str | None:
        """The value of a live key, or None."""
        return self._get(check_key(key))

    def put(self, key: str, value: str, ttl_s: float | None = None) -> None:
        """Set ``key`` (replacing any value and TTL); it expires after ``ttl_s`` if given."""
        self._put(check_key(key), check_value(value), check_ttl(ttl_s))

    def add(self, key: str, value: str, ttl_s: float | None = None) -> bool:
        """Set ``key`` only if it is absent or expired; True when this call set it (a lock)."""
        return self._add(check_key(key), check_value(value), check_ttl(ttl_s))

    def delete(self, key: str) -> bool:
        """Remove ``key``; True when a live key was removed."""
        return self._delete(check_key(key))

    def delete_if(self, key: str, value: str) -> bool:
        """Remove ``key`` only while it holds ``value`` (release a lock you own)."""
        return self._delete_if(check_key(key), check_value(value))

    def incr(self, key: str, amount: float = 1, ttl_s: float | None = None) -> float:
        """Add ``amount`` to the counter ``key`` (created at 0 with ``ttl_s``); the new value."""
        return self._incr(check_key(key), check_amount(amount), check_ttl(ttl_s))

    def scan(self, prefix: str) -> dict[str, str]:
        """Every live key starting with ``prefix``, with its value (for listings, not per job)."""
        if not isinstance(prefix, str):
            raise TypeError("a scan prefix must be text")
        return self._scan(prefix)

    def put_many(self, items: Mapping[str, str], ttl_s: float | None = None) -> None:
        """``put`` for several keys in one round trip where the store can (not atomic as a whole)."""
        checked = {check_key(k): check_value(v) for k, v in items.items()}
        if checked:
            self._put_many(checked, check_ttl(ttl_s))

    def incr_many(self, amounts: Mapping[str, float], ttl_s: float | None = None) -> None:
        """``incr`` for several counters in one round trip where the store can."""
        checked = {check_key(k): check_amount(v) for k, v in amounts.items()}
        if checked:
            self._incr_many(checked, check_ttl(ttl_s))

    def close(self) -> None:
        """Release what this store holds of its own (a shared client stays open)."""

    # -- what an implementation provides ---------------------------------------------------------
    @abc.abstractmethod
    def _get(self, key: str) -> str | None: ...

    @abc.abstractmethod
    def _put(self, key: str, value: str, ttl_s: float | None) -> None: ...

    @abc.abstractmethod
    def _add(self, key: str, value: str, ttl_s: float | None) -> bool: ...

    @abc.abstractmethod
    def _delete(self, key: str) -> bool: ...

    @abc.abstractmethod
    def _delete_if(self, key: str, value: str) -> bool: ...

    @abc.abstractmethod
    def _incr(self, key: str, amount: float, ttl_s: float | None) -> float: ...

    @abc.abstractmethod
    def _scan(self, prefix: str) -> dict[str, str]: ...

    def _put_many(self, items: dict[str, str], ttl_s: float | None) -> None:
        for key, value in items.items():
            self._put(key, value, ttl_s)

    def _incr_many(self, amounts: dict[str, float], ttl_s: float | None) -> None:
        for key, amount in amounts.items():
            self._incr(key, amount, ttl_s)


def counter_text(value: float) -> str:
    """A counter as Redis writes it: ``3`` for whole numbers, ``0.5`` otherwise."""
    value = float(value)
    return str(int(value)) if value.is_integer() and abs(value) < 2**53 else repr(value)


class MemoryStateStore(StateStore):
    """The contract in one process: a dict, a lock and the monotonic clock."""

    def __init__(self) -> None:
        self._data: dict[str, tuple[str, float | None]] = {}
        self._lock = threading.Lock()

    def _live(self, key: str) -> str | None:
        found = self._data.get(key)
        if found is None:
            return None
        value, expires = found
        if expires is not None and expires <= time.monotonic():
            del self._data[key]
            return None
        return value

    @staticmethod
    def _expiry(ttl_s: float | None) -> float | None:
        return None if ttl_s is None else time.monotonic() + ttl_s

    def _get(self, key: str) -> str | None:
        with self._lock:
            return self._live(key)

    def _put(self, key: str, value: str, ttl_s: float | None) -> None:
        with self._lock:
            self._data[key] = (value, self._expiry(ttl_s))

    def _add(self, key: str, value: str, ttl_s: float | None) -> bool:
        with self._lock:
            if self._live(key) is not None:
                return False
            self._data[key] = (value, self._expiry(ttl_s))
            return True

    def _delete(self, key: str) -> bool:
        with self._lock:
            return self._live(key) is not None and self._data.pop(key) is not None

    def _delete_if(self, key: str, value: str) -> bool:
        with self._lock:
            if self._live(key) != value:
                return False
            del self._data[key]
            return True

    def _incr(self, key: str, amount: float, ttl_s: float | None) -> float:
        with self._lock:
            current = self._live(key)
            if current is None:
                total, expires = amount, self._expiry(ttl_s)
            else:
                total, expires = float(current) + amount, self._data[key][1]
            self._data[key] = (counter_text(total), expires)
            return total

    def _scan(self, prefix: str) -> dict[str, str]:
        with self._lock:
            keys = [k for k in self._data if k.startswith(prefix)]
            found = {k: self._live(k) for k in keys}
        return {k: v for k, v in sorted(found.items()) if v is not None}


_Found = TypeVar("_Found")


def registered_for(state: StateStore, by_class: Mapping[type, _Found], by_name: Mapping[str, _Found]) -> _Found | None:
    """What was registered for ``state``'s class or the nearest of its bases (a batch or
    recent-jobs repository factory): by the class itself, or by its dotted name, which lets
    the built-in ones be registered without importing redis-py or SQLAlchemy."""
    for cls in type(state).__mro__:
        if cls in by_class:
            return by_class[cls]
        named = by_name.get(f"{cls.__module__}.{cls.__qualname__}")
        if named is not None:
            return named
    return None
