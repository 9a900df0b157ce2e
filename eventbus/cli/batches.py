"""Batches: ``batches`` (list, or one with its counts) and ``prune-batches``."""

from __future__ import annotations

import datetime as dt
import json

import click

from eventbus import batches as batch_api
from eventbus.cli.base import app_option, main, say, setup, table
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
        found = batch_api.find(batch_id if "@" in batch_id or not connection else f"{batch_id}@{connection}")
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


@main.command("prune-batches")
@click.option("--hours", type=float, default=24.0, show_default=True,
              help="Remove finished or cancelled batches older than this.")
@click.option("--connection", default=None, help="Connection whose batches to prune.")
@app_option
@click.pass_context
def prune_batches(ctx: click.Context, hours: float, connection: str | None) -> None:
    """Remove finished and cancelled batches older than --hours."""
    setup(ctx)
    say(f"Removed {batch_api.prune(hours * 3600, connection)} batches.")
