"""Failed jobs: ``failed``, ``retry``, ``forget``, ``flush``, ``prune-failed``."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import click

from eventbus import control, runtime
from eventbus.cli.base import app_option, main, say, setup
from eventbus.errors import EventBusError
from eventbus.monitoring import failures


def _store() -> Any:
    return runtime.failed_store()


@main.group("failed", invoke_without_command=True)
@click.option("--queue", default=None, help="Only this queue's failed jobs.")
@click.option("--connection", "connection_name", default=None, help="Only this connection's.")
@click.option("--limit", type=click.IntRange(min=0), default=None, help="At most this many, newest first.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per failed job.")
@app_option
@click.pass_context
def failed_cmd(ctx: click.Context, queue: str | None, connection_name: str | None,
               limit: int | None, as_json: bool) -> None:
    """List failed jobs: uuid, connection, queue, job, failed at, exception.

    \b
    Examples:
      eventbus failed --queue mail --limit 20
      eventbus failed show 3f2a...            the exception, traceback and payload
    """
    if ctx.invoked_subcommand is not None:
        return
    setup(ctx)
    records = failures.failed_jobs(queue=queue, connection=connection_name, limit=limit)
    if as_json:
        for r in records:
            click.echo(json.dumps({"uuid": r.uuid, "connection": r.connection, "queue": r.queue,
                                   "job": r.display_name, "failed_at": r.failed_at,
                                   "exception": r.summary}))
        return
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


@failed_cmd.command("show")
@click.argument("uuid")
@click.option("--json", "as_json", is_flag=True, help="One JSON document.")
@app_option
@click.pass_context
def failed_show(ctx: click.Context, uuid: str, as_json: bool) -> None:
    """Print one failed job: its exception, the traceback and the payload.

    An encrypted job's state stays sealed.
    """
    setup(ctx)
    record = _store().find(uuid)
    if record is None:
        raise EventBusError(f"no failed job with uuid {uuid}")
    detail = failures.describe(record)
    if as_json:
        click.echo(json.dumps(detail.to_dict()))
        return
    for label, value in (("UUID", record.uuid), ("Job", record.display_name),
                         ("Connection", record.connection), ("Queue", record.queue),
                         ("Failed at", dt.datetime.fromtimestamp(record.failed_at)
                          .strftime("%Y-%m-%d %H:%M:%S")), ("Exception", detail.summary)):
        say(f"{label + ':':<12}{value}")
    say()
    for line in (detail.traceback or "(no traceback)").splitlines():
        say(line)
    say()
    say("Payload" + (" (encrypted state sealed)" if detail.sealed else "") + ":")
    for line in detail.payload.splitlines():
        say(line)


@main.command()
@click.argument("uuids", nargs=-1, metavar="UUID...|all")
@click.option("--queue", default=None, help="Retry every failed job of this queue.")
@app_option
@click.pass_context
def retry(ctx: click.Context, uuids: tuple[str, ...], queue: str | None) -> None:
    """Push failed jobs back onto their queues (attempts reset to 0).

    \b
    Examples:
      eventbus retry 3f2a... 9b1c...
      eventbus retry all
      eventbus retry --queue mail               every failed job of queue mail
    """
    setup(ctx)
    if not uuids and queue is None:
        raise click.UsageError("give failed job uuids, 'all', or --queue NAME")
    if queue is not None and uuids not in ((), ("all",)):
        raise click.UsageError("give either uuids or --queue, not both")
    missing: list[str] = []
    if queue is not None:
        done = [control.retry_record(r) for r in failures.failed_jobs(queue=queue)]
        if not done:
            say(f"No failed jobs on queue {queue}.")
    else:
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
