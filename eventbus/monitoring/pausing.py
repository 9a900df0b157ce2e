"""Pausing one queue: a flag in the connection's state store that workers read.

Unlike ``eventbus down`` (every queue of the connection) or SIGUSR2 (one worker), a paused queue
is skipped by every worker of its connection while the others keep going. Workers read the flags
with their once-a-second signal check, so a pause takes effect within about a second; a job
already running finishes. That check is one ``get`` of a version counter that every pause and
resume bumps (:class:`PausedQueues`); the flags themselves are listed only when it changed.
"""

from __future__ import annotations

import time

from eventbus.monitoring import keys
from eventbus.state.base import StateStore


def pause(store: StateStore, connection: str, queue: str) -> None:
    store.put(keys.paused(connection) + keys.part(queue), repr(time.time()))
    store.incr(keys.paused_version(connection))  # after the flag: a reader that sees it, finds it


def resume(store: StateStore, connection: str, queue: str) -> bool:
    """Take the flag away; False when the queue was not paused."""
    removed = store.delete(keys.paused(connection) + keys.part(queue))
    store.incr(keys.paused_version(connection))
    return removed


def paused_queues(store: StateStore, connection: str) -> frozenset[str]:
    prefix = keys.paused(connection)
    return frozenset(keys.unpart(key[len(prefix):]) for key in store.scan(prefix))


class PausedQueues:
    """A worker's view of the paused queues: one ``get`` per check, a listing only on change."""

    def __init__(self, store: StateStore, connection: str) -> None:
        self.store = store
        self.connection = connection
        self._version: str | None = None
        self._paused: frozenset[str] = frozenset()
        self._read = False

    def current(self) -> frozenset[str]:
        version = self.store.get(keys.paused_version(self.connection))
        if not self._read or version != self._version:
            self._paused = paused_queues(self.store, self.connection)
            self._version, self._read = version, True
        return self._paused
