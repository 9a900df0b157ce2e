"""``eventbus schedule run|work|list``: push scheduled jobs when their cron expression fires."""

from __future__ import annotations

import datetime as dt
import json
import signal
import time
from collections.abc import Callable
from types import FrameType

import click

from eventbus import runtime
from eventbus.cli.base import app_option, main, say, setup, table
from eventbus.scheduling import Scheduler, schedule


def _when(instant: float, tz: dt.tzinfo) -> str:
    return dt.datetime.fromtimestamp(instant, tz).strftime("%Y-%m-%d %H:%M %Z")


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


@main.group("schedule")
def schedule_group() -> None:
    """Scheduled jobs (define them with eventbus.schedule in your --app module).

    \b
    Examples:
      eventbus schedule work --app shop.app     fire due jobs, minute after minute
      eventbus schedule run --app shop.app      fire what is due now (from system cron)
      eventbus schedule list --app shop.app     each entry and its next three times
    """


@schedule_group.command("run")
@now_option
@app_option
@click.pass_context
def run(ctx: click.Context, now: str | None) -> None:
    """Fire every entry that is due now (for system cron: * * * * *)."""
    setup(ctx)
    for fired in Scheduler(schedule, clock=clock_from(now)).tick():
        say(f"{fired.entry}: {fired.outcome}")


@schedule_group.command("work")
@now_option
@app_option
@click.pass_context
def work(ctx: click.Context, now: str | None) -> None:
    """Fire due entries until stopped (SIGTERM or Ctrl-C finish the current tick)."""
    setup(ctx)
    scheduler = Scheduler(schedule, clock=clock_from(now))

    def stop(signum: int, frame: FrameType | None) -> None:
        scheduler.stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    say(f"Scheduler running {len(schedule.entries)} entries; Ctrl-C to stop.")
    ctx.exit(scheduler.work())


@schedule_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per entry.")
@app_option
@click.pass_context
def list_entries(ctx: click.Context, as_json: bool) -> None:
    """Each entry: its cron expression, timezone, next three times and options."""
    setup(ctx)
    now = dt.datetime.now(dt.timezone.utc).timestamp()
    rows: list[tuple[object, ...]] = []
    for entry in schedule.entries:
        upcoming = entry.next_instants(now)
        if as_json:
            click.echo(json.dumps({"name": entry.description, "cron": entry.expression,
                                   "timezone": entry.tz_name, "next": upcoming,
                                   "queue": entry.queue, "connection": entry.connection or
                                   runtime.settings().default,
                                   "without_overlapping": entry.overlap_expires_s is not None,
                                   "on_one_server": entry.one_server}))
            continue
        options = ", ".join(o for o, on in (("without overlapping", entry.overlap_expires_s is not None),
                                             ("one server", entry.one_server)) if on)
        rows.append((entry.description, entry.expression, entry.tz_name,
                     _when(upcoming[0], entry.tz), _when(upcoming[1], entry.tz), options or "-"))
    if not as_json:
        if not rows:
            say("No scheduled jobs (define them with eventbus.schedule in your --app module).")
            return
        table(("JOB", "CRON", "TIMEZONE", "NEXT", "THEN", "OPTIONS"), rows, right=0)
