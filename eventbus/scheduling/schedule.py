"""Defining what runs when: ``eventbus.schedule.job(Cleanup()).daily_at("02:00")``.

A :class:`Schedule` holds entries; the app defines them at import (the worker-style ``--app``
module) and ``eventbus schedule work`` (or ``schedule run`` from system cron) fires each one when
its cron expression does. Two kinds, as Laravel's ``Schedule::job`` and ``Schedule::call``:

- :class:`ScheduledJob` pushes a job onto its queue (a worker runs it);
- :class:`ScheduledCall` calls a plain function in the scheduler process itself.

Every option is a fluent method: the frequencies of :mod:`eventbus.scheduling.frequencies`, and
here the conditions (``when``, ``skip``, ``between``, ``environments``,
``even_in_maintenance_mode``), the locks (``without_overlapping``, ``on_one_server``) and the
hooks (``before``, ``after``, ``on_success``, ``on_failure``).
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Callable
from typing import Any, TypeVar

from eventbus import runtime
from eventbus.dispatching import Destination, command_name
from eventbus.errors import ConfigurationError
from eventbus.scheduling import cron, frequencies
from eventbus.scheduling.frequencies import Frequencies, hh_mm

CATCH_UP = ("all", "latest", "none")
HOOKS = ("before", "after", "success", "failure")
#: How long a ``without_overlapping`` lock lives when its run never ends (a lost job, a killed
#: scheduler): minutes, not Laravel's day, so one crash costs a few runs at most.
DEFAULT_OVERLAP_EXPIRES_S = 600.0

E = TypeVar("E", bound="ScheduledEvent")
N = TypeVar("N", "ScheduledJob", "ScheduledCall")
Window = tuple[int, int, bool]  # start and end (seconds into the day), True: run inside


class ScheduledEvent(Frequencies):
    """What every entry has: when, whether, its locks and hooks. Build one with
    :meth:`Schedule.job` or :meth:`Schedule.call`, then chain the options."""

    #: What ``schedule list`` says the entry does.
    kind = "event"

    def __init__(self, *, connection: str | None = None) -> None:
        self.connection = connection
        self.expression = "* * * * *"
        self.repeat_s: int | None = None
        self.tz_name = "UTC"
        self.label: str | None = None
        self.filters: list[Callable[[], Any]] = []
        self.rejects: list[Callable[[], Any]] = []
        self.windows: list[Window] = []
        self.env_names: tuple[str, ...] = ()
        self.runs_in_maintenance = False
        self.overlap_expires_s: float | None = None
        self.one_server = False
        self.catch_up_policy = "all"
        self.hooks: dict[str, list[Callable[[], Any]]] = {name: [] for name in HOOKS}
        self.owner: Schedule | None = None

    # -- where ------------------------------------------------------------------------------
    def timezone(self: E, name: str) -> E:
        """Read the expression in this timezone (default UTC); daylight saving follows cron."""
        cron.zone(name)
        self.tz_name = name
        return self

    # -- whether ----------------------------------------------------------------------------
    def when(self: E, condition: Callable[[], Any] | bool) -> E:
        """Fire only when ``condition()`` is true at that moment."""
        self.filters.append(condition if callable(condition) else lambda: condition)
        return self

    def skip(self: E, condition: Callable[[], Any] | bool) -> E:
        """Do not fire when ``condition()`` is true at that moment."""
        self.rejects.append(condition if callable(condition) else lambda: condition)
        return self

    def between(self: E, start: str, end: str) -> E:
        """Fire only at instants from ``start`` to ``end`` (``"HH:MM"``, both included, in the
        entry's timezone); ``between("22:00", "06:00")`` spans midnight."""
        self.windows.append((*_window(start, end), True))
        return self

    def unless_between(self: E, start: str, end: str) -> E:
        """Fire only at instants outside ``start`` .. ``end`` (see :meth:`between`)."""
        self.windows.append((*_window(start, end), False))
        return self

    def environments(self: E, *names: str) -> E:
        """Fire only where the environment (``EVENTBUS_ENV``, or ``--env``) is one of ``names``."""
        flat = [n for name in names for n in ([name] if isinstance(name, str) else name)]
        if not flat or not all(isinstance(n, str) and n for n in flat):
            raise ConfigurationError(f"environments() takes one or more names, not {names!r}")
        self.env_names = tuple(flat)
        return self

    def even_in_maintenance_mode(self: E) -> E:
        """Fire even while ``eventbus down`` holds the workers (by default such an instant is
        skipped, as in Laravel)."""
        self.runs_in_maintenance = True
        return self

    def without_overlapping(self: E, expires_after: float | dt.timedelta = DEFAULT_OVERLAP_EXPIRES_S) -> E:
        """Do not fire while the previous run of this entry has not finished.

        For a job the lock travels with it: it is released when the job succeeds or fails for
        good, so it covers the time the job waits in its queue as well as its run (Laravel's
        covers only the dispatch). ``expires_after`` (seconds, default 10 minutes) bounds it in
        case the run never ends (a job lost with its worker, a scheduler killed while pushing):
        set it above the longest a run may take.
        """
        seconds = expires_after.total_seconds() if isinstance(expires_after, dt.timedelta) else expires_after
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds < float("inf"):
            raise ConfigurationError(f"without_overlapping(expires_after=...) takes seconds above 0, "
                                     f"not {expires_after!r}")
        self.overlap_expires_s = float(seconds)
        return self

    def on_one_server(self: E) -> E:
        """With several ``schedule work`` processes (one per server), fire each instant once.

        Without it every process fires its own (a job per server, Laravel's default).
        """
        self.one_server = True
        return self

    def catch_up(self: E, policy: str) -> E:
        """Instants missed while no scheduler ran: ``"all"`` (default, up to a day), ``"latest"``
        (only the most recent one), ``"none"`` (Laravel's behaviour: they are skipped)."""
        if policy not in CATCH_UP:
            raise ConfigurationError(f"catch_up() takes one of {', '.join(CATCH_UP)}, not {policy!r}")
        self.catch_up_policy = policy
        return self

    def name(self: E, label: str) -> E:
        """A stable name (shown by ``schedule list``, used by ``schedule test NAME``, and the key of
        this entry's state)."""
        if not isinstance(label, str) or not label.strip() or len(label) > 120:
            raise ConfigurationError(f"a schedule entry's name is 1 to 120 characters, not {label!r}")
        self.label = label
        return self

    # -- hooks ------------------------------------------------------------------------------
    def before(self: E, hook: Callable[[], Any]) -> E:
        """Call ``hook()`` just before the entry runs (before a job is pushed); if it raises,
        the entry does not run and counts as failed."""
        return self._hook("before", hook)

    def after(self: E, hook: Callable[[], Any]) -> E:
        """Call ``hook()`` after the entry ran, whether it succeeded or not."""
        return self._hook("after", hook)

    def then(self: E, hook: Callable[[], Any]) -> E:
        """Same as :meth:`after`."""
        return self.after(hook)

    def on_success(self: E, hook: Callable[[], Any]) -> E:
        """Call ``hook()`` after a run that succeeded (the job was pushed; the call returned
        anything but ``False`` without raising)."""
        return self._hook("success", hook)

    def on_failure(self: E, hook: Callable[[], Any]) -> E:
        """Call ``hook()`` after a run that failed (the push or the call raised, or the call
        returned ``False``)."""
        return self._hook("failure", hook)

    def _hook(self: E, moment: str, hook: Callable[[], Any]) -> E:
        if not callable(hook):
            raise ConfigurationError(f"{moment} hook must be callable, not {hook!r}")
        self.hooks[moment].append(hook)
        return self

    # -- derived ----------------------------------------------------------------------------
    @property
    def tz(self) -> dt.tzinfo:
        return cron.zone(self.tz_name)

    @property
    def summary(self) -> str:
        """What the entry does when it has no name (the job's class, the function's name)."""
        raise NotImplementedError

    @property
    def description(self) -> str:
        """Its name, or what it does."""
        return self.label or self.summary

    def target_connection(self) -> str:
        """The connection whose state store keeps this entry's cursor, markers and locks, and
        whose ``eventbus down`` holds it."""
        return self.connection or runtime.settings().default

    def identity(self) -> str:
        """The text two entries share when they are the same definition."""
        return f"{self.summary}|{self.expression}|{self.tz_name}|{self.connection}"

    @property
    def event_id(self) -> str:
        """The key of this entry's state: its name, or a digest of what it runs and when; the
        second and later entries with the same key add ``#2``, ``#3``... so each keeps its own."""
        base = self.state_base
        twins = 0 if self.owner is None else self.owner.earlier_twins(self)
        return base if not twins else f"{base}#{twins + 1}"

    @property
    def state_base(self) -> str:
        if self.label:
            return self.label
        digest = hashlib.sha1(self.identity().encode()).hexdigest()[:16]
        return f"{digest}/{self.repeat_s}s" if self.repeat_s else digest

    def runs_in_environment(self, environment: str) -> bool:
        return not self.env_names or environment in self.env_names

    def inside_windows(self, instant: float) -> bool:
        """``between`` / ``unless_between`` at ``instant``, read in the entry's timezone."""
        local = dt.datetime.fromtimestamp(instant, self.tz)
        at = local.hour * 3600 + local.minute * 60 + local.second
        return all(_inside(at, start, end) == want for start, end, want in self.windows)

    def filters_pass(self) -> bool:
        return all(f() for f in self.filters) and not any(r() for r in self.rejects)

    def next_instants(self, after: float, count: int = 3) -> list[float]:
        """The next ``count`` instants after ``after`` (fewer if the expression stops firing)."""
        out: list[float] = []
        for _ in range(count):
            found = cron.next_instant(self.expression, self.tz, after, self.repeat_s)
            if found is None:
                break
            out.append(found)
            after = found
        return out


class ScheduledJob(ScheduledEvent):
    """A job pushed at each instant. Build it with :meth:`Schedule.job`, then chain the options."""

    kind = "job"

    def __init__(self, job: Any, *, queue: str | None = None, connection: str | None = None) -> None:
        super().__init__(connection=connection)
        self.job = job
        self.queue = queue

    @property
    def summary(self) -> str:
        return command_name(self.job)

    def target_connection(self) -> str:
        """The connection the job goes to (the entry's, else the job's own, else the default)."""
        return Destination.of(self.job, queue=self.queue, connection=self.connection).connection

    def identity(self) -> str:
        # the text eventbus 0.1 hashed: entries defined then keep their cursors
        return f"{self.summary}|{self.expression}|{self.tz_name}|{self.queue}|{self.connection}"


class ScheduledCall(ScheduledEvent):
    """A plain function called in the scheduler process at each instant (Laravel's
    ``Schedule::call``). Keep it short: the scheduler waits for it before the next entry."""

    kind = "call"

    def __init__(self, fn: Callable[[], Any], *, connection: str | None = None) -> None:
        super().__init__(connection=connection)
        self.fn = fn

    @property
    def summary(self) -> str:
        return f"{getattr(self.fn, '__module__', '?')}.{getattr(self.fn, '__qualname__', repr(self.fn))}"


class Schedule:
    """The entries of one app. ``eventbus.schedule`` is the default one the CLI runs."""

    #: Days of the week for ``days()`` and ``weekly_on()``, as Laravel's ``Schedule::MONDAY``.
    SUNDAY = frequencies.SUNDAY
    MONDAY = frequencies.MONDAY
    TUESDAY = frequencies.TUESDAY
    WEDNESDAY = frequencies.WEDNESDAY
    THURSDAY = frequencies.THURSDAY
    FRIDAY = frequencies.FRIDAY
    SATURDAY = frequencies.SATURDAY

    def __init__(self) -> None:
        self.entries: list[ScheduledJob | ScheduledCall] = []

    def job(self, job: Any, *, queue: str | None = None, connection: str | None = None) -> ScheduledJob:
        """Schedule ``job`` (a registered job instance; it is pushed as it is at each instant)."""
        command_name(job)  # refuse an unregistered class now, not at the first instant
        return self._add(ScheduledJob(job, queue=queue, connection=connection))

    def call(self, fn: Callable[[], Any], *, connection: str | None = None) -> ScheduledCall:
        """Schedule a plain function (``async def`` too), called with no arguments in the
        scheduler process; ``connection`` names whose state store keeps its cursor and locks."""
        if not callable(fn):
            raise ConfigurationError(f"schedule.call() takes a function, not {fn!r}")
        return self._add(ScheduledCall(fn, connection=connection))

    def _add(self, entry: N) -> N:
        entry.owner = self
        self.entries.append(entry)
        return entry

    def earlier_twins(self, entry: ScheduledEvent) -> int:
        """How many entries defined before ``entry`` would share its state key (the same name,
        or unnamed, the same definition)."""
        base = entry.state_base
        count = 0
        for other in self.entries:
            if other is entry:
                return count
            count += other.state_base == base
        return count

    def named(self, name: str) -> list[ScheduledJob | ScheduledCall]:
        """The entries whose name (or, unnamed, whose job class or function) is ``name``."""
        return [e for e in self.entries if e.description == name]

    def clear(self) -> None:
        self.entries.clear()


def _window(start: str, end: str) -> tuple[int, int]:
    (h1, m1), (h2, m2) = hh_mm(start), hh_mm(end)
    return h1 * 3600 + m1 * 60, h2 * 3600 + m2 * 60


def _inside(at: int, start: int, end: int) -> bool:
    if start <= end:
        return start <= at <= end
    return at >= start or at <= end  # across midnight
