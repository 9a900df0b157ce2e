"""``eventbus work``: run queued jobs, in this process or supervised with ``--processes``."""

from __future__ import annotations

import logging
import os
from typing import Any

import click

from eventbus.cli.base import app_option, main, setup
from eventbus.supervisor import SUPERVISOR_PID_ENV, Supervisor
from eventbus.worker import Worker, WorkerOptions


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
    setup(ctx, quiet)
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
