"""Firing scheduled jobs: ``eventbus schedule run`` (one tick) and ``schedule work`` (a loop).

Each entry keeps a cursor in its connection's state store: the last instant it fired. A tick
fires every instant between the cursor and now, in order, then moves the cursor, so a scheduler
that was stopped across a minute boundary fires that minute when it starts again (``catch_up``
says how many missed instants to fire), and one restarted within a minute never fires it twice.
The first time an entry is seen it starts from now: nothing is back-filled.

Each instant is pushed at most once: the job's uuid is derived from the entry and the instant,
and the push is claimed with a marker in the state store just before the push, so a scheduler
killed between the two skips that one instant rather than firing it twice. With
``on_one_server()`` the markers are shared by every scheduler process, so each instant fires
once however many run; without it every host fires its own.
"""

from __future__ import annotations

import dataclasses
import logging
import socket
import threading
import time
import uuid as uuid_module
from collections.abc import Callable

from eventbus import runtime
from eventbus.dispatching import Destination, make_payload, push_payload
from eventbus.payload import Payload
from eventbus.scheduling import cron
from eventbus.scheduling.schedule import Schedule, ScheduledJob

log = logging.getLogger(__name__)

NAMESPACE = uuid_module.UUID("8a4e1c2e-6a6f-4b5e-9d43-5c1f6f0e9b10")
MARKER_KEEP_S = 7 * 24 * 3600.0
MAX_CATCH_UP_S = 24 * 3600.0


@dataclasses.dataclass(frozen=True)
class Fired:
    """What a tick did with one instant of one entry."""

    entry: str
    instant: float
    outcome: str  # pushed, already-pushed, skipped (filters), overlapping


class Scheduler:
    """Fires the entries of a :class:`Schedule`; :meth:`tick` once, :meth:`work` forever."""

    def __init__(self, schedule: Schedule, *, host: str | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.schedule = schedule
        self.host = host or socket.gethostname()
        self.clock = clock
        self.stopping = threading.Event()

    # -- one tick -----------------------------------------------------------------------------
    def tick(self) -> list[Fired]:
        now = self.clock()
        fired: list[Fired] = []
        for entry in self.schedule.entries:
            fired.extend(self.tick_entry(entry, now))
        return fired

    def scope(self, entry: ScheduledJob) -> str:
        return entry.event_id if entry.one_server else f"{self.host}:{entry.event_id}"

    def tick_entry(self, entry: ScheduledJob, now: float) -> list[Fired]:
        state = runtime.state(entry.connection)
        cursor_key = f"schedule:{self.scope(entry)}:cursor"
        stored = state.get(cursor_key)
        if stored is None:  # first sight: start from now, back-fill nothing
            state.add(cursor_key, repr(now))
            return []
        due = self.due_instants(entry, float(stored), now)
        fired = []
        for instant in due:
            fired.append(self.fire(entry, instant))
            state.put(cursor_key, repr(instant))
        return fired

    @staticmethod
    def due_instants(entry: ScheduledJob, cursor: float, now: float) -> list[float]:
        """The instants in (cursor, now] that the entry's catch-up policy fires: ``all`` of them
        (those of the last day), the ``latest`` one, or (``none``) only one of this minute."""
        due = list(cron.instants(entry.expression, entry.tz, max(cursor, now - MAX_CATCH_UP_S), now))
        if entry.catch_up_policy == "latest":
            return due[-1:]
        if entry.catch_up_policy == "none":
            return [i for i in due if i > now - 60]
        return due

    # -- firing one instant -------------------------------------------------------------------
    def fire(self, entry: ScheduledJob, instant: float) -> Fired:
        name = entry.description
        if not entry.filters_pass():
            return Fired(name, instant, "skipped")
        marker = f"schedule:{self.scope(entry)}@{instant:.0f}"
        payload = self.payload_for(entry, marker)
        destination = Destination.of(entry.job, queue=entry.queue, connection=entry.connection)
        if payload.unique is not None and not self.take_overlap_lock(entry, payload):
            return Fired(name, instant, "overlapping")
        pushed = push_once(destination, payload, marker)
        if not pushed and payload.unique is not None:
            runtime.state(payload.unique["via"]).delete_if(payload.unique["key"], payload.uuid)
        outcome = "pushed" if pushed else "already-pushed"
        log.info("schedule %s at %s: %s", name, time.strftime("%Y-%m-%d %H:%M", time.gmtime(instant)),
                 outcome)
        return Fired(name, instant, outcome)

    def payload_for(self, entry: ScheduledJob, marker: str) -> Payload:
        """The job's payload with a uuid made from the instant (the same instant, the same job)."""
        lock = None
        if entry.overlap_expires_s is not None:
            lock = {"key": f"schedule-overlap:{self.scope(entry)}", "untilProcessing": False,
                    "via": entry.connection or runtime.settings().default}
        payload = make_payload(entry.job, unique=lock)
        payload = dataclasses.replace(payload, uuid=str(uuid_module.uuid5(NAMESPACE, marker)),
                                      signature=None)
        key = runtime.settings().key
        return payload.signed(key) if key else payload

    @staticmethod
    def take_overlap_lock(entry: ScheduledJob, payload: Payload) -> bool:
        """``without_overlapping``: the previous run of this entry must have finished."""
        assert payload.unique is not None and entry.overlap_expires_s is not None
        return runtime.state(payload.unique["via"]).add(payload.unique["key"], payload.uuid,
                                                         ttl_s=entry.overlap_expires_s)

    # -- the loop -----------------------------------------------------------------------------
    def work(self, *, max_ticks: int | None = None) -> int:
        """Tick at the start of every minute (and whenever an entry is due) until stopped."""
        ticks = 0
        while not self.stopping.is_set():
            self.tick()
            ticks += 1
            if max_ticks is not None and ticks >= max_ticks:
                break
            self.stopping.wait(self.seconds_to_next())
        return 0

    def seconds_to_next(self) -> float:
        now = self.clock()
        upcoming = [cron.next_instant(e.expression, e.tz, now) for e in self.schedule.entries]
        soonest = min(upcoming, default=now + 60)
        return min(max(soonest - now + 0.05, 0.05), 60.0)


def push_once(destination: Destination, payload: Payload, marker: str) -> bool:
    """Push ``payload`` unless ``marker`` was pushed before; True when this call pushed it.

    The marker is claimed in the state store first, and withdrawn if the push fails.
    """
    state = runtime.state(destination.connection)
    if not state.add(f"schedule-marker:{marker}", payload.uuid, ttl_s=MARKER_KEEP_S):
        return False
    try:
        push_payload(payload, destination)
    except BaseException:
        state.delete_if(f"schedule-marker:{marker}", payload.uuid)
        raise
    return True
