"""Jobs: ``job show UUID``, wherever it is (pending, delayed, reserved, completed or failed), and ``jobs``,
the jobs of a tag, class, queue or status."""

from __future__ import annotations

import datetime as dt
import json

import click

from eventbus.cli.base import app_option, main, say, setup, table
from eventbus.errors import EventBusError
from eventbus.monitoring.humanize import duration
from eventbus.monitoring.listing import DEFAULT_LIMIT, STATUSES, JobFilter, list_jobs
from eventbus.monitoring.lookup import NOT_FOUND, find_job
from eventbus.tracking.repository import MAX_LIMIT


def _when(stamp: float | None) -> str:
    return dt.datetime.fromtimestamp(stamp).strftime("%Y-%m-%d %H:%M:%S") if stamp else "-"


@main.group("job")
def job_group() -> None:
    """Look at one job by its uuid."""


@job_group.command("show")
@click.argument("uuid")
@click.option("--connection", "connections", multiple=True,
              help="Look on this connection (repeatable; default: every connection workers consume).")
@click.option("--json", "as_json", is_flag=True, help="One JSON document (the dashboard's /api/jobs/UUID).")
@app_option
@click.pass_context
def job_show(ctx: click.Context, uuid: str, connections: tuple[str, ...], as_json: bool) -> None:
    """Print one job: status (pending, delayed, reserved, completed or failed), where it is,
    attempts, times, tags, the payload and, for a failed job, its exception and traceback.

    Queued jobs are found on drivers that can find one job (redis, database, memory); failed
    ones in the failed job store; completed ones in the recent-jobs store while
    configure(retention=...) keeps them (without their payload, which it does not keep). An
    encrypted job's state stays sealed. Exit 1 when no job has this uuid.

    \b
    Examples:
      eventbus job show 3f2a...
      eventbus job show 3f2a... --json
    """
    setup(ctx)
    found = find_job(uuid, connections or None)
    if found is None:
        raise EventBusError(NOT_FOUND.format(uuid=uuid))
    if as_json:
        click.echo(json.dumps(found.to_dict()))
        return
    for label, value in (("UUID", found.uuid), ("Job", found.display_name), ("Status", found.status),
                         ("Connection", found.connection), ("Queue", found.queue),
                         ("Attempts", "-" if found.attempts is None else found.attempts),
                         ("Pushed at", _when(found.pushed_at)), ("Failed at", _when(found.failed_at)),
                         ("Batch", found.batch_id or "-"), ("Tags", ", ".join(found.tags) or "-")):
        say(f"{label + ':':<12}{value}")
    if found.finished_at is not None:  # a job the recent-jobs store keeps
        say(f"{'Started:':<12}{_when(found.started_at)}")
        say(f"{'Finished:':<12}{_when(found.finished_at)}")
        say(f"{'Runtime:':<12}{duration(found.runtime_s)}")
    if found.exception:
        say(f"{'Exception:':<12}{found.exception}")
        say()
        for line in (found.traceback or "(no traceback)").splitlines():
            say(line)
    say()
    if not found.payload_kept:
        say(f"Payload: not kept (the recent-jobs store keeps a {found.status} job's class, queue, "
            "tags, attempts and times)")
        return
    say("Payload" + (" (encrypted state sealed)" if found.sealed else "") + ":")
    for line in found.payload.splitlines():
        say(line)


@main.command("jobs")
@click.option("--tag", default=None, help="Only jobs carrying this tag.")
@click.option("--class", "job_class", default=None,
              help="Only jobs of this class (display or command name, dotted or bare).")
@click.option("--queue", default=None, help="Only this queue's jobs.")
@click.option("--status", type=click.Choice(STATUSES), default=None,
              help="Only jobs of this status (default: every one, in this order).")
@click.option("--connection", "connections", multiple=True,
              help="Look on this connection (repeatable; default: every connection workers consume).")
@click.option("--limit", type=click.IntRange(1, MAX_LIMIT), default=DEFAULT_LIMIT, show_default=True,
              help="At most this many jobs.")
@click.option("--json", "as_json", is_flag=True, help="One JSON document (the dashboard's /api/jobs).")
@app_option
@click.pass_context
def jobs_cmd(ctx: click.Context, tag: str | None, job_class: str | None, queue: str | None,
             status: str | None, connections: tuple[str, ...], limit: int, as_json: bool) -> None:
    """List jobs by tag, class, queue and status: pending (ready, then delayed), reserved,
    completed (kept by the workers for configure(retention=...)) and failed.

    Delayed and reserved jobs are listed on the drivers that can list them (redis, database,
    memory). Connections or stores that cannot be read are named on stderr (exit 1), the rest
    is still listed.

    \b
    Examples:
      eventbus jobs --tag order:42
      eventbus jobs --status completed --class SendInvoice --limit 20
      eventbus jobs --queue mail --status pending --json
    """
    setup(ctx)
    listing = list_jobs(JobFilter(tag=tag, job_class=job_class, queue=queue, status=status,
                                  limit=limit), connections or None)
    if as_json:
        click.echo(json.dumps(listing.to_dict()))
    elif listing.jobs:
        table(("UUID", "STATUS", "JOB", "QUEUE", "TAGS", "AT"),
              [(j.uuid, j.status, j.name, f"{j.connection}:{j.queue}", ", ".join(j.tags) or "-", _when(j.at))
               for j in listing.jobs], right=0)
    else:
        say("No jobs.")
    for problem in listing.problems:
        say(f"eventbus: cannot read {problem}", err=True)
    if listing.problems:
        ctx.exit(1)
