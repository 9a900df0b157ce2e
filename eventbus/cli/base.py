"""The ``eventbus`` command group and what every command shares: ``--app``, errors, output.

Exit codes: 0 ok, 1 runtime error (a server cannot be reached, a job not found), 2 usage or
configuration error, 12 worker memory limit. Errors are one line on stderr, never a traceback.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from eventbus import __version__, config, registry
from eventbus.cli.shadowing import refuse_shadowed_packages
from eventbus.errors import ConfigurationError, EventBusError
from eventbus.monitoring.display import printable

F = TypeVar("F", bound=Callable[..., Any])


def say(text: object = "", *, err: bool = False) -> None:
    """Print one line; text from payloads (names, queues, messages) never reaches the terminal raw."""
    click.echo(printable(text), err=err)


class PrintableFormatter(logging.Formatter):
    """Log lines with control characters escaped (tracebacks keep their line breaks)."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record), keep_newlines=True)


def load_app(module: str | None) -> None:
    """Import the app module (so its configure() and listeners apply) and trust its package.

    The working directory is searched for it last, after the installed packages: a stray
    module there (``shop.py`` in a shared directory) never shadows the app package ``shop``.
    """
    if os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())
    refuse_shadowed_packages()
    module = module or config.env("EVENTBUS_APP")
    if not module:
        return
    package = module.split(".")[0]
    if package != "eventbus":  # an integration's boot module trusts the app it loads itself
        registry.trust(package)
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


#: Each built-in command and the module of ``eventbus.cli`` that defines it. A command's module
#: is imported when the command is called (``--help`` imports them all), so that ``eventbus
#: work`` starts without the scheduler, the dashboard or the add-ons' entry points.
#: ``tests/test_cli.py`` checks the table against the modules.
BUILT_IN_COMMANDS = {
    "batches": "batches", "retry-batch": "batches", "prune-batches": "batches",
    "failed": "failed", "retry": "failed", "forget": "failed", "flush": "failed", "cancel": "failed",
    "prune-failed": "failed",
    "job": "jobs", "jobs": "jobs",
    "status": "observe", "workers": "observe", "monitor": "observe", "pause": "observe",
    "resume": "observe", "dashboard": "observe",
    "size": "queues", "peek": "queues", "clear": "queues", "migrate": "queues", "events": "queues",
    "schedule": "schedule",
    "supervise": "supervise", "supervisors": "supervise", "terminate": "supervise",
    "tags": "tags",
    "work": "work",
    "restart": "workers", "down": "workers", "up": "workers",
}
#: The entry-point group through which add-ons contribute commands.
COMMAND_ENTRY_POINTS = "eventbus.commands"


def load_commands(group: click.Group | None = None) -> None:
    """Add the commands that add-ons contribute through the ``eventbus.commands`` entry points
    (a built-in name always stays the built-in command)."""
    from importlib.metadata import entry_points

    group = group or main
    for entry in entry_points(group=COMMAND_ENTRY_POINTS):
        if entry.name in group.commands or entry.name in BUILT_IN_COMMANDS:
            continue
        try:
            command = entry.load()
        except (ImportError, AttributeError) as exc:
            logging.getLogger(__name__).warning("cannot load eventbus command %r: %s", entry.name, exc)
            continue
        if isinstance(command, click.Command):
            group.add_command(command, entry.name)


class EventBusGroup(click.Group):
    """Turns eventbus errors into one line on stderr and the documented exit code, and imports a
    command's module when the command is first asked for (:data:`BUILT_IN_COMMANDS`)."""

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands:
            module = BUILT_IN_COMMANDS.get(cmd_name)
            if module is not None:
                importlib.import_module(f"eventbus.cli.{module}")
            else:
                load_commands(self)
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        for module in sorted(set(BUILT_IN_COMMANDS.values())):
            importlib.import_module(f"eventbus.cli.{module}")
        load_commands(self)
        return super().list_commands(ctx)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except ConfigurationError as exc:
            say(f"eventbus: error: {exc}", err=True)
            ctx.exit(2)
        except EventBusError as exc:
            say(f"eventbus: error: {exc}", err=True)
            ctx.exit(1)


#: HTTP clients that log every request at INFO.
QUIET_LOGGERS = ("httpx", "httpcore")


def setup(ctx: click.Context, quiet: bool = False) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(PrintableFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.WARNING if quiet else logging.INFO, handlers=[handler])
    for client in QUIET_LOGGERS:  # a line per request, with its full URL: a Slack webhook's is a secret
        logging.getLogger(client).setLevel(logging.WARNING)
    load_app(ctx.meta.get("eventbus.app"))


@click.group(cls=EventBusGroup, context_settings={"help_option_names": ["-h", "--help"]})
@app_option
@click.version_option(__version__, "-V", "--version", prog_name="eventbus",
                      message="%(prog)s %(version)s")
def main() -> None:
    """Events, queued listeners, jobs and notifications.

    \b
    Examples:
      eventbus work --app shop.app                  run queued jobs (SQLite by default)
      eventbus work redis --queue high,default      a Redis worker, high before default
      eventbus failed                               list failed jobs
      eventbus retry all                            push every failed job back
    """


class Refused(click.ClickException):
    """A destructive command that cannot ask for confirmation: one line, exit code 2."""

    exit_code = 2

    def show(self, file: Any = None) -> None:
        say(f"eventbus: error: {self.message}", err=True)


class BadUsage(Refused):
    """A command given something it cannot act on (a uuid that is no failed job): one line, exit 2."""


def force_option(fn: F) -> F:
    """``--force``: run a destructive command without asking (scripts, cron, CI)."""
    return click.option("--force", "-f", is_flag=True,
                        help="Do not ask for confirmation (needed without a terminal).")(fn)


def confirm(question: str, *, force: bool) -> None:
    """Ask ``question`` on a terminal before destroying anything; without a terminal refuse,
    unless ``--force`` was given. Answering no aborts the command (exit 1)."""
    if force:
        return
    if not sys.stdin.isatty():
        raise Refused(f"{question.rstrip('?')}: refusing without a terminal to confirm on; "
                      "pass --force to do it anyway")
    click.confirm(question, abort=True, err=True)


def table(header: tuple[str, ...], rows: list[tuple[object, ...]], *, right: int = 1) -> None:
    """Columns padded to their widest cell; the last ``right`` columns right-aligned (numbers)."""
    cells = [[printable(c) for c in row] for row in [header, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    split = len(header) - right
    for row in cells:
        left = [c.ljust(w) for c, w in zip(row[:split], widths[:split])]
        nums = [c.rjust(w) for c, w in zip(row[split:], widths[split:])]
        click.echo("  ".join(left + nums).rstrip())
