"""The ``eventbus`` command: a thin shell over the library.

Exit codes: 0 ok, 1 runtime error (a server cannot be reached, a job not found), 2 usage or
configuration error, 12 worker memory limit. Errors are one line on stderr, never a traceback.
"""

from __future__ import annotations

import datetime as dt
import importlib
import json
import logging
import os
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

from importlib.metadata import entry_points

import click

from eventbus import control, registry, runtime
from eventbus.display import printable
from eventbus.errors import ConfigurationError, EventBusError
from eventbus.event_bus import bus
from eventbus.runtime import connection
from eventbus.supervisor import SUPERVISOR_PID_ENV, Supervisor
from eventbus.worker import Worker, WorkerOptions

F = TypeVar("F", bound=Callable[..., Any])


def say(text: object = "", *, err: bool = False) -> None:
    """Print one line; text from payloads (names, queues, messages) never reaches the terminal raw."""
    click.echo(printable(text), err=err)


class PrintableFormatter(logging.Formatter):
    """Log lines with control characters escaped (tracebacks keep their line breaks)."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record), keep_newlines=True)


def load_app(module: str | None) -> None:
    """Import the app module (so its configure() and listeners apply) and trust its package."""
    module = module or os.environ.get("EVENTBUS_APP")
    if not module:
        return
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    registry.trust(module.split(".")[0])
    try:
        importlib.import_module(module)
    except ImportError as exc:
        raise ConfigurationError(f"cannot import app module {module!r}: {exc}") from exc


def _app_callback(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value:
        ctx.meta["eventbus.app"] = value  # meta is shared by every context of one invocation
    return value


def app_option(fn: F) -> F:
    """``--app`` on every subcommand too, so it may come before or after the subcommand."""
    return click.option("--app", "app", metavar="MODULE", expose_value=False, is_eager=True,
                        callback=_app_callback, help="Module to import first (or EVENTBUS_APP).")(fn)


class EventBusGroup(click.Group):
    """Turns eventbus errors into one line on stderr and the documented exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ConfigurationError as exc:
            say(f"eventbus: error: {exc}", err=True)
            ctx.exit(2)
        except EventBusError as exc:
            say(f"eventbus: error: {exc}", err=True)
            ctx.exit(1)


def _setup(ctx: click.Context, quiet: bool = False) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(PrintableFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.WARNING if quiet else logging.INFO, handlers=[handler])
    load_app(ctx.meta.get("eventbus.app"))


@click.group(cls=EventBusGroup, context_settings={"help_option_names": ["-h", "--help"]})
@app_option
@click.version_option(package_name="eventbus")
def main() -> None:
    """Events, queued listeners, jobs and notifications.

    \b
    Examples:
      eventbus work --app shop.app                  run queued jobs (SQLite by default)
      eventbus work redis --queue high,default      a Redis worker, high before default
      eventbus failed                               list failed jobs
      eventbus retry all                            push every failed job back
    """


# -- work -------------------------------------------------------------------------------------

def _floats(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError as exc:
        raise click.BadParameter(f"expected seconds like 5 or 5,30,60, not {text!r}") from exc


@main.command()
@click.argument("connection_name", metavar="[CONNECTION]", required=False)
@click.option("--queue", "queues", default="", help="Queues in priority order: high,default.")
@click.option("--once", is_flag=True, help="Process one job, then exit.")
@click.option("--stop-when-empty", is_flag=True, help="Exit when no job is ready.")
@click.option("--sleep", type=float, default=3.0, show_default=True, help="Seconds to wait when idle.")
@click.option("--tries", type=int, default=1, show_default=True, help="Attempts (0 = unlimited).")
@click.option("--backoff", default="0", show_default=True, help="Seconds before a retry: 5 or 5,30,60.")
@click.option("--timeout", type=float, default=60.0, show_default=True, help="Seconds per attempt.")
@click.option("--memory", type=float, default=128.0, show_default=True, help="MB before exiting (12).")
@click.option("--max-jobs", type=int, default=0, help="Exit after this many jobs.")
@click.option("--max-time", type=float, default=0.0, help="Exit after this many seconds.")
@click.option("--rest", type=float, default=0.0, help="Seconds to rest between jobs.")
@click.option("--force", is_flag=True, help="Take jobs even in maintenance mode (eventbus down).")
@click.option("--name", default="default", help="Worker name.")
@click.option("--processes", type=click.IntRange(min=1), default=1, help="Supervise N workers.")
@click.option("--quiet", "-q", is_flag=True, help="No line per job.")
@app_option
@click.pass_context
def work(ctx: click.Context, /, connection_name: str | None, queues: str, processes: int,
         quiet: bool, **opts: Any) -> None:
    """Run queued jobs.

    \b
    Examples:
      eventbus work                                 the default connection's default queue
      eventbus work redis --queue mail,default --tries 3 --backoff 5,30
      eventbus work --stop-when-empty               drain the queue, then exit (tests, cron)
      eventbus work --processes 4                   four supervised worker processes
    """
    _setup(ctx, quiet)
    if not (ctx.meta.get("eventbus.app") or os.environ.get("EVENTBUS_APP")):
        logging.getLogger("eventbus.worker").warning(
            "no --app given (nor EVENTBUS_APP): this worker imports no app module, so it can only "
            "run jobs whose classes it can import from trusted packages; pass --app YOUR_APP")
    if processes > 1:
        argv = _child_argv(ctx)
        stops = opts["once"] or opts["stop_when_empty"]
        ctx.exit(Supervisor(argv, processes, restart=not stops, name=opts["name"]).run())
    options = WorkerOptions(
        queues=tuple(q.strip() for q in queues.split(",") if q.strip()), name=opts["name"],
        sleep_s=opts["sleep"], tries=opts["tries"], backoff_s=_floats(opts["backoff"]),
        timeout_s=opts["timeout"], memory_mb=opts["memory"], max_jobs=opts["max_jobs"],
        max_time_s=opts["max_time"], rest_s=opts["rest"], force=opts["force"], once=opts["once"],
        stop_when_empty=opts["stop_when_empty"],
        timeout_grace_s=float(os.environ.get("EVENTBUS_TIMEOUT_GRACE", "5")),
        supervisor_pid=int(os.environ.get(SUPERVISOR_PID_ENV) or 0))
    worker = Worker.for_connection(connection_name, options=options,
                                   output=None if quiet else click.echo)
    ctx.exit(worker.run())


def _child_argv(ctx: click.Context) -> list[str]:
    """The same ``work`` command without ``--processes`` and ``--name`` (each child gets its own)."""
    argv = ["work"]
    app = ctx.meta.get("eventbus.app")
    if app:
        argv += ["--app", app]
    for key, value in ctx.params.items():
        if key in ("processes", "name") or value in (None, False, ""):
            continue
        if key == "connection_name":
            argv.insert(1, value)
            continue
        flag = "--queue" if key == "queues" else "--" + key.replace("_", "-")
        argv += [flag] if value is True else [flag, str(value)]
    return argv


# -- failed jobs ------------------------------------------------------------------------------

def _store() -> Any:
    return runtime.failed_store()


@main.command("failed")
@app_option
@click.pass_context
def failed_cmd(ctx: click.Context) -> None:
    """List failed jobs: uuid, connection, queue, job, failed at, exception."""
    _setup(ctx)
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
    _setup(ctx)
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
    _setup(ctx)
    control.forget(uuid)
    say(f"Forgot failed job {uuid}.")


@main.command()
@app_option
@click.pass_context
def flush(ctx: click.Context) -> None:
    """Delete every failed job record."""
    _setup(ctx)
    say(f"Deleted {control.flush()} failed jobs.")


@main.command("prune-failed")
@click.option("--hours", type=float, default=24.0, show_default=True, help="Keep records newer than this.")
@app_option
@click.pass_context
def prune_failed(ctx: click.Context, hours: float) -> None:
    """Delete failed job records older than --hours."""
    _setup(ctx)
    say(f"Deleted {control.flush(older_than_s=hours * 3600)} failed jobs.")


# -- queues -----------------------------------------------------------------------------------

def _queue_names(q: Any, queues: str) -> list[str]:
    return [x.strip() for x in queues.split(",") if x.strip()] or [q.default_queue]


@main.command()
@click.argument("connection_name", metavar="[CONNECTION]", required=False)
@click.option("--queue", "queues", default="", help="Queues to clear (default: the default queue).")
@app_option
@click.pass_context
def clear(ctx: click.Context, connection_name: str | None, queues: str) -> None:
    """Delete ready and delayed jobs from queues."""
    _setup(ctx)
    q = connection(connection_name)
    for name in _queue_names(q, queues):
        say(f"Cleared {q.clear(name)} jobs from {q.connection_name}:{name}.")


def _table(header: tuple[str, ...], rows: list[tuple[object, ...]], *, right: int = 1) -> None:
    """Columns padded to their widest cell; the last ``right`` columns right-aligned (numbers)."""
    cells = [[printable(c) for c in row] for row in [header, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    split = len(header) - right
    for row in cells:
        left = [c.ljust(w) for c, w in zip(row[:split], widths[:split])]
        nums = [c.rjust(w) for c, w in zip(row[split:], widths[split:])]
        click.echo("  ".join(left + nums).rstrip())


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
    _setup(ctx)
    q = connection(connection_name)
    names = [x.strip() for x in queues.split(",") if x.strip()] or q.queues() or [q.default_queue]
    stats = [q.stats(name) for name in names]
    if as_json:
        for item in stats:
            click.echo(json.dumps({"connection": q.connection_name, **item.to_dict()}))
        return
    _table(("QUEUE", "READY", "DELAYED", "RESERVED", "SIZE"),
           [(f"{q.connection_name}:{s.queue}", s.ready, s.delayed, s.reserved, s.size) for s in stats],
           right=4)


main.add_command(size, "monitor")


@main.command()
@click.argument("connection_name", metavar="[CONNECTION]", required=False)
@click.option("--queue", default=None, help="Queue to look at.")
@click.option("--limit", type=int, default=10, show_default=True)
@app_option
@click.pass_context
def peek(ctx: click.Context, connection_name: str | None, queue: str | None, limit: int) -> None:
    """Print the raw payloads of the oldest ready jobs, without reserving them."""
    _setup(ctx)
    for raw in connection(connection_name).peek(queue, limit):
        say(raw)


def _told(result: tuple[list[str], list[str]]) -> str:
    told, warnings = result
    for warning in warnings:
        say(f"eventbus: warning: {warning}", err=True)
    return ", ".join(told)


@main.command()
@app_option
@click.pass_context
def restart(ctx: click.Context) -> None:
    """Make every worker exit after its current job (their supervisor starts fresh ones)."""
    _setup(ctx)
    say(f"Told workers on {_told(control.restart())} to restart after their current job.")


@main.command()
@app_option
@click.pass_context
def down(ctx: click.Context) -> None:
    """Maintenance mode: workers finish their job and take no new ones (except with --force)."""
    _setup(ctx)
    say(f"Workers on {_told(control.down())} are paused until `eventbus up`.")


@main.command()
@app_option
@click.pass_context
def up(ctx: click.Context) -> None:
    """Leave maintenance mode."""
    _setup(ctx)
    say(f"Workers on {_told(control.up())} take jobs again.")


@main.command()
@app_option
@click.pass_context
def migrate(ctx: click.Context) -> None:
    """Create the database tables (jobs, failed_jobs, notifications) if missing."""
    _setup(ctx)
    for line in runtime.migrate():
        say(line)


@main.command()
@app_option
@click.pass_context
def events(ctx: click.Context) -> None:
    """List every event with its listeners, in the order they run."""
    _setup(ctx)
    listening = bus.listening()
    if not listening:
        say("No listeners registered (pass --app to load your app).")
    for name, regs in listening.items():
        say(name)
        for reg in regs:
            say(f"  -> {reg.describe()}")


def load_commands() -> None:
    """Add the commands that add-ons contribute through the ``eventbus.commands`` entry points."""
    for entry in entry_points(group="eventbus.commands"):
        if entry.name in main.commands:
            continue
        try:
            command = entry.load()
        except (ImportError, AttributeError) as exc:
            logging.getLogger(__name__).warning("cannot load eventbus command %r: %s", entry.name, exc)
            continue
        if isinstance(command, click.Command):
            main.add_command(command, entry.name)



def run() -> None:
    """The console script: ``main`` with the add-ons' commands."""
    load_commands()
    main()
