"""Supervisors: ``supervise`` (with ``pause`` and ``continue``), ``supervisors``, ``terminate``."""

from __future__ import annotations

import json
import time
from typing import Any

import click

from eventbus import config, runtime
from eventbus.cli.base import app_option, main, say, setup, table
from eventbus.cli.work import forked_work
from eventbus.config import forks_workers
from eventbus.errors import ConfigurationError
from eventbus.monitoring.humanize import duration
from eventbus.supervising import commands
from eventbus.supervising.master import Master
from eventbus.supervising.options import SupervisorOptions
from eventbus.supervising.state import SupervisorState
from eventbus.worker import WorkerOptions
from eventbus.worker.supervisor import Supervisor
from eventbus.worker.timeouts import grace_s


def config_option(fn: Any) -> Any:
    return click.option("--config", "config_file", type=click.Path(dir_okay=False), default=None,
                        metavar="FILE", help="A TOML file of [supervisors.NAME] tables (they win over "
                        "configure(supervisors=...) by name).")(fn)


@main.group(invoke_without_command=True)
@config_option
@click.option("--quiet", "-q", is_flag=True, help="No line per job.")
@app_option
@click.pass_context
def supervise(ctx: click.Context, config_file: str | None, quiet: bool) -> None:
    """Run every supervisor under one master process (Horizon's ``horizon``).

    Supervisors come from configure(supervisors={...}) in the app and from --config. Each runs
    its workers on its queues, balanced as it says (auto, simple or false). SIGTERM, SIGINT or
    `eventbus terminate`: every worker finishes its job in hand, then the master exits 0.

    \b
    Examples:
      eventbus supervise --app shop.app                 every supervisor the app configures
      eventbus supervise --config supervisors.toml --app shop.app
      eventbus supervise pause                          pause every supervisor
      eventbus supervise pause mail                     pause one
      eventbus supervise continue mail
    """
    if ctx.invoked_subcommand is not None:
        return
    setup(ctx, quiet)
    supervisors = commands.declared(config_file)
    if not supervisors:
        raise ConfigurationError("no supervisor to run: declare them with configure(supervisors={...}) "
                                 "in the app (--app) or in a TOML file (--config)")
    grace = grace_s()
    forking = forks_workers()
    app = ctx.meta.get("eventbus.app") or config.env("EVENTBUS_APP")

    def pool(options: SupervisorOptions, queues: tuple[str, ...], processes: int) -> Supervisor:
        name = options.name if options.balance is False else f"{options.name}:{queues[0]}"
        worker = WorkerOptions(queues=queues, name=name, sleep_s=options.sleep, tries=options.tries,
                               timeout_s=options.timeout, memory_mb=options.memory,
                               concurrency=options.concurrency, timeout_grace_s=grace,
                               supervisor=options.name)
        work = forked_work(options.connection, worker, quiet=quiet) if forking else None
        return Supervisor(worker_argv(options, queues, app, quiet), processes, name=name, work=work)

    if forking:  # what every child would load before its first job, loaded once here
        for connection in {s.connection for s in supervisors.values()}:
            runtime.prepare_fork(connection)
    runtime.close()  # what the app's import connected belongs to this process, not to the children
    ctx.exit(Master(list(supervisors.values()), pool).run())


def worker_argv(options: SupervisorOptions, queues: tuple[str, ...], app: str | None,
                quiet: bool) -> list[str]:
    """The ``eventbus work`` command of one of the supervisor's workers started afresh
    (``EVENTBUS_WORKER_START=spawn``, or after ``eventbus restart``)."""
    argv = ["work", options.connection, "--queue", ",".join(queues), "--sleep", repr(options.sleep),
            "--tries", str(options.tries), "--timeout", repr(options.timeout), "--memory",
            repr(options.memory), "--concurrency", str(options.concurrency), "--supervisor", options.name]
    return [*argv, *(["--app", app] if app else []), *(["--quiet"] if quiet else [])]


def _pausing(ctx: click.Context, name: str | None, *, pause: bool) -> None:
    setup(ctx)
    declared = commands.declared(ctx.parent.params.get("config_file") if ctx.parent else None)
    pairs = commands.targets(name, declared, commands.connections_of(declared.values()))
    if not pairs:
        say("No supervisor is declared or running: nothing to do.")
        return
    if pause:
        done = commands.pause(pairs)
        say(f"Paused {', '.join(done)}: their workers finish their job and take no other.")
        return
    done = commands.resume(pairs)
    say(f"Continued {', '.join(done)}." if done else "No supervisor was paused.")


@supervise.command("pause")
@click.argument("name", required=False)
@app_option
@click.pass_context
def pause_cmd(ctx: click.Context, name: str | None) -> None:
    """Pause every supervisor, or the one named: workers finish their job and wait."""
    _pausing(ctx, name, pause=True)


@supervise.command("continue")
@click.argument("name", required=False)
@app_option
@click.pass_context
def continue_cmd(ctx: click.Context, name: str | None) -> None:
    """Continue every paused supervisor, or the one named."""
    _pausing(ctx, name, pause=False)


def print_supervisors(found: list[SupervisorState], now: float) -> None:
    if not found:
        say("No supervisors running.")
        return
    rows: list[tuple[object, ...]] = [
        (s.name, s.master, s.connection, ",".join(f"{q}={n}" for q, n in s.processes.items()),
         "false" if s.balance is False else s.balance, s.status, f"{s.min_processes}-{s.max_processes}",
         s.total_processes, f"{duration(max(now - s.last_heartbeat, 0))} ago") for s in found]
    table(("SUPERVISOR", "MASTER", "CONNECTION", "QUEUES", "BALANCE", "STATUS", "MIN-MAX", "PROCESSES",
           "HEARTBEAT"), rows, right=2)


@main.command("supervisors")
@config_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object per supervisor.")
@app_option
@click.pass_context
def supervisors_cmd(ctx: click.Context, config_file: str | None, as_json: bool) -> None:
    """Running supervisors: their master, queues, process counts and status."""
    setup(ctx)
    declared = commands.declared(config_file)
    found = commands.running(commands.connections_of(declared.values()))
    for problem in found.problems:
        say(f"eventbus: warning: {problem}", err=True)
    if as_json:
        for state in found.supervisors:
            click.echo(json.dumps(state.to_dict()))
    else:
        print_supervisors(found.supervisors, time.time())


@main.command("terminate")
@config_option
@app_option
@click.pass_context
def terminate(ctx: click.Context, config_file: str | None) -> None:
    """Make every `eventbus supervise` master finish the jobs in hand and exit 0 (deploys: the
    process manager starts it again, with the new code)."""
    setup(ctx)
    declared = commands.declared(config_file)
    told = commands.terminate(commands.connections_of(declared.values()))
    say(f"Told the supervisors on {', '.join(told)} to finish their jobs and exit.")
