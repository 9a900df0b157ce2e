"""Debounced jobs (Laravel's ShouldBeDebounced): a job dispatched again within ``debounce_for``
seconds replaces the one still waiting, so only the last of a burst runs.

A job class opts in with ``debounce_for = 30`` and says what makes it the same job with
``debounce_id()`` (default: one per class). Each dispatch is delayed by ``debounce_for`` (unless
it gives a delay of its own) and writes its uuid under the job's debounce key in the state store
of its connection: the last writer wins. When a job's turn comes, the worker deletes it without
running it if the key names another uuid (a later dispatch superseded it) and emits
``JobDebounced``. When the key is gone (expired, or its store does not answer) the job runs:
a debounce never loses the last job of a burst.

Unique and debounced are opposites (the first wins, the last wins): a class cannot be both.
"""

from __future__ import annotations

import logging
from typing import Any

from eventbus import runtime
from eventbus.errors import ConfigurationError, ConnectionUnavailableError
from eventbus.state import StateStore
from eventbus.state.keys import user_key

log = logging.getLogger(__name__)

#: The key outlives the window by far: it only has to be there when the superseded jobs run.
MIN_KEEP_S = 300.0


def window_of(command: Any) -> float | None:
    """The command's ``debounce_for`` in seconds (None: not debounced)."""
    value = getattr(command, "debounce_for", None)
    if callable(value):
        value = value()
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ConfigurationError(f"{type(command).__qualname__}.debounce_for must be seconds above 0, "
                                 f"not {value!r}")
    if getattr(command, "unique", False):
        raise ConfigurationError(f"{type(command).__qualname__} cannot be both unique (the first "
                                 "dispatch wins) and debounced (the last one wins)")
    return float(value)


def key_of(command: Any, name: str) -> str:
    """The debounce key of ``command`` (registered name ``name``); its id is user data."""
    debounce_id = getattr(command, "debounce_id", None)
    return user_key("debounce", name, debounce_id() if callable(debounce_id) else "")


def claim(command: Any, name: str, window_s: float, uuid: str, store: StateStore) -> None:
    """This dispatch (``uuid``) is now the one that runs; earlier ones waiting are superseded."""
    store.put(key_of(command, name), uuid, ttl_s=max(window_s * 10, MIN_KEEP_S))


def withdraw(command: Any, name: str, uuid: str, store: StateStore) -> None:
    """The push of ``uuid`` failed after its claim: let the copy it superseded run after all
    (a missing key lets every waiting copy run)."""
    store.delete_if(key_of(command, name), uuid)


def superseded(command: Any, name: str, uuid: str, connection: str) -> bool:
    """Whether a later dispatch replaced the job ``uuid`` (False when nothing says so)."""
    if getattr(command, "debounce_for", None) is None:
        return False
    try:
        current = runtime.state(connection).get(key_of(command, name))
    except ConnectionUnavailableError as exc:
        log.warning("cannot tell whether debounced job %s was superseded (%s); running it", uuid, exc)
        return False
    return current is not None and current != uuid
