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

from eventbus import registry
from eventbus.display import printable
from eventbus.errors import ConfigurationError, EventBusError

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


def setup(ctx: click.Context, quiet: bool = False) -> None:
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


def table(header: tuple[str, ...], rows: list[tuple[object, ...]], *, right: int = 1) -> None:
    """Columns padded to their widest cell; the last ``right`` columns right-aligned (numbers)."""
    cells = [[printable(c) for c in row] for row in [header, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    split = len(header) - right
    for row in cells:
        left = [c.ljust(w) for c, w in zip(row[:split], widths[:split])]
        nums = [c.rjust(w) for c, w in zip(row[split:], widths[split:])]
        click.echo("  ".join(left + nums).rstrip())
