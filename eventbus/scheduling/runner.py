"""Firing scheduled entries: ``eventbus schedule run`` (one tick) and ``schedule work`` (a loop).

Each entry keeps a cursor in its connection's state store: the last instant it fired. A tick
fires every instant between the cursor and now, in order, then moves the cursor, so a scheduler
that was stopped across a minute boundary fires that minute when it starts again (``catch_up``
says how many missed instants to fire), and one restarted within a minute never fires it twice.
The first time an entry is seen (a fresh state store, a new entry, a cursor that is not a
time) it fires the latest instant due in the current minute, as cron would have, and nothing
older.

Each instant is pushed at most once: the job's uuid is derived from the entry and the instant,
and the push is claimed with a marker in the state store just before the push, so a scheduler
killed between the two skips that one instant rather than firing it twice. With
``on_one_server()`` the markers are shared by every scheduler process, so each instant fires
once however many run; without it every host fires its own.

``schedule work`` rides out an unreachable store or queue: the tick is tried again with the
workers' backoff (0.1 s doubling to 1 s, with jitter), and the instants it missed meanwhile
fire when the server answers (their cursors did not move).
"""

from __future__ import annotations

import logging
import math
import random
import socket
import threading
import time
import uuid as uuid_module
from collections.abc import Callable

from eventbus import runtime
from eventbus.errors import ConnectionUnavailableError
from eventbus.scheduling import cron
from eventbus.scheduling.firing import Fired, Run, fire, lock_of
from eventbus.scheduling.locks import Lock
from eventbus.scheduling.schedule import Schedule, ScheduledEvent
from eventbus.worker import RECONNECT_FIRST_S, RECONNECT_MAX_S

log = logging.getLogger(__name__)

NAMESPACE = uuid_module.UUID("8a4e1c2e-6a6f-4b5e-9d43-5c1f6f0e9b10")
MAX_CATCH_UP_S = 24 * 3600.0
#: ``schedule work`` looks for an interrupt (``eventbus schedule interrupt``) this often.
INTERRUPT_CHECK_S = 1.0
INTERRUPT_KEY = "schedule:interrupt"
DEFAULT_ENVIRONMENT = "production"


class Scheduler:
    """Fires the entries of a :class:`Schedule`; :meth:`tick` once, :meth:`work` forever.

    ``environment`` is the name ``environments(...)`` entries are matched against (the CLI
    passes ``--env`` / ``EVENTBUS_ENV``; default ``production``, as Laravel's ``APP_ENV``).
    ``on_fired`` is told of each instant as it is fired (the CLI prints it).
    """

    def __init__(self, schedule: Schedule, *, host: str | None = None,
                 clock: Callable[[], float] = time.time, environment: str = DEFAULT_ENVIRONMENT,
                 on_fired: Callable[[Fired], None] | None = None) -> None:
        self.schedule = schedule
        self.on_fired = on_fired
        self.host = host or socket.gethostname()
        self.clock = clock
        self.environment = environment
        self.stopping = threading.Event()
        self.interrupted = False
        self.started_at = time.time()
        self.reported: set[str] = set()

    # -- one tick -----------------------------------------------------------------------------
    def tick(self) -> list[Fired]:
        """Fire what is due on every entry. An entry whose store cannot be reached does not
        stop the others; the first such error is raised once they all had their turn."""
        now = self.clock()
        fired: list[Fired] = []
        lost: ConnectionUnavailableError | None = None
        for entry in self.schedule.entries:
            try:
                fired.extend(self.tick_entry(entry, now))
            except ConnectionUnavailableError as exc:
                lost = lost or exc
        if lost is not None:
            raise lost
        return fired

    def scope(self, entry: ScheduledEvent) -> str:
        return entry.event_id if entry.one_server else f"{self.host}:{entry.event_id}"

    def tick_entry(self, entry: ScheduledEvent, now: float) -> list[Fired]:
        state = runtime.state(entry.target_connection())
        cursor_key = f"schedule:{self.scope(entry)}:cursor"
        stored = state.get(cursor_key)
        cursor = self.read_cursor(entry, stored, now)
        if cursor is None:
            due = self.first_sight(entry, now)
            start = repr(due[0] - 0.5 if due else now)  # written first: a crash fires it again
            if stored is None:
                state.add(cursor_key, start)
            else:
                state.put(cursor_key, start)
        else:
            due = self.due_instants(entry, cursor, now)
        fired = []
        for instant in due:
            fired.append(self.fire(entry, instant))
            state.put(cursor_key, repr(instant))
        return fired

    def first_sight(self, entry: ScheduledEvent, now: float) -> list[float]:
        """An entry without a cursor fires what cron would fire this minute: its latest instant
        due since the minute began (``every_ten_seconds()`` started at :35 fires :30 only)."""
        return self.due_instants(entry, now - now % 60 - 0.5, now)[-1:]

    @staticmethod
    def read_cursor(entry: ScheduledEvent, stored: str | None, now: float) -> float | None:
        """The stored cursor, or None when there is none or it is not a time (``nan``,
        ``1e999``, text, or more than a day ahead): such a value is logged and then treated as
        absent, so a damaged key costs at most the instants it hid, never the scheduler."""
        if stored is None:
            return None
        try:
            value = float(stored)
        except ValueError:
            value = math.nan
        if math.isfinite(value) and value <= now + MAX_CATCH_UP_S:
            return value
        log.warning("schedule %s: its cursor in the state store reads %r, not a time; starting "
                    "again from this minute", entry.description, stored[:40])
        return None

    @staticmethod
    def due_instants(entry: ScheduledEvent, cursor: float, now: float) -> list[float]:
        """The instants in (cursor, now] that the entry's catch-up policy fires: ``all`` of them
        (those of the last day), the ``latest`` one, or (``none``) only one of this minute."""
        due = list(cron.instants(entry.expression, entry.tz, max(cursor, now - MAX_CATCH_UP_S), now,
                                 entry.repeat_s))
        if entry.catch_up_policy == "latest":
            return due[-1:]
        if entry.catch_up_policy == "none":
            return [i for i in due if i > now - 60]
        return due

    # -- firing one instant -------------------------------------------------------------------
    def fire(self, entry: ScheduledEvent, instant: float) -> Fired:
        """Fire one instant of ``entry``, unless its conditions say no."""
        refused = self.refusal(entry, instant)
        if refused is not None:
            log.info("schedule %s at %s: %s", entry.description,
                     time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(instant)), refused)
            return self.told(Fired(entry.description, instant, refused))
        marker = f"schedule:{self.scope(entry)}@{instant:.0f}"
        return self.told(fire(Run(entry, instant, str(uuid_module.uuid5(NAMESPACE, marker)), marker,
                                  self.scope(entry), self.reported)))

    def told(self, fired: Fired) -> Fired:
        if self.on_fired is not None:
            self.on_fired(fired)
        return fired

    def lock_of(self, entry: ScheduledEvent) -> Lock | None:
        """The lock a run of ``entry`` takes from this scheduler (``schedule list`` shows who
        holds it)."""
        return lock_of(entry, self.scope(entry), entry.target_connection())

    def run_now(self, entry: ScheduledEvent) -> Fired:
        """Run ``entry`` now, outside its schedule and its conditions (``schedule test``): its
        locks and hooks apply, its cursor and the instants' markers are left alone."""
        return fire(Run(entry, self.clock(), str(uuid_module.uuid4()), None, self.scope(entry), self.reported))

    def refusal(self, entry: ScheduledEvent, instant: float) -> str | None:
        """Why ``entry`` must not fire at ``instant`` (an outcome), or None: the environment,
        maintenance mode (``eventbus down``), ``between`` windows, ``when``/``skip``."""
        if not entry.runs_in_environment(self.environment):
            return "environment"
        if not entry.runs_in_maintenance and self.in_maintenance(entry):
            return "maintenance"
        try:
            passes = entry.inside_windows(instant) and entry.filters_pass()
        except Exception:
            log.exception("schedule %s: a when()/skip() condition raised; skipping this instant",
                          entry.description)
            return "failed"
        return None if passes else "skipped"

    def in_maintenance(self, entry: ScheduledEvent) -> bool:
        """``eventbus down`` was run and ``eventbus up`` not yet (read from the entry's connection)."""
        return "down" in runtime.connection(entry.target_connection()).signals()

    # -- the loop -----------------------------------------------------------------------------
    def work(self, *, max_ticks: int | None = None) -> int:
        """Tick whenever an entry is due until stopped (SIGTERM) or interrupted
        (``eventbus schedule interrupt``); while a server does not answer, try again with the
        workers' backoff. Returns the exit status (0)."""
        ticks, delay, lost_at = 0, RECONNECT_FIRST_S, None
        while not self.stopping.is_set():
            try:
                self.tick()
            except ConnectionUnavailableError as exc:
                if lost_at is None:
                    lost_at = time.monotonic()
                    log.warning("%s; the scheduler tries again until it answers", exc)
                self.stopping.wait(delay * random.uniform(0.5, 1.0))
                delay = min(delay * 2, RECONNECT_MAX_S)
                continue
            if lost_at is not None:
                log.warning("the scheduler's servers answer again after %.1fs; missed instants fired",
                            time.monotonic() - lost_at)
                delay, lost_at = RECONNECT_FIRST_S, None
            ticks += 1
            if max_ticks is not None and ticks >= max_ticks:
                break
            self.wait_for_next()
        return 0

    def wait_for_next(self, until: float | None = None) -> None:
        """Sleep until the next instant of any entry (or ``until``, a clock time), waking early
        when stopped or interrupted."""
        deadline = time.monotonic() + self.seconds_to_next(until)
        while not self.stopping.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            if self.stopping.wait(min(left, INTERRUPT_CHECK_S)):
                return
            if self.check_interrupt():
                return

    def check_interrupt(self) -> bool:
        """True (and stopping) once ``eventbus schedule interrupt`` ran after this scheduler started."""
        try:
            interrupted = interrupted_since(self.started_at)
        except ConnectionUnavailableError:
            return False  # the tick will say so; an interrupt is read when the server answers
        if interrupted:
            log.warning("interrupted by `eventbus schedule interrupt`: stopping")
            self.interrupted = True
            self.stopping.set()
        return interrupted

    def seconds_to_next(self, until: float | None = None) -> float:
        now = self.clock()
        upcoming = [cron.next_instant(e.expression, e.tz, now, e.repeat_s) for e in self.schedule.entries]
        soonest = min((u for u in upcoming if u is not None), default=now + 60)
        if until is not None:
            soonest = min(soonest, until)
        return min(max(soonest - now + 0.05, 0.05), 60.0)

    def run_minute(self) -> list[Fired]:
        """``schedule run``: one tick; then, when entries repeat within the minute
        (``every_ten_seconds()``), tick at each of their instants until the minute ends, as
        Laravel's ``schedule:run`` does, unless interrupted."""
        fired = self.tick()
        if not any(e.repeat_s for e in self.schedule.entries):
            return fired
        end = self.clock() // 60 * 60 + 60
        while not self.stopping.is_set():
            self.wait_for_next(until=end)
            if self.stopping.is_set() or self.clock() >= end:
                break
            fired.extend(self.tick())
        return fired


def interrupt() -> float:
    """Tell every ``schedule work`` and ``schedule run`` started before now to stop (Laravel's
    ``schedule:interrupt``; deploy, then interrupt, and supervisors start the new code).
    Returns the stamp written."""
    stamp = time.time()
    runtime.state().put(INTERRUPT_KEY, repr(stamp), ttl_s=MAX_CATCH_UP_S)
    return stamp


def interrupted_since(started_at: float) -> bool:
    value = runtime.state().get(INTERRUPT_KEY)
    try:
        return value is not None and float(value) >= started_at
    except ValueError:
        return False
