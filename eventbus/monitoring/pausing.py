"""Pausing one queue: a flag in the connection's state store that workers read.

Unlike ``eventbus down`` (every queue of the connection) or SIGUSR2 (one worker), a paused queue
is skipped by every worker of its connection while the others keep going. Workers read the flags
with their once-a-second signal check, so a pause takes effect within about a second; a job
already running finishes. That check is one ``get`` of a version counter that every pause and
resume bumps (:class:`PausedQueues`); the flags themselves are listed only when it changed.
A paused supervisor (``eventbus supervise pause``) is read alike: its workers see each of their
queues as paused.
"""

from __future__ import annotations

import time

from eventbus.monitoring import keys
from eventbus.state.base import StateStore


def pause(store: StateStore, connection: str, queue: str) -> None:
    _raise_flag(store, connection, keys.paused(connection) + keys.part(queue))


def resume(store: StateStore, connection: str, queue: str) -> bool:
    """Take the flag away; False when the queue was not paused."""
    return _lower_flag(store, connection, keys.paused(connection) + keys.part(queue))


def _raise_flag(store: StateStore, connection: str, key: str) -> None:
    store.put(key, repr(time.time()))
    store.incr(keys.paused_version(connection))  # after the flag: a reader that sees it, finds it


def _lower_flag(store: StateStore, connection: str, key: str) -> bool:
    removed = store.delete(key)
    store.incr(keys.paused_version(connection))
    return removed


def paused_queues(store: StateStore, connection: str) -> frozenset[str]:
    return _paused(store, connection)[0]


def _paused(store: StateStore, connection: str) -> tuple[frozenset[str], frozenset[str]]:
    """The paused queues and the paused supervisors, from one listing."""
    prefix, supervisors = keys.paused(connection), keys.paused_supervisors(connection)
    queues: set[str] = set()
    names: set[str] = set()
    for key in store.scan(prefix):
        if key.startswith(supervisors):
            names.add(keys.unpart(key[len(supervisors):]))
        elif ":" not in key[len(prefix):]:
            queues.add(keys.unpart(key[len(prefix):]))
    return frozenset(queues), frozenset(names)


def pause_supervisor(store: StateStore, connection: str, name: str) -> None:
    """Pause every worker of the supervisor ``name`` (``eventbus supervise pause``): they finish
    their current job and take no other until :func:`continue_supervisor`."""
    _raise_flag(store, connection, keys.paused_supervisors(connection) + keys.part(name))


def continue_supervisor(store: StateStore, connection: str, name: str) -> bool:
    """Take the supervisor's flag away; False when it was not paused."""
    return _lower_flag(store, connection, keys.paused_supervisors(connection) + keys.part(name))


def paused_supervisors(store: StateStore, connection: str) -> frozenset[str]:
    return _paused(store, connection)[1]


class PausedQueues:
    """A worker's view of the paused queues: one ``get`` per check, a listing only on change."""

    def __init__(self, store: StateStore, connection: str) -> None:
        self.store = store
        self.connection = connection
        self._version: str | None = None
        self._paused: frozenset[str] = frozenset()
        self._supervisors: frozenset[str] = frozenset()
        self._read = False

    def current(self) -> frozenset[str]:
        version = self.store.get(keys.paused_version(self.connection))
        if not self._read or version != self._version:
            self._paused, self._supervisors = _paused(self.store, self.connection)
            self._version, self._read = version, True
        return self._paused

    def supervisor_paused(self, name: str) -> bool:
        """Whether the supervisor ``name`` was paused at the last :meth:`current`."""
        return name in self._supervisors
