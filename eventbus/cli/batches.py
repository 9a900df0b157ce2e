"""Batches: ``batches`` (list, or one with its counts), ``retry-batch`` and ``prune-batches``."""

from __future__ import annotations

import datetime as dt
import json

import click

from eventbus import batches as batch_api
from eventbus.cli.base import app_option, main, say, setup, table
from eventbus import control
from eventbus.errors import EventBusError


def _when(stamp: float | None) -> str:
    return dt.datetime.fromtimestamp(stamp).strftime("%Y-%m-%d %H:%M:%S") if stamp else "-"


@main.command("batches")
@click.argument("batch_id", required=False)
@click.option("--connection", default=None, help="Connection whose batches to list (default: the default).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per batch.")
@app_option
@click.pass_context
def batches(ctx: click.Context, batch_id: str | None, connection: str | None, as_json: bool) -> None:
    """List batches (newest first), or show one: total, pending, failed, progress, state."""
    setup(ctx)
    if batch_id:
        found = batch_api.find(_ref(batch_id, connection))
        if found is None:
            raise EventBusError(f"no batch {batch_id}")
        listing = [found]
    else:
        listing = batch_api.all_batches(connection)
    if as_json:
        for item in listing:
            click.echo(json.dumps(item.to_dict()))
        return
    if not listing:
        say("No batches.")
        return
    table(("ID", "NAME", "CREATED", "TOTAL", "PENDING", "FAILED", "PROGRESS", "STATE"),
          [(b.id, b.name or "-", _when(b.created_at), b.total, b.pending, b.failed,
            f"{b.progress:.0f}%", "cancelled" if b.cancelled else "finished" if b.finished else "running")
           for b in listing], right=0)


@main.command("retry-batch")
@click.argument("batch_ids", nargs=-1, required=True, metavar="ID...")
@click.option("--connection", default=None, help="Connection of the batches (default: the default).")
@app_option
@click.pass_context
def retry_batch(ctx: click.Context, batch_ids: tuple[str, ...], connection: str | None) -> None:
    """Push a batch's failed jobs back onto their queues (Laravel's queue:retry-batch).

    Each failed job of the batch that is in the failed job store is retried, as eventbus
    retry would; when they all succeed, the batch's then callbacks run (unless it was
    cancelled). Steps of a chain that never ran because an earlier step failed run again with
    their chain.

    \b
    Examples:
      eventbus retry-batch 9b1c0d3e-...
      eventbus retry-batch 9b1c0d3e-... --connection redis
    """
    setup(ctx)
    for batch_id in batch_ids:
        found = batch_api.find(_ref(batch_id, connection))
        if found is None:
            raise EventBusError(f"no batch {batch_id}")
        done, _ = control.retry(list(found.failed_job_ids))
        for item in done:
            say(f"Pushed {item.uuid} ({item.display_name}) back onto {item.queue}.")
        if not done:
            say(f"Batch {found.id} has no failed jobs to retry.")


def _ref(batch_id: str, connection: str | None) -> str:
    return batch_id if "@" in batch_id or not connection else f"{batch_id}@{connection}"


@main.command("prune-batches")
@click.option("--hours", type=float, default=24.0, show_default=True,
              help="Remove finished batches that finished longer ago than this.")
@click.option("--unfinished", type=float, default=None, metavar="HOURS",
              help="Also remove unfinished batches created longer ago than this.")
@click.option("--cancelled", type=float, default=None, metavar="HOURS",
              help="Also remove cancelled batches created longer ago than this.")
@click.option("--connection", default=None, help="Connection whose batches to prune.")
@app_option
@click.pass_context
def prune_batches(ctx: click.Context, hours: float, unfinished: float | None, cancelled: float | None,
                  connection: str | None) -> None:
    """Remove old batches (Laravel's queue:prune-batches).

    \b
    Examples:
      eventbus prune-batches                       finished more than 24 hours ago
      eventbus prune-batches --hours 48 --unfinished 72 --cancelled 72
    """
    setup(ctx)
    removed = batch_api.prune(hours * 3600, connection,
                              unfinished_older_than_s=None if unfinished is None else unfinished * 3600,
                              cancelled_older_than_s=None if cancelled is None else cancelled * 3600)
    say(f"Removed {removed} batches.")
