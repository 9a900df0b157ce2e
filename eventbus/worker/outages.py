"""Queues whose server does not answer while the worker's other queues do: skipped for a while.

On one Redis server (or one database) every queue goes down together, and the worker waits for
the server as a whole (``Worker._next_job``). On a Redis Cluster each queue lives on one master:
while that master is down (killed, or not yet replaced by its replica) its queues fail and the
others answer. A worker on ``--queue a,b,c`` whose ``a`` sat on the lost master used to spend
every turn on ``a`` and never reach ``b`` and ``c`` (issue 27 point 6). Now a turn asks each
queue in order, skips one that does not answer as long as another one did, and asks it again
after a backoff: 0.1 s, doubling up to :data:`MAX_BACKOFF_S`, and never sooner than twice what
the failed request took (a master that does not answer at all costs a socket timeout per try:
the other queues must not spend most of their time waiting behind it). A turn in which no queue
answered is the server-wide case: nothing is remembered, and the error goes to the caller.

The first failure of a queue and its recovery are logged once each.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from eventbus.errors import ConnectionUnavailableError

log = logging.getLogger(__name__)

T = TypeVar("T")
FIRST_BACKOFF_S = 0.1
MAX_BACKOFF_S = 2.0


@dataclasses.dataclass
class _Outage:
    since: float
    retry_at: float
    backoff_s: float


class QueueOutages:
    """The queues of one worker that did not answer lately, and when to ask each again."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._down: dict[str, _Outage] = {}

    def usable(self, queues: Sequence[str]) -> Sequence[str]:
        """``queues`` without those waiting for their next try (``queues`` itself, no copy, when
        none is down: the common case, once a turn)."""
        if not self._down:
            return queues
        now = self._clock()
        return [q for q in queues if q not in self._down or self._down[q].retry_at <= now]

    def first(self, queues: Sequence[str], ask: Callable[[str], T | None]) -> T | None:
        """``ask(queue)`` for each usable queue in order until one returns something.

        A queue that raises :class:`ConnectionUnavailableError` is skipped (and asked again
        after its backoff) when another queue of the turn answered; when none answered, the last
        error is raised and no queue is marked (the server is down as a whole).
        """
        failed: list[tuple[str, float, ConnectionUnavailableError]] = []
        answered = False
        found: T | None = None
        for queue in self.usable(queues):
            started = self._clock()
            try:
                found = ask(queue)
            except ConnectionUnavailableError as lost:
                failed.append((queue, self._clock() - started, lost))
                continue
            answered = True
            self._answered(queue)
            if found is not None:
                break
        if failed and not answered:
            raise failed[-1][2]
        for queue, took, error in failed:
            self._failed(queue, took, error)
        return found

    def next_try_in(self) -> float:
        """Seconds until the first skipped queue may be asked again (0: none is skipped)."""
        if not self._down:
            return 0.0
        return max(min(o.retry_at for o in self._down.values()) - self._clock(), 0.0)

    def _failed(self, queue: str, took_s: float, exc: ConnectionUnavailableError) -> None:
        now = self._clock()
        outage = self._down.get(queue)
        if outage is None:
            log.warning("queue %r does not answer (%s); taking jobs from the other queues meanwhile", queue, exc)
            backoff = FIRST_BACKOFF_S
            outage = self._down[queue] = _Outage(now, now, backoff)
        else:
            backoff = min(outage.backoff_s * 2, MAX_BACKOFF_S)
        outage.backoff_s = backoff
        outage.retry_at = now + max(backoff, 2 * took_s)

    def _answered(self, queue: str) -> None:
        if self._down:
            outage = self._down.pop(queue, None)
            if outage is not None:
                log.warning("queue %r answers again after %.1fs", queue, self._clock() - outage.since)
