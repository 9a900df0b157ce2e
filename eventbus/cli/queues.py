"""Queues: ``size``, ``clear``, ``peek``; ``migrate`` and ``events`` (``monitor`` is in observe)."""

from __future__ import annotations

import json

import click

from eventbus import runtime
from eventbus import tracking  # noqa: F401 - its tables join `eventbus migrate` (runtime.on_migrate)
from eventbus.cli.base import app_option, confirm, force_option, main, say, setup, table
from eventbus.event_bus import bus
from eventbus.queue.base import Queue
from eventbus.runtime import connection


def _queue_names(q: Queue, queues: str) -> list[str]:
    return [x.strip() for x in queues.split(",") if x.strip()] or [q.default_queue]


@main.command()
@click.argument("connection_name", metavar="[CONNECTION]", required=False)
@click.option("--queue", "queues", default="", help="Queues to clear (default: the default queue).")
@force_option
@app_option
@click.pass_context
def clear(ctx: click.Context, connection_name: str | None, queues: str, force: bool) -> None:
    """Delete ready and delayed jobs from queues.

    On a terminal it asks first; elsewhere (cron, scripts) it needs --force.
    """
    setup(ctx)
    q = connection(connection_name)
    names = _queue_names(q, queues)
    if not force:
        doomed = sum(s.ready + s.delayed for s in (q.stats(name) for name in names))
        where = ", ".join(f"{q.connection_name}:{name}" for name in names)
        confirm(f"Delete {doomed:,} ready and delayed jobs from {where}?", force=force)
    for name in names:
        say(f"Cleared {q.clear(name)} jobs from {q.connection_name}:{name}.")


@main.command()
@click.argument("connection_name", metavar="[CONNECTION]", required=False)
@click.option("--queue", "queues", default="", help="Queues to count (default: every queue with jobs).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per queue.")
@app_option
@click.pass_context
def size(ctx: click.Context, connection_name: str | None, queues: str, as_json: bool) -> None:
    """Jobs per queue: ready, delayed, reserved and the total.

    Without --queue, every queue of the connection that holds jobs.
    """
    setup(ctx)
    q = connection(connection_name)
    names = [x.strip() for x in queues.split(",") if x.strip()] or q.queues() or [q.default_queue]
    stats = [q.stats(name) for name in names]
    if as_json:
        for item in stats:
            click.echo(json.dumps({"connection": q.connection_name, **item.to_dict()}))
        return
    table(("QUEUE", "READY", "DELAYED", "RESERVED", "SIZE"),
           [(f"{q.connection_name}:{s.queue}", s.ready, s.delayed, s.reserved, s.size) for s in stats],
           right=4)



@main.command()
@click.argument("connection_name", metavar="[CONNECTION]", required=False)
@click.option("--queue", default=None, help="Queue to look at.")
@click.option("--limit", type=int, default=10, show_default=True)
@app_option
@click.pass_context
def peek(ctx: click.Context, connection_name: str | None, queue: str | None, limit: int) -> None:
    """Print the raw payloads of the oldest ready jobs, without reserving them."""
    setup(ctx)
    for raw in connection(connection_name).peek(queue, limit):
        say(raw)


@main.command()
@app_option
@click.pass_context
def migrate(ctx: click.Context) -> None:
    """Create the database tables (jobs, failed_jobs, notifications) if missing."""
    setup(ctx)
    for line in runtime.migrate():
        say(line)


@main.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON object per event.")
@app_option
@click.pass_context
def events(ctx: click.Context, as_json: bool) -> None:
    """List every event with its listeners, in the order they run."""
    setup(ctx)
    listening = bus.listening()
    if as_json:
        for name, regs in listening.items():
            click.echo(json.dumps({"event": name, "listeners": [reg.describe() for reg in regs]}))
        return
    if not listening:
        say("No listeners registered (pass --app to load your app).")
    for name, regs in listening.items():
        say(name)
        for reg in regs:
            say(f"  -> {reg.describe()}")
