"""Watching queues and workers: ``status``, ``workers``, ``monitor``, ``pause``/``resume`` and
``dashboard``."""

from __future__ import annotations

import importlib
import io
import ipaddress
import json
import os
import sys
import time
from collections.abc import Callable
from contextlib import redirect_stdout
from typing import Any

import click

from eventbus import runtime
from eventbus.cli.base import app_option, main, say, setup, table
from eventbus.errors import ConfigurationError, EventBusError, MissingDependencyError
from eventbus.event_bus import bus
from eventbus.events import QueueBusy
from eventbus.monitoring import pausing
from eventbus.monitoring.humanize import clock, duration
from eventbus.monitoring.registry import WorkerInfo
from eventbus.monitoring.status import QueueStatus, Status, queue_statuses, status, workers_of
from eventbus.monitoring.status import connections as watched_connections

CLEAR = "\x1b[H\x1b[J"


def _connections(value: str) -> list[str]:
    return [x.strip() for x in value.split(",") if x.strip()]


# -- printing ---------------------------------------------------------------------------------------

def print_queues(queues: list[QueueStatus]) -> None:
    if not queues:
        say("No queues hold or held jobs.")
        return
    table(("QUEUE", "STATUS", "READY", "DELAYED", "RESERVED", "OLDEST"),
          [(f"{q.connection}:{q.queue}", "paused" if q.paused else "active", q.ready, q.delayed,
            q.reserved, duration(q.oldest_ready_age_s)) for q in queues], right=4)


def print_workers(workers: list[WorkerInfo], now: float) -> None:
    if not workers:
        say("No workers running.")
        return
    rows: list[tuple[object, ...]] = []
    for w in workers:
        job = w.job
        rows.append((w.name, w.pid, w.host, w.connection, ",".join(w.queues), clock(w.started_at),
                     w.status, job.name if job else "-", job.uuid if job else "-",
                     duration(now - job.started_at) if job else "-", w.processed, w.failed,
                     f"{duration(max(now - w.last_heartbeat, 0))} ago"))
    table(("WORKER", "PID", "HOST", "CONNECTION", "QUEUES", "STARTED", "STATUS", "JOB", "UUID",
           "RUNNING", "PROCESSED", "FAILED", "HEARTBEAT"), rows, right=4)


def print_status(found: Status) -> None:
    print_queues(found.queues)
    say()
    print_workers(found.workers, time.time())
    say()
    say(f"Failed jobs: {'?' if found.failed is None else found.failed}")
    for problem in found.problems:
        say(f"eventbus: warning: {problem}", err=True)


def watch(render: Callable[[], None], interval_s: float, times: int) -> None:
    """Render again every ``interval_s`` in place (the screen is redrawn, not scrolled)."""
    tty = sys.stdout.isatty()
    done = 0
    try:
        while True:
            buffer = io.StringIO()
            with redirect_stdout(buffer):
                render()
            click.echo((CLEAR if tty else "") + buffer.getvalue(), nl=False)
            done += 1
            if times and done >= times:
                return
            if not tty:
                click.echo("")
            time.sleep(interval_s)
    except KeyboardInterrupt:
        return


# -- commands ---------------------------------------------------------------------------------------

@main.command("status")
@click.option("--connection", "connection_names", default="", help="Connections to show (default: all).")
@click.option("--json", "as_json", is_flag=True, help="One JSON document.")
@click.option("--watch", "watching", is_flag=True, help="Refresh in place until Ctrl-C.")
@click.option("--interval", type=float, default=2.0, show_default=True, help="Seconds between refreshes.")
@click.option("--times", type=int, default=0, hidden=True)
@app_option
@click.pass_context
def status_cmd(ctx: click.Context, connection_names: str, as_json: bool, watching: bool,
               interval: float, times: int) -> None:
    """Queues (ready, delayed, reserved, oldest ready job), workers and failed jobs.

    \b
    Examples:
      eventbus status                       every connection workers consume
      eventbus status --watch               refresh every 2 seconds
      eventbus status --json | jq .queues
    """
    setup(ctx)
    names = _connections(connection_names)

    def render() -> None:
        found = status(names)
        if as_json:
            click.echo(json.dumps(found.to_dict()))
        else:
            print_status(found)

    if watching:
        watch(render, interval, times)
    else:
        render()


@main.command("workers")
@click.option("--connection", "connection_names", default="", help="Connections to show (default: all).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per worker.")
@click.option("--watch", "watching", is_flag=True, help="Refresh in place until Ctrl-C.")
@click.option("--interval", type=float, default=2.0, show_default=True)
@click.option("--times", type=int, default=0, hidden=True)
@app_option
@click.pass_context
def workers_cmd(ctx: click.Context, connection_names: str, as_json: bool, watching: bool,
                interval: float, times: int) -> None:
    """Running workers: host, pid, queues, the job each runs, counts, last heartbeat."""
    setup(ctx)
    names = watched_connections(_connections(connection_names))

    def render() -> None:
        found: list[WorkerInfo] = []
        for name in names:
            try:
                found.extend(workers_of(name))
            except EventBusError as exc:
                say(f"eventbus: warning: {name}: {exc}", err=True)
        if as_json:
            for worker in found:
                click.echo(json.dumps(worker.to_dict()))
        else:
            print_workers(found, time.time())

    if watching:
        watch(render, interval, times)
    else:
        render()


def _monitored(spec: str) -> list[QueueStatus]:
    """``connection:queue`` entries (a bare name is a queue of the default connection); none: all."""
    if not spec.strip():
        found: list[QueueStatus] = []
        for name in watched_connections():
            found.extend(queue_statuses(name))
        return found
    picked = []
    for item in _connections(spec):
        conn, _, queue = item.rpartition(":")
        conn = conn or runtime.settings().default
        paused = pausing.paused_queues(runtime.state(conn), conn)
        picked.append(QueueStatus.of(conn, runtime.connection(conn).stats(queue), queue in paused))
    return picked


@main.command("monitor")
@click.argument("queues", metavar="[CONNECTION:QUEUE,...]", default="", required=False)
@click.option("--max", "max_size", type=click.IntRange(min=0), default=1000, show_default=True,
              help="Alert when a queue holds this many jobs or more.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per queue.")
@app_option
@click.pass_context
def monitor(ctx: click.Context, queues: str, max_size: int, as_json: bool) -> None:
    """Alert on busy queues: emit QueueBusy for each queue whose size reaches --max.

    Run it every minute (cron, a scheduler); listen to eventbus.QueueBusy in your app to be told.

    \b
    Examples:
      eventbus monitor --max 100                     every queue of every connection
      eventbus monitor redis:default,redis:mail --max 500 --app shop.app
    """
    setup(ctx)
    rows = _monitored(queues)
    for row in rows:
        if row.size >= max_size:
            bus.emit(QueueBusy(row.connection, row.queue, row.size, max_size))
    if as_json:
        for row in rows:
            click.echo(json.dumps({**row.to_dict(), "status": "ALERT" if row.size >= max_size else "OK",
                                   "max": max_size}))
        return
    table(("QUEUE", "STATUS", "READY", "DELAYED", "RESERVED", "SIZE"),
          [(f"{r.connection}:{r.queue}", "ALERT" if r.size >= max_size else "OK", r.ready, r.delayed,
            r.reserved, r.size) for r in rows], right=4)


@main.command("pause")
@click.argument("queue")
@click.option("--connection", "connection_name", default=None, help="Default: the default connection.")
@app_option
@click.pass_context
def pause(ctx: click.Context, queue: str, connection_name: str | None) -> None:
    """Pause one queue: every worker skips it until `eventbus resume`."""
    setup(ctx)
    name = connection_name or runtime.settings().default
    pausing.pause(runtime.state(name), name, queue)
    say(f"Paused {name}:{queue}; workers skip it within a second.")


@main.command("resume")
@click.argument("queue")
@click.option("--connection", "connection_name", default=None, help="Default: the default connection.")
@app_option
@click.pass_context
def resume(ctx: click.Context, queue: str, connection_name: str | None) -> None:
    """Resume a paused queue."""
    setup(ctx)
    name = connection_name or runtime.settings().default
    was = pausing.resume(runtime.state(name), name, queue)
    say(f"Resumed {name}:{queue}." if was else f"{name}:{queue} was not paused.")


# -- the dashboard ---------------------------------------------------------------------------------

def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def load_callable(spec: str) -> Callable[..., Any]:
    module, _, attr = spec.partition(":")
    try:
        found = getattr(importlib.import_module(module), attr) if attr else None
    except (ImportError, AttributeError) as exc:
        raise ConfigurationError(f"cannot load --authorize {spec!r}: {exc}") from exc
    if not callable(found):
        raise ConfigurationError(f"--authorize {spec!r} must name a callable as MODULE:NAME")
    return found  # type: ignore[no-any-return]


@main.command("dashboard")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=int, default=8000, show_default=True)
@click.option("--token", default=None, help="Require this token (or EVENTBUS_DASHBOARD_TOKEN).")
@click.option("--authorize", "authorize_spec", default=None, metavar="MODULE:CALLABLE",
              help="A callable(request) -> bool that lets a request in.")
@app_option
@click.pass_context
def dashboard(ctx: click.Context, host: str, port: int, token: str | None,
              authorize_spec: str | None) -> None:
    """Serve the dashboard (pip install 'eventbus[dashboard]').

    Bound to 127.0.0.1 it lets in local clients only. Any other address needs --token or
    --authorize: the dashboard can retry, forget and pause.

    \b
    Examples:
      eventbus dashboard --app shop.app                         http://127.0.0.1:8000/
      eventbus dashboard --host 0.0.0.0 --token "$SECRET"       behind your proxy
    """
    setup(ctx)
    token = token or os.environ.get("EVENTBUS_DASHBOARD_TOKEN") or None
    authorize = load_callable(authorize_spec) if authorize_spec else None
    if not is_loopback(host) and token is None and authorize is None:
        raise ConfigurationError(f"refusing to serve the dashboard on {host}: anyone who reaches it "
                                 "could retry and delete jobs; pass --token or --authorize")
    try:
        import uvicorn

        from eventbus.dashboard import create_app
    except ImportError as exc:
        raise MissingDependencyError(f"the dashboard needs {exc.name}: pip install 'eventbus[dashboard]'") from exc
    app = create_app(token=token, authorize=authorize)
    say(f"eventbus dashboard on http://{host}:{port}/ (Ctrl-C to stop)")
    uvicorn.run(app, host=host, port=port, log_level="warning")
