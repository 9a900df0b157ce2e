"""Failed jobs: ``failed``, ``retry``, ``forget``, ``flush``, ``prune-failed``; and ``cancel``,
which keeps a queued job from ever running."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import click

from eventbus import control, runtime
from eventbus.cli.base import BadUsage, app_option, confirm, force_option, main, say, setup
from eventbus.errors import EventBusError
from eventbus.failed.base import FailedJob
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
@click.option("--queue", default=None, help="Only failed jobs of this queue.")
@click.option("--class", "job_class", default=None, metavar="CLASS",
              help="Only failed jobs of this job class: display or command name, dotted or bare.")
@click.option("--range", "span", default=None, metavar="UUID1..UUID2",
              help="The failed jobs ordered by failure time from UUID1 to UUID2, both included.")
@app_option
@click.pass_context
def retry(ctx: click.Context, uuids: tuple[str, ...], queue: str | None, job_class: str | None,
          span: str | None) -> None:
    """Push failed jobs back onto their queues (attempts reset to 0).

    --range takes two failed jobs' uuids (as `eventbus failed` lists them) and retries every
    failed job whose failure time lies from the one to the other, both included, oldest first;
    either uuid not being a failed job is an error (exit 2). --class matches the job's display
    name or its command name, dotted (shop.jobs.SendInvoice) or bare (SendInvoice). --queue and
    --class narrow 'all' or a --range; they cannot be combined with uuids.

    \b
    Examples:
      eventbus retry 3f2a... 9b1c...
      eventbus retry all
      eventbus retry --queue mail               every failed job of queue mail
      eventbus retry --class SendInvoice        every failed SendInvoice job
      eventbus retry --range FIRST_UUID..LAST_UUID   from one failure to another (by failure time)
    """
    setup(ctx)
    filtered = queue is not None or job_class is not None or span is not None
    if not uuids and not filtered:
        raise click.UsageError("give failed job uuids, 'all', --queue NAME, --class CLASS or --range UUID1..UUID2")
    if filtered and uuids not in ((), ("all",)):
        raise click.UsageError("give either uuids or --queue/--class/--range, not both")
    missing: list[str] = []
    if filtered:
        records = _selected(queue, job_class, span)
        done = [control.retry_record(r) for r in records]
        if not done:
            say(f"No failed jobs{_described(queue, job_class, span)}.")
    else:
        done, missing = control.retry(None if uuids == ("all",) else list(uuids))
    for item in done:
        say(f"Pushed {item.uuid} ({item.display_name}) back onto {item.queue}.")
    if missing:
        raise EventBusError(f"no failed job with uuid {', '.join(missing)}")


def _selected(queue: str | None, job_class: str | None, span: str | None) -> list[FailedJob]:
    """The failed records that --queue, --class and --range select (a range oldest first)."""
    if span is None:
        return failures.failed_jobs(queue=queue, job_class=job_class)
    first, dots, last = span.partition("..")
    if not dots or not first or not last:
        raise BadUsage(f"--range takes two failed job uuids as UUID1..UUID2, not {span!r}")
    try:
        records = failures.failed_between(first, last)
    except EventBusError as exc:
        raise BadUsage(f"--range {span}: {exc}") from None
    return [r for r in records if (queue is None or r.queue == queue)
            and (job_class is None or failures.is_of_class(r, job_class))]


def _described(queue: str | None, job_class: str | None, span: str | None) -> str:
    parts = [f" on queue {queue}" if queue else "", f" of class {job_class}" if job_class else "",
             f" in range {span}" if span else ""]
    return "".join(parts)


@main.command()
@click.argument("uuids", nargs=-1, required=True, metavar="UUID...")
@click.option("--connection", "connection_name", default=None, help="The connection (default: the default one).")
@click.option("--queue", default=None, help="Only look on this queue (default: every queue of the connection).")
@app_option
@click.pass_context
def cancel(ctx: click.Context, uuids: tuple[str, ...], connection_name: str | None, queue: str | None) -> None:
    """Remove queued or delayed jobs before they run; their unique locks are released.

    A job a worker holds is running and is not cancelled; nor is a member of a batch (cancel
    the batch: Batch.cancel()). Exit 0 when every job was cancelled, 1 when one was not (each
    line says why), 2 on a usage error or a connection whose driver cannot remove one job (the
    error says why).

    \b
    Examples:
      eventbus cancel 3f2a...                   look on every queue of the default connection
      eventbus cancel 3f2a... 9b1c... --connection redis --queue mail
    """
    setup(ctx)
    results = [control.cancel(uuid, connection=connection_name, queue=queue) for uuid in uuids]
    for result in results:
        if result.cancelled:
            say(f"Cancelled {result.uuid} on {result.connection}:{result.queue}.")
        else:
            say(f"Not cancelled {result.uuid}: {result.reason}.")
    if not all(result.cancelled for result in results):
        ctx.exit(1)


@main.command()
@click.argument("uuid")
@app_option
@click.pass_context
def forget(ctx: click.Context, uuid: str) -> None:
    """Delete one failed job record."""
    setup(ctx)
    control.forget(uuid)
    say(f"Forgot failed job {uuid}.")


def _delete_failed(hours: float | None, force: bool) -> None:
    """Delete failed records (those older than ``hours``, or all), after asking on a terminal."""
    older_than_s = None if hours is None else hours * 3600
    if not force:
        doomed = control.count_failed(older_than_s)
        age = "" if hours is None else f" older than {hours:g} hours"
        confirm(f"Delete {doomed:,} failed job records{age}?", force=force)
    say(f"Deleted {control.flush(older_than_s)} failed jobs.")


@main.command()
@click.option("--hours", type=click.FloatRange(min=0), default=None,
              help="Only records older than this many hours (Laravel's queue:flush --hours).")
@force_option
@app_option
@click.pass_context
def flush(ctx: click.Context, hours: float | None, force: bool) -> None:
    """Delete every failed job record (or those older than --hours).

    On a terminal it asks first; elsewhere (cron, scripts) it needs --force.

    \b
    Examples:
      eventbus flush                      asks, then deletes every record
      eventbus flush --hours 48 --force   records older than two days, without asking
    """
    setup(ctx)
    _delete_failed(hours, force)


@main.command("prune-failed")
@click.option("--hours", type=click.FloatRange(min=0), default=24.0, show_default=True,
              help="Keep records newer than this.")
@force_option
@app_option
@click.pass_context
def prune_failed(ctx: click.Context, hours: float, force: bool) -> None:
    """Delete failed job records older than --hours (asks on a terminal; else needs --force)."""
    setup(ctx)
    _delete_failed(hours, force)
