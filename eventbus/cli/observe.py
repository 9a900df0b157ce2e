"""Watching queues and workers: ``status``, ``workers``, ``monitor``, ``pause``/``resume`` and
``dashboard``."""

from __future__ import annotations

import importlib
import io
import ipaddress
import json
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import redirect_stdout
from typing import Any

import click

from eventbus import config, runtime
from eventbus.cli.base import app_option, main, say, setup, table
from eventbus.errors import ConfigurationError, EventBusError, MissingDependencyError
from eventbus.event_bus import bus
from eventbus.events import QueueBusy
from eventbus.monitoring.alerts import AlertEvent, Waits, long_waits, send_alerts
from eventbus.monitoring import pausing
from eventbus.monitoring.history import take_snapshots
from eventbus.monitoring.humanize import clock, duration
from eventbus.monitoring.registry import WorkerInfo
from eventbus.monitoring.status import (
    HEALTHY,
    NEEDS_ATTENTION,
    UNREACHABLE,
    QueueStatus,
    Status,
    queue_statuses,
    status,
    workers_of,
)
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


def print_status(found: Status, alerts: list[str]) -> None:
    print_queues(found.queues)
    say()
    print_workers(found.workers, time.time())
    say()
    say(f"Failed jobs: {'?' if found.failed is None else found.failed}")
    for problem in found.problems:
        say(f"eventbus: error: {problem}", err=True)
    for alert in alerts:
        say(f"eventbus: alert: {alert}", err=True)


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
@click.option("--max", "max_size", type=click.IntRange(min=1), default=None,
              help="A queue holding this many jobs or more makes the exit code 1.")
@click.option("--min-workers", type=click.IntRange(min=0), default=0, show_default=True,
              help="Fewer live workers than this on a connection makes the exit code 1.")
@click.option("--json", "as_json", is_flag=True, help="One JSON document.")
@click.option("--watch", "watching", is_flag=True, help="Refresh in place until Ctrl-C.")
@click.option("--interval", type=float, default=2.0, show_default=True, help="Seconds between refreshes.")
@click.option("--times", type=int, default=0, hidden=True)
@app_option
@click.pass_context
def status_cmd(ctx: click.Context, connection_names: str, max_size: int | None, min_workers: int,
               as_json: bool, watching: bool, interval: float, times: int) -> None:
    """Queues (ready, delayed, reserved, oldest ready job), workers and failed jobs.

    Exit code, for health checks: 0 healthy, 1 a queue at --max or a connection with fewer
    than --min-workers workers, 2 a queue server or the failed job store unreachable.

    \b
    Examples:
      eventbus status                               every connection workers consume
      eventbus status --max 1000 --min-workers 2    a health check (exit 0, 1 or 2)
      eventbus status --watch                       refresh every 2 seconds
      eventbus status --json | jq .queues
    """
    setup(ctx)
    names = _connections(connection_names)
    code = 0

    def render() -> None:
        nonlocal code
        found = status(names)
        alerts = found.alerts(max_size=max_size, min_workers=min_workers)
        code = found.exit_code(max_size=max_size, min_workers=min_workers)
        if as_json:
            click.echo(json.dumps({**found.to_dict(), "alerts": alerts, "exit_code": code}))
        else:
            print_status(found, alerts)

    if watching:
        watch(render, interval, times)
    else:
        render()
    ctx.exit(code)


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
@click.option("--max-wait", "max_wait_s", type=click.FloatRange(min=0, min_open=True), default=None,
              metavar="SECONDS", help="Alert when a queue's oldest ready job has waited longer "
              "(every queue; configure(waits=...) sets limits per queue).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per queue.")
@app_option
@click.pass_context
def monitor(ctx: click.Context, queues: str, max_size: int, max_wait_s: float | None,
            as_json: bool) -> None:
    """Alert on busy queues and long waits: emit QueueBusy for each queue whose size reaches
    --max, LongWaitDetected for each whose oldest ready job waited longer than its limit
    (--max-wait, or its entry in configure(waits=...)).

    Run it every minute (cron, a scheduler): it also takes the metrics snapshots that the
    dashboard's 24 h and 7 d ranges show. Listen to eventbus.QueueBusy and
    eventbus.LongWaitDetected in your app, or configure(alerts={"mail": ..., "slack": ...}) to
    have them sent (at most once per queue and kind every alert_cooldown seconds).
    Exit code: 0 nothing fired, 1 at least one alert (its event was emitted), 2 a queue server
    could not be reached.

    \b
    Examples:
      eventbus monitor --max 100                     every queue of every connection
      eventbus monitor --max-wait 60 --app shop.app  exit 1 when a job waited over a minute
      eventbus monitor redis:default,redis:mail --max 500 --app shop.app
    """
    setup(ctx)
    try:
        rows = _monitored(queues)
        waits = long_waits(((row.connection, row.queue) for row in rows), max_wait_s)
    except ConfigurationError:
        raise
    except EventBusError as exc:
        say(f"eventbus: error: {exc}", err=True)
        ctx.exit(UNREACHABLE)
    for name in waits.untold:
        say(f"eventbus: warning: connection {name} cannot tell how long its jobs wait "
            f"({runtime.settings().connections[name]['driver']} driver): no long-wait alerts for it",
            err=True)
    busy = [QueueBusy(row.connection, row.queue, row.size, max_size) for row in rows if row.size >= max_size]
    fired: list[AlertEvent] = [*busy, *waits.events]
    for event in fired:
        bus.emit(event)
    print_monitored(rows, waits, max_size, {(e.connection_name, e.queue) for e in fired}, as_json)
    for delivery in send_alerts(fired):
        say(f"eventbus: {delivery.describe()}", err=True)
    for problem in take_snapshots(sorted({row.connection for row in rows})):
        say(f"eventbus: warning: {problem}", err=True)
    ctx.exit(NEEDS_ATTENTION if fired else HEALTHY)


def print_monitored(rows: list[QueueStatus], waits: Waits, max_size: int,
                    alerting: set[tuple[str, str]], as_json: bool) -> None:
    """The monitor's table (WAITED and LIMIT columns when a wait limit applies; ``?``: the driver
    cannot tell), or a JSON line per queue."""
    def status_of(row: QueueStatus) -> str:
        return "ALERT" if (row.connection, row.queue) in alerting else "OK"

    if as_json:
        for row in rows:
            where = (row.connection, row.queue)
            extra = ({"waited_s": waits.waited_s.get(where), "max_wait_s": waits.limits_s[where]}
                     if where in waits.limits_s else {})
            click.echo(json.dumps({**row.to_dict(), "status": status_of(row), "max": max_size, **extra}))
        return
    header: tuple[str, ...] = ("QUEUE", "STATUS", "READY", "DELAYED", "RESERVED", "SIZE")
    with_wait = bool(waits.limits_s)
    rows_out = []
    for r in rows:
        cells: tuple[object, ...] = (f"{r.connection}:{r.queue}", status_of(r), r.ready, r.delayed,
                                     r.reserved, r.size)
        if with_wait:
            where = (r.connection, r.queue)
            limit = waits.limits_s.get(where)
            waited = duration(waits.waited_s.get(where)) if where in waits.waited_s else "?"
            cells = (*cells, waited, duration(limit)) if limit is not None else (*cells, "-", "-")
        rows_out.append(cells)
    table((*header, "WAITED", "LIMIT") if with_wait else header, rows_out, right=6 if with_wait else 4)


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
@click.option("--token-file", type=click.Path(dir_okay=False), default=None,
              help="Require the token this file holds (or set EVENTBUS_DASHBOARD_TOKEN).")
@click.option("--token", default=None, help="Require this token (visible in ps: prefer --token-file "
              "or EVENTBUS_DASHBOARD_TOKEN).")
@click.option("--authorize", "authorize_spec", default=None, metavar="MODULE:CALLABLE",
              help="A callable(request) -> bool that lets a request in.")
@click.option("--allowed-host", "allowed_hosts", multiple=True, metavar="NAME",
              help="A Host name to answer besides the loopback names and --host (repeat it; "
                   "*.example.com for subdomains; or EVENTBUS_DASHBOARD_ALLOWED_HOSTS, comma-separated).")
@app_option
@click.pass_context
def dashboard(ctx: click.Context, host: str, port: int, token_file: str | None, token: str | None,
              authorize_spec: str | None, allowed_hosts: tuple[str, ...]) -> None:
    """Serve the dashboard (pip install 'eventbus[dashboard]').

    Bound to 127.0.0.1 it lets in local clients only. Any other address needs a token or
    --authorize: the dashboard can retry, forget and pause. It answers only requests whose Host
    is a loopback name, the --host address or an --allowed-host.

    \b
    Examples:
      eventbus dashboard --app shop.app                         http://127.0.0.1:8000/
      EVENTBUS_DASHBOARD_TOKEN=... eventbus dashboard --host 0.0.0.0 --allowed-host ops.example.com
      eventbus dashboard --host 10.0.0.5 --token-file /run/secrets/dashboard
    """
    setup(ctx)
    token = dashboard_token(token, token_file)
    authorize = load_callable(authorize_spec) if authorize_spec else None
    if not is_loopback(host) and token is None and authorize is None:
        raise ConfigurationError(f"refusing to serve the dashboard on {host}: anyone who reaches it "
                                 "could retry and delete jobs; pass --token-file, "
                                 "EVENTBUS_DASHBOARD_TOKEN or --authorize")
    try:
        import uvicorn

        from eventbus.dashboard import create_app
        from eventbus.dashboard.security import LOOPBACK_HOSTS
    except ImportError as exc:
        raise MissingDependencyError(f"the dashboard needs {exc.name}: pip install 'eventbus[dashboard]'") from exc
    hosts = dashboard_hosts(LOOPBACK_HOSTS, host, allowed_hosts)
    try:
        app = create_app(token=token, authorize=authorize, allowed_hosts=hosts)
    except ValueError as exc:
        raise ConfigurationError(f"--allowed-host: {exc}") from None
    say(f"eventbus dashboard on http://{host}:{port}/ for Host {', '.join(hosts)} (Ctrl-C to stop)")
    uvicorn.run(app, host=host, port=port, log_level="warning")


TOKEN_ENV = "EVENTBUS_DASHBOARD_TOKEN"
HOSTS_ENV = "EVENTBUS_DASHBOARD_ALLOWED_HOSTS"


def dashboard_token(given: str | None, path: str | None) -> str | None:
    """The token from --token-file, --token or the environment (one of them at most)."""
    if given is not None and path is not None:
        raise ConfigurationError("give the dashboard token once: --token-file or --token, not both")
    if path is not None:
        try:
            with open(path, encoding="utf-8") as file:
                token = file.read().strip()
        except (OSError, UnicodeError) as exc:
            raise ConfigurationError(f"cannot read --token-file {path!r}: "
                                     f"{getattr(exc, 'strerror', None) or exc}") from None
        if not token:
            raise ConfigurationError(f"--token-file {path!r} is empty")
        return token
    if given is not None:
        say("eventbus: warning: --token is visible to every user of this machine (ps); "
            f"use --token-file or {TOKEN_ENV}", err=True)
    return given or config.env(TOKEN_ENV) or None


def dashboard_hosts(loopback: Sequence[str], bind: str, extra: Sequence[str]) -> list[str]:
    """The Host names the dashboard answers: the loopback names, the bind address (unless it is a
    wildcard), --allowed-host and EVENTBUS_DASHBOARD_ALLOWED_HOSTS."""
    from_env = [name.strip() for name in config.env(HOSTS_ENV).split(",") if name.strip()]
    names = list(loopback)
    if bind not in ("0.0.0.0", "::", ""):
        names.append(bind)
    for name in (*extra, *from_env):
        if name.lower() not in names:
            names.append(name.lower())
    return names
