"""Pausing one queue: a flag in the connection's state store that workers read.

Unlike ``eventbus down`` (every queue of the connection) or SIGUSR2 (one worker), a paused queue
is skipped by every worker of its connection while the others keep going. Workers read the flags
with their once-a-second signal check, so a pause takes effect within about a second; a job
already running finishes.
"""

from __future__ import annotations

import time

from eventbus.monitoring import keys
from eventbus.state.base import StateStore


def pause(store: StateStore, connection: str, queue: str) -> None:
    store.put(keys.paused(connection) + keys.part(queue), repr(time.time()))


def resume(store: StateStore, connection: str, queue: str) -> bool:
    """Take the flag away; False when the queue was not paused."""
    return store.delete(keys.paused(connection) + keys.part(queue))


def paused_queues(store: StateStore, connection: str) -> frozenset[str]:
    prefix = keys.paused(connection)
    return frozenset(keys.unpart(key[len(prefix):]) for key in store.scan(prefix))
