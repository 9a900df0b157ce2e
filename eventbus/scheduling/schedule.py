"""Defining what runs when: ``eventbus.schedule.job(Cleanup()).daily_at("02:00")``.

A :class:`Schedule` holds :class:`ScheduledJob` entries; the app defines them at import (the
worker-style ``--app`` module) and ``eventbus schedule work`` (or ``schedule run`` from system
cron) pushes each job when its cron expression fires. Every option is a fluent method, as in
Laravel's scheduler.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
from collections.abc import Callable
from typing import Any

from eventbus.dispatching import command_name
from eventbus.errors import ConfigurationError
from eventbus.scheduling import cron

CATCH_UP = ("all", "latest", "none")


@dataclasses.dataclass
class ScheduledJob:
    """One job on a schedule. Build it with :meth:`Schedule.job`, then chain the options."""

    job: Any
    queue: str | None = None
    connection: str | None = None
    expression: str = "* * * * *"
    tz_name: str = "UTC"
    label: str | None = None
    filters: list[Callable[[], Any]] = dataclasses.field(default_factory=list)
    rejects: list[Callable[[], Any]] = dataclasses.field(default_factory=list)
    overlap_expires_s: float | None = None
    one_server: bool = False
    catch_up_policy: str = "all"

    # -- when -------------------------------------------------------------------------------
    def cron(self, expression: str) -> ScheduledJob:
        """A five-field cron expression: ``"0 2 * * *"`` is every night at 02:00."""
        self.expression = cron.check(expression)
        return self

    def every_minute(self) -> ScheduledJob:
        return self.cron("* * * * *")

    def every_minutes(self, n: int) -> ScheduledJob:
        """Every ``n`` minutes (``n`` divides 60: 2, 3, 5, 10, 15, 20, 30)."""
        if n <= 0 or 60 % n:
            raise ConfigurationError(f"every_minutes({n}): the minutes must divide 60")
        return self.cron(f"*/{n} * * * *")

    def every_five_minutes(self) -> ScheduledJob:
        return self.every_minutes(5)

    def hourly(self) -> ScheduledJob:
        return self.cron("0 * * * *")

    def hourly_at(self, minute: int) -> ScheduledJob:
        return self.cron(f"{_in_range('minute', minute, 59)} * * * *")

    def daily(self) -> ScheduledJob:
        return self.cron("0 0 * * *")

    def daily_at(self, time: str) -> ScheduledJob:
        """Every day at ``"HH:MM"`` in the job's timezone."""
        hour, minute = _hh_mm(time)
        return self.cron(f"{minute} {hour} * * *")

    def weekly_on(self, day: int, time: str = "00:00") -> ScheduledJob:
        """Every week on ``day`` (0 = Sunday .. 6 = Saturday) at ``"HH:MM"``."""
        hour, minute = _hh_mm(time)
        return self.cron(f"{minute} {hour} * * {_in_range('day', day, 6)}")

    def monthly_on(self, day: int = 1, time: str = "00:00") -> ScheduledJob:
        hour, minute = _hh_mm(time)
        return self.cron(f"{minute} {hour} {_in_range('day of month', day, 31, low=1)} * *")

    def timezone(self, name: str) -> ScheduledJob:
        """Read the expression in this timezone (default UTC); daylight saving follows cron."""
        cron.zone(name)
        self.tz_name = name
        return self

    # -- whether ----------------------------------------------------------------------------
    def when(self, condition: Callable[[], Any]) -> ScheduledJob:
        """Push only when ``condition()`` is true at that moment."""
        self.filters.append(condition)
        return self

    def skip(self, condition: Callable[[], Any]) -> ScheduledJob:
        """Do not push when ``condition()`` is true at that moment."""
        self.rejects.append(condition)
        return self

    def without_overlapping(self, expires_after: float = 24 * 3600) -> ScheduledJob:
        """Do not push while the previous run of this entry is still queued or running.

        Unlike Laravel's, this covers the job's run on a worker, not only the push; the lock
        expires after ``expires_after`` seconds in case a worker died holding it.
        """
        self.overlap_expires_s = float(expires_after)
        return self

    def on_one_server(self) -> ScheduledJob:
        """With several ``schedule work`` processes (one per server), push each instant once.

        Without it every process pushes its own copy (a job per server, Laravel's default).
        """
        self.one_server = True
        return self

    def catch_up(self, policy: str) -> ScheduledJob:
        """Instants missed while no scheduler ran: ``"all"`` (default, up to a day), ``"latest"``
        (only the most recent one), ``"none"`` (Laravel's behaviour: they are skipped)."""
        if policy not in CATCH_UP:
            raise ConfigurationError(f"catch_up() takes one of {', '.join(CATCH_UP)}, not {policy!r}")
        self.catch_up_policy = policy
        return self

    def name(self, label: str) -> ScheduledJob:
        """A stable name (shown by ``schedule list``, and the key of this entry's state)."""
        self.label = label
        return self

    # -- derived ----------------------------------------------------------------------------
    @property
    def tz(self) -> dt.tzinfo:
        return cron.zone(self.tz_name)

    @property
    def description(self) -> str:
        return self.label or command_name(self.job)

    @property
    def event_id(self) -> str:
        """The key of this entry's state: its name, or a digest of what it runs and when."""
        if self.label:
            return self.label
        text = f"{command_name(self.job)}|{self.expression}|{self.tz_name}|{self.queue}|{self.connection}"
        return hashlib.sha1(text.encode()).hexdigest()[:16]

    def filters_pass(self) -> bool:
        return all(f() for f in self.filters) and not any(r() for r in self.rejects)

    def next_instants(self, after: float, count: int = 3) -> list[float]:
        out: list[float] = []
        for _ in range(count):
            after = cron.next_instant(self.expression, self.tz, after)
            out.append(after)
        return out


class Schedule:
    """The entries of one app. ``eventbus.schedule`` is the default one the CLI runs."""

    def __init__(self) -> None:
        self.entries: list[ScheduledJob] = []

    def job(self, job: Any, *, queue: str | None = None, connection: str | None = None) -> ScheduledJob:
        """Schedule ``job`` (a registered job instance; it is pushed as it is at each instant)."""
        command_name(job)  # refuse an unregistered class now, not at the first instant
        entry = ScheduledJob(job, queue=queue, connection=connection)
        self.entries.append(entry)
        return entry

    def clear(self) -> None:
        self.entries.clear()


def _hh_mm(text: str) -> tuple[int, int]:
    try:
        hour, minute = (int(part) for part in text.split(":"))
    except ValueError:
        raise ConfigurationError(f"expected a time like '02:00', not {text!r}") from None
    return _in_range("hour", hour, 23), _in_range("minute", minute, 59)


def _in_range(what: str, value: int, high: int, low: int = 0) -> int:
    if not low <= value <= high:
        raise ConfigurationError(f"{what} must be from {low} to {high}, not {value}")
    return value
