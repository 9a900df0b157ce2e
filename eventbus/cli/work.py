"""``eventbus work``: run queued jobs, in this process or supervised with ``--processes``."""

from __future__ import annotations

import dataclasses
import importlib.util
import logging
import os
import shlex
import sys
from typing import Any

import click

from eventbus import config, runtime
from eventbus.cli.base import app_option, main, say, setup
from eventbus.config import forks_workers
from eventbus.errors import ConfigurationError, EventBusError, MissingDependencyError
from eventbus.monitoring.logformat import FORMATS, JsonFormatter
from eventbus.monitoring.observer import WorkerObserver
from eventbus.queue.drivers import driver_class
from eventbus.worker import DEFAULT_PREFETCH, Worker, WorkerOptions
from eventbus.worker.supervisor import RESTART_EXIT, SUPERVISOR_PID_ENV, Supervisor, Work
from eventbus.worker.timeouts import grace_s


def _floats(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError as exc:
        raise click.BadParameter(f"expected seconds like 5 or 5,30,60, not {text!r}") from exc


@main.command()
@click.argument("connection_name", metavar="[CONNECTION]", required=False)
@click.option("--connection", "connection_option", default=None, metavar="NAME",
              help="The connection to work (the same as the CONNECTION argument).")
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
@click.option("--supervisor", default="", hidden=True,
              help="The eventbus supervise supervisor this worker belongs to.")
@click.option("--processes", type=click.IntRange(min=1), default=1,
              help="Supervise N workers, forked after the app is imported.")
@click.option("--spawn", is_flag=True,
              help="With --processes: start each worker as a fresh interpreter instead of forking "
                   "(or EVENTBUS_WORKER_START=spawn).")
@click.option("--concurrency", type=click.IntRange(min=1), default=1, show_default=True,
              help="Jobs at once in each process: threads for sync jobs, one event loop for async ones.")
@click.option("--prefetch", type=click.IntRange(min=1), default=DEFAULT_PREFETCH, show_default=True,
              help="Most jobs reserved per request (Redis, SQL); fewer for slow jobs. 1: one at a time.")
@click.option("--quiet", "-q", is_flag=True, help="No line per job.")
@click.option("--watch", is_flag=True,
              help="Restart when the app's files change (development; needs eventbus[watch]).")
@click.option("--log-format", type=click.Choice(FORMATS), default="text", show_default=True,
              help="json: one JSON object per line (job lines and log records) on stdout.")
@click.option("--metrics-port", type=click.IntRange(min=0, max=65535), default=None,
              help="Serve Prometheus metrics on this port (pip install 'eventbus[metrics]').")
@click.option("--metrics-host", default="127.0.0.1", show_default=True,
              help="Address for --metrics-port.")
@app_option
@click.pass_context
def work(ctx: click.Context, /, connection_name: str | None, connection_option: str | None, queues: str,
         processes: int, spawn: bool, quiet: bool, watch: bool, log_format: str,
         metrics_port: int | None, metrics_host: str, **opts: Any) -> None:
    """Run queued jobs.

    \b
    Examples:
      eventbus work                                 the default connection's default queue
      eventbus work redis --queue mail,default --tries 3 --backoff 5,30
      eventbus work --stop-when-empty               drain the queue, then exit (tests, cron)
      eventbus work --processes 4                   four supervised worker processes
      eventbus work --processes 4 --spawn           the same, each started afresh (no fork)
      eventbus work --concurrency 50                50 jobs at once (I/O-bound jobs: mail, HTTP)
      eventbus work --watch --app shop.app          restart on code changes (development)
      eventbus work --processes 4 --metrics-port 9191   one /metrics for all four
    """
    connection_name = _one_connection(ctx, connection_name, connection_option)
    setup(ctx, quiet)
    chosen = runtime.settings().connection_config(connection_name)  # an unknown one: one line
    if processes > 1 and not driver_class(chosen["driver"]).shared_between_processes:
        name = connection_name or runtime.settings().default
        raise click.UsageError(f"connection {name!r} keeps its jobs in this process's memory, where "
                               "worker processes cannot see them; run one worker (without "
                               "--processes) in the process that pushes the jobs")
    grace = grace_s()  # a bad EVENTBUS_TIMEOUT_GRACE is a usage error here, not in every child
    if watch:
        ctx.exit(watch_and_restart(ctx))
    if log_format == "json":
        log_as_json(opts["name"])
    if not (ctx.meta.get("eventbus.app") or config.env("EVENTBUS_APP")):
        logging.getLogger("eventbus.worker").warning(
            "no --app given (nor EVENTBUS_APP): this worker imports no app module, so it can only "
            "run jobs whose classes it can import from trusted packages; pass --app YOUR_APP")
    options = WorkerOptions(
        queues=tuple(q.strip() for q in queues.split(",") if q.strip()), name=opts["name"],
        sleep_s=opts["sleep"], tries=opts["tries"], backoff_s=_floats(opts["backoff"]),
        timeout_s=opts["timeout"], memory_mb=opts["memory"], max_jobs=opts["max_jobs"],
        max_time_s=opts["max_time"], rest_s=opts["rest"], force=opts["force"], once=opts["once"],
        stop_when_empty=opts["stop_when_empty"], prefetch=opts["prefetch"],
        concurrency=opts["concurrency"],
        timeout_grace_s=grace,
        supervisor_pid=int(config.env(SUPERVISOR_PID_ENV) or 0), log_format=log_format,
        supervisor=opts["supervisor"])
    if processes > 1:
        ctx.exit(supervise(ctx, processes, connection_name, options, quiet=quiet, spawn=spawn,
                           metrics_port=metrics_port, metrics_host=metrics_host))
    ctx.exit(run_worker(connection_name, options, quiet=quiet, metrics_port=metrics_port,
                        metrics_host=metrics_host))


def run_worker(connection: str | None, options: WorkerOptions, *, quiet: bool,
               metrics_port: int | None = None, metrics_host: str = "127.0.0.1",
               forked: bool = False) -> int:
    """Run the worker in this process; its exit status (a ``forked`` child tells its supervisor
    that it stopped for ``eventbus restart``)."""
    observers, server = _metrics(connection, metrics_port, metrics_host)
    worker = Worker.for_connection(connection, options=options, observers=observers,
                                   output=None if quiet else click.echo)
    try:
        status = worker.run()
    finally:
        if server is not None:
            server.shutdown()
    return RESTART_EXIT if forked and status == 0 and worker.restart_requested else status


def supervise(ctx: click.Context, processes: int, connection: str | None, options: WorkerOptions, *,
              quiet: bool, spawn: bool, metrics_port: int | None, metrics_host: str) -> int:
    """Run ``processes`` workers under a :class:`Supervisor`: forked from this process, which
    imported the app already, or (``--spawn``, ``--metrics-port``) started afresh."""
    argv = _child_argv(ctx)
    stops = options.once or options.stop_when_empty
    if metrics_port is not None:  # its server is a thread of this process: never fork it
        exporter = _prometheus().MultiprocessExporter(metrics_port, metrics_host, connection)
        try:
            return Supervisor(argv, processes, restart=not stops, name=options.name,
                              env=exporter.child_env, on_exit=exporter.child_exited).run()
        finally:
            exporter.close()
    if not forks_workers(spawn):
        return Supervisor(argv, processes, restart=not stops, name=options.name).run()
    runtime.prepare_fork(connection)  # what every child would load before its first job, once
    runtime.close()  # what the app's import connected belongs to this process, not to the children
    return Supervisor(argv, processes, restart=not stops, name=options.name,
                      work=forked_work(connection, options, quiet=quiet)).run()


def forked_work(connection: str | None, options: WorkerOptions, *, quiet: bool) -> Work:
    """What a child forked by a :class:`Supervisor` runs: the worker, under the child's name."""
    def forked_worker(name: str) -> int:
        if options.log_format == "json":
            log_as_json(name)
        child = dataclasses.replace(options, name=name,
                                    supervisor_pid=int(config.env(SUPERVISOR_PID_ENV)))
        try:
            return run_worker(connection, child, quiet=quiet, forked=True)
        except ConfigurationError as exc:  # as the command would say it (EventBusGroup)
            say(f"eventbus: error: {exc}", err=True)
            return 2
        except EventBusError as exc:
            say(f"eventbus: error: {exc}", err=True)
            return 1

    return forked_worker


def _one_connection(ctx: click.Context, argument: str | None, option: str | None) -> str | None:
    """The connection named by the argument or by ``--connection`` (not two different ones)."""
    if argument and option and argument != option:
        raise click.UsageError(f"two connections given: {argument!r} and --connection {option!r}")
    ctx.params["connection_name"], ctx.params["connection_option"] = argument or option, None
    return argument or option


def log_as_json(worker: str) -> None:
    """Every log record as a JSON object on stdout, where the job lines go too."""
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(JsonFormatter(worker=worker))
    logging.getLogger().handlers[:] = [handler]


def _prometheus() -> Any:
    try:
        from eventbus.integrations import prometheus
        prometheus.require()
    except ImportError as exc:  # pragma: no cover - the extra is installed where tests run
        raise MissingDependencyError("--metrics-port needs prometheus_client: "
                                     "pip install 'eventbus[metrics]'") from exc
    return prometheus


def _metrics(connection: str | None, port: int | None, host: str) -> tuple[list[WorkerObserver], Any]:
    """The Prometheus observer (and this process's /metrics server) when metrics are wanted:
    ``--metrics-port`` here, or a supervisor that serves them for its children."""
    if port is None and not config.env("EVENTBUS_METRICS_DIR"):
        return [], None
    prometheus = _prometheus()
    if port is None:  # a supervised child: the supervisor serves what it records
        return [prometheus.PrometheusObserver()], None
    registry = prometheus.worker_registry(connection)
    server = prometheus.serve(registry, port, host)
    return [prometheus.PrometheusObserver(registry)], server


def watch_and_restart(ctx: click.Context) -> int:
    """Run the same command without ``--watch`` and start it again whenever a ``.py`` file of
    the app changes; the worker gets SIGINT, finishes its current job and exits first."""
    try:
        import watchfiles
    except ImportError:
        raise ConfigurationError("--watch needs watchfiles: pip install 'eventbus[watch]'") from None
    argv = [sys.executable, "-m", "eventbus", *_child_argv(ctx, drop=("watch",))]
    root = watched_directory(ctx.meta.get("eventbus.app") or config.env("EVENTBUS_APP"))
    log = logging.getLogger("eventbus.worker")
    log.info("watching %s for changes", root)
    watchfiles.run_process(root, target=" ".join(shlex.quote(a) for a in argv), target_type="command",
                           watch_filter=watchfiles.PythonFilter(),
                           callback=lambda changes: log.info("%d file(s) changed; restarting",
                                                             len(changes)))
    return 0


def watched_directory(app: str | None) -> str:
    """The directory of the app's top package (the working directory without an app)."""
    if not app:
        return os.getcwd()
    spec = importlib.util.find_spec(app.split(".")[0])
    locations = list(spec.submodule_search_locations or []) if spec else []
    if locations:
        return str(locations[0])
    if spec is not None and spec.origin:
        return os.path.dirname(spec.origin)
    return os.getcwd()


def _child_argv(ctx: click.Context, drop: tuple[str, ...] = ("processes", "spawn", "name", "watch",
                                                           "metrics_port", "metrics_host")) -> list[str]:
    """The same ``work`` command without the ``drop`` options (by default ``--processes`` and
    ``--name``: each supervised child gets its own name)."""
    argv = ["work"]
    app = ctx.meta.get("eventbus.app")
    if app:
        argv += ["--app", app]
    for key, value in ctx.params.items():
        if key in drop or value in (None, False, "") or (key == "processes" and value == 1):
            continue
        if key == "connection_name":
            argv.insert(1, value)
            continue
        flag = "--queue" if key == "queues" else "--" + key.replace("_", "-")
        argv += [flag] if value is True else [flag, str(value)]
    return argv
