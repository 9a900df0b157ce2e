"""``eventbus schedule run|work|list|test|interrupt``: the scheduler from the command line."""

from __future__ import annotations

import datetime as dt
import json
import signal
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

import click

from eventbus import runtime
from eventbus.cli.base import app_option, main, say, setup, table
from eventbus.errors import EventBusError
from eventbus.scheduling import Fired, ScheduledCall, ScheduledJob, Scheduler, interrupt, schedule
from eventbus.scheduling.locks import HeldLock, held


def _when(instant: float, tz: dt.tzinfo) -> str:
    return dt.datetime.fromtimestamp(instant, tz).strftime("%Y-%m-%d %H:%M:%S %Z")


def clock_from(now: str | None) -> Callable[[], float]:
    """The real clock, or one that starts at ``now`` (ISO, UTC unless it says) and runs on."""
    if not now:
        return time.time
    try:
        start = dt.datetime.fromisoformat(now)
    except ValueError:
        raise click.BadParameter(f"expected a time like 2026-11-23T10:00:00, not {now!r}") from None
    if start.tzinfo is None:
        start = start.replace(tzinfo=dt.timezone.utc)
    origin, began = start.timestamp(), time.monotonic()
    return lambda: origin + (time.monotonic() - began)


now_option = click.option("--now", default=None, metavar="ISO-TIME",
                          help="Pretend the clock reads this (try a schedule out); UTC unless given.")
env_option = click.option("--env", "environment", envvar="EVENTBUS_ENV", default="production",
                          show_default=True, metavar="NAME",
                          help="This environment's name, for entries with environments(...) "
                               "(or EVENTBUS_ENV).")


def _print(fired: Fired) -> None:
    say(f"{fired.entry}: {fired.outcome}" + (f" ({fired.error})" if fired.error else ""))


def _stop_on_signals(scheduler: Scheduler) -> None:
    def stop(signum: int, frame: FrameType | None) -> None:
        scheduler.stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)


@main.group("schedule")
def schedule_group() -> None:
    """Scheduled jobs and calls (define them with eventbus.schedule in your --app module).

    \b
    Examples:
      eventbus schedule work --app shop.app        fire due entries, minute after minute
      eventbus schedule run --app shop.app         fire what is due now (from system cron)
      eventbus schedule list --next --app shop.app each entry and its next times, soonest first
      eventbus schedule test prune --app shop.app  run the entry named prune now
      eventbus schedule interrupt                  make running schedulers stop (after a deploy)
    """


@schedule_group.command("run")
@now_option
@env_option
@app_option
@click.pass_context
def run(ctx: click.Context, now: str | None, environment: str) -> None:
    """Fire every entry that is due now (for system cron: * * * * *).

    With entries that repeat within a minute (every_ten_seconds()...) it goes on firing them
    until the minute ends. Exits 1 when an entry failed (after the others ran).
    """
    setup(ctx)
    scheduler = Scheduler(schedule, clock=clock_from(now), environment=environment, on_fired=_print)
    _stop_on_signals(scheduler)
    fired = scheduler.run_minute()
    if any(f.outcome == "failed" for f in fired):
        ctx.exit(1)


@schedule_group.command("work")
@now_option
@env_option
@app_option
@click.pass_context
def work(ctx: click.Context, now: str | None, environment: str) -> None:
    """Fire due entries until stopped (SIGTERM or Ctrl-C finish the current tick).

    While Redis or the database does not answer it tries again, as workers do, and fires the
    instants it missed once the server is back. `eventbus schedule interrupt` makes it exit 0
    (its supervisor then starts the code just deployed).
    """
    setup(ctx)
    scheduler = Scheduler(schedule, clock=clock_from(now), environment=environment)
    _stop_on_signals(scheduler)
    say(f"Scheduler running {len(schedule.entries)} entries; Ctrl-C to stop.")
    code = scheduler.work()
    if scheduler.interrupted:
        say("Interrupted by `eventbus schedule interrupt`.")
    ctx.exit(code)


@schedule_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per entry.")
@click.option("--next", "by_next", is_flag=True, help="Soonest first (sorted by the next run time).")
@app_option
@click.pass_context
def list_entries(ctx: click.Context, as_json: bool, by_next: bool) -> None:
    """Each entry: its cron expression, timezone, next times, options and a held lock."""
    setup(ctx)
    now = time.time()
    scheduler = Scheduler(schedule)
    entries = [(entry, entry.next_instants(now)) for entry in schedule.entries]
    if by_next:
        entries.sort(key=lambda item: item[1][0] if item[1] else float("inf"))
    if as_json:
        for entry, upcoming in entries:
            click.echo(json.dumps(_as_dict(scheduler, entry, upcoming)))
        return
    if not entries:
        say("No scheduled jobs (define them with eventbus.schedule in your --app module).")
        return
    rows: list[tuple[object, ...]] = []
    for entry, upcoming in entries:
        lock = _held_lock(scheduler, entry)
        shown = [_when(t, entry.tz) for t in upcoming[:2]] + ["never"] * (2 - len(upcoming[:2]))
        rows.append((entry.description, entry.kind, _frequency(entry), entry.tz_name, *shown,
                     ", ".join(_options(entry)) or "-", lock.describe() if lock else "-"))
    table(("NAME", "KIND", "CRON", "TIMEZONE", "NEXT", "THEN", "OPTIONS", "LOCK"), rows, right=0)


def _frequency(entry: ScheduledJob | ScheduledCall) -> str:
    return entry.expression + (f" every {entry.repeat_s}s" if entry.repeat_s else "")


def _options(entry: ScheduledJob | ScheduledCall) -> list[str]:
    found = []
    if entry.overlap_expires_s is not None:
        found.append(f"without overlapping ({entry.overlap_expires_s:g}s)")
    if entry.one_server:
        found.append("one server")
    if entry.env_names:
        found.append(f"environments {','.join(entry.env_names)}")
    if entry.runs_in_maintenance:
        found.append("even in maintenance")
    if entry.windows:
        found.append("between" if all(w[2] for w in entry.windows) else "time windows")
    if entry.filters or entry.rejects:
        found.append("conditions")
    return found


def _held_lock(scheduler: Scheduler, entry: ScheduledJob | ScheduledCall) -> HeldLock | None:
    lock = scheduler.lock_of(entry)
    return None if lock is None else held(lock)


def _as_dict(scheduler: Scheduler, entry: ScheduledJob | ScheduledCall, upcoming: list[float]) -> dict[str, Any]:
    lock = _held_lock(scheduler, entry)
    return {"name": entry.description, "kind": entry.kind, "cron": entry.expression,
            "repeat_seconds": entry.repeat_s, "timezone": entry.tz_name, "next": upcoming,
            "queue": getattr(entry, "queue", None),
            "connection": entry.connection or runtime.settings().default,
            "without_overlapping": entry.overlap_expires_s is not None,
            "on_one_server": entry.one_server, "environments": list(entry.env_names),
            "even_in_maintenance_mode": entry.runs_in_maintenance,
            "lock": None if lock is None else {"holder": lock.holder, "taken_at": lock.taken_at,
                                               "expires_at": lock.expires_at}}


@schedule_group.command("test")
@click.argument("name", required=False)
@app_option
@click.pass_context
def test(ctx: click.Context, name: str | None) -> None:
    """Run the entry named NAME now, whatever its schedule (Laravel's schedule:test).

    Its locks and hooks apply; its conditions (when, between, environments) do not. Exits 1
    when it failed.
    """
    setup(ctx)
    names = [e.description for e in schedule.entries]
    if not names:
        say("No scheduled jobs (define them with eventbus.schedule in your --app module).")
        return
    if name is None:
        raise EventBusError(f"name the entry to run: {', '.join(sorted(set(names)))}")
    matches = schedule.named(name)
    if not matches:
        raise EventBusError(f"no scheduled entry named {name!r} (entries: {', '.join(sorted(set(names)))})")
    if len(matches) > 1:
        raise EventBusError(f"{len(matches)} entries are named {name!r}: give the one to run a "
                            ".name(...) of its own")
    fired = Scheduler(schedule).run_now(matches[0])
    _print(fired)
    if fired.outcome == "failed":
        ctx.exit(1)


@schedule_group.command("interrupt")
@app_option
@click.pass_context
def interrupt_command(ctx: click.Context) -> None:
    """Make every running `schedule work` (and `schedule run` still firing its minute) stop.

    Run it after a deploy: each scheduler finishes its current tick and exits 0, and its
    supervisor starts the new code.
    """
    setup(ctx)
    interrupt()
    say("Told running schedulers to stop after their current tick.")
