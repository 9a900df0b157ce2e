"""Failed jobs: ``failed``, ``retry``, ``forget``, ``flush``, ``prune-failed``."""

from __future__ import annotations

import datetime as dt
from typing import Any

import click

from eventbus import control, runtime
from eventbus.cli.base import app_option, main, say, setup
from eventbus.errors import EventBusError


def _store() -> Any:
    return runtime.failed_store()


@main.command("failed")
@app_option
@click.pass_context
def failed_cmd(ctx: click.Context) -> None:
    """List failed jobs: uuid, connection, queue, job, failed at, exception."""
    setup(ctx)
    records = _store().all()
    if not records:
        say("No failed jobs.")
        return
    rows = [(r.uuid, r.connection, r.queue, r.display_name,
             dt.datetime.fromtimestamp(r.failed_at).strftime("%Y-%m-%d %H:%M:%S"), r.summary)
            for r in records]
    header = ("UUID", "CONNECTION", "QUEUE", "JOB", "FAILED AT", "EXCEPTION")
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(5)]
    for row in [header, *rows]:
        say("  ".join(str(c).ljust(w) for c, w in zip(row, widths)) + "  " + str(row[5]))


@main.command()
@click.argument("uuids", nargs=-1, required=True, metavar="UUID...|all")
@app_option
@click.pass_context
def retry(ctx: click.Context, uuids: tuple[str, ...]) -> None:
    """Push failed jobs back onto their queues (attempts reset to 0)."""
    setup(ctx)
    done, missing = control.retry(None if uuids == ("all",) else list(uuids))
    for item in done:
        say(f"Pushed {item.uuid} ({item.display_name}) back onto {item.queue}.")
    if missing:
        raise EventBusError(f"no failed job with uuid {', '.join(missing)}")


@main.command()
@click.argument("uuid")
@app_option
@click.pass_context
def forget(ctx: click.Context, uuid: str) -> None:
    """Delete one failed job record."""
    setup(ctx)
    control.forget(uuid)
    say(f"Forgot failed job {uuid}.")


@main.command()
@app_option
@click.pass_context
def flush(ctx: click.Context) -> None:
    """Delete every failed job record."""
    setup(ctx)
    say(f"Deleted {control.flush()} failed jobs.")


@main.command("prune-failed")
@click.option("--hours", type=float, default=24.0, show_default=True, help="Keep records newer than this.")
@app_option
@click.pass_context
def prune_failed(ctx: click.Context, hours: float) -> None:
    """Delete failed job records older than --hours."""
    setup(ctx)
    say(f"Deleted {control.flush(older_than_s=hours * 3600)} failed jobs.")
