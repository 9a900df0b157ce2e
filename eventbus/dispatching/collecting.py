"""Pushes held back to go out together: the list a ``bulk_pushes`` / ``collecting_pushes``
block collects into (one per context, so threads and tasks of one block share it), and the
rule of which pushes a block takes. Sending what was collected is :mod:`eventbus.dispatching.plan`'s.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import threading
from collections.abc import Iterator
from typing import Any

from eventbus.dispatching.payloads import Destination
from eventbus.payload import Payload

Collected = list[tuple[Payload, Destination, Any]]


#: A bulk_pushes block sends what it collected every this many jobs: a batch of 10,000 jobs
#: held to the end keeps 10,000 payloads alive, and the cyclic garbage collector's passes over
#: them cost a fifth of the time (one Redis script call carries 500 jobs anyway).
BULK_FLUSH_EVERY = 500


@dataclasses.dataclass
class _Buffer:
    items: Collected
    include_delayed: bool
    flush_every: int = 0  # 0: hold everything until the block ends

    def takes(self, destination: Destination) -> bool:
        return destination.delay <= 0 or self.include_delayed

    @property
    def full(self) -> bool:
        """It holds ``flush_every`` jobs: what it holds goes out before it takes another."""
        return bool(self.flush_every) and len(self.items) >= self.flush_every


#: Threads can share one block's list (``asyncio.to_thread`` copies the context): appending is
#: atomic, taking what is held is not, so takers take turns.
_taking = threading.Lock()


def take_collected(collected: Collected) -> Collected:
    """Remove and return what ``collected`` holds now (a push appended meanwhile stays)."""
    with _taking:
        held = collected[:]
        del collected[:len(held)]
    return held


# A ContextVar: a bulk_pushes() block belongs to a context, not to a configuration.
_bulk_buffer: contextvars.ContextVar[_Buffer | None] = contextvars.ContextVar(
    "eventbus_bulk_pushes", default=None)


@contextlib.contextmanager
def collecting_pushes(*, include_delayed: bool = False, flush_every: int = 0) -> Iterator[Collected]:
    """Collect the pushes made inside the block instead of making them; yields the list.

    The caller sends them later (:func:`eventbus.dispatching.push_collected`, or awaited:
    :func:`eventbus.dispatching.apush.apush_collected`). Without ``include_delayed`` delayed
    jobs are pushed at once, as they come. With ``flush_every`` a push first sends what the
    list holds once it holds that many. Blocks nest: inside an outer one, pushes go to the
    outer one's list.
    """
    outer = _bulk_buffer.get()
    if outer is not None:
        yield []
        return
    collected: Collected = []
    token = _bulk_buffer.set(_Buffer(collected, include_delayed, flush_every))
    try:
        yield collected
    finally:
        _bulk_buffer.reset(token)


def block_taking(destination: Destination) -> _Buffer | None:
    """The enclosing :func:`collecting_pushes` block's buffer when it takes a push to
    ``destination`` (a block without ``include_delayed`` lets delayed pushes through); None
    when the push goes out now."""
    buffer = _bulk_buffer.get()
    return buffer if buffer is not None and buffer.takes(destination) else None


def hold_for_bulk(payload: Payload, destination: Destination, command: Any = None) -> bool:
    """Collect the push for the enclosing block when there is one that takes it; True when held
    (without sending what the block holds: :mod:`eventbus.dispatching.plan` does that)."""
    buffer = block_taking(destination)
    if buffer is None:
        return False
    buffer.items.append((payload, destination, command))
    return True
