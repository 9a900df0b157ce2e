"""Workers: ``restart``, ``down``, ``up``."""

from __future__ import annotations

import click

from eventbus import control
from eventbus.cli.base import app_option, main, say, setup


def _report(result: control.Signalled, done: str) -> None:
    """One line for the connections told (``done`` says what they will do), one for those no
    worker has used yet, a warning for each that could not be reached."""
    for problem in result.unreachable:
        say(f"eventbus: warning: {problem}", err=True)
    if result.told:
        say(done.format(", ".join(result.told)))
    if result.idle:
        say(f"No worker has run on {', '.join(result.idle)} yet: nothing to tell.")


@main.command()
@app_option
@click.pass_context
def restart(ctx: click.Context) -> None:
    """Make every worker exit after its current job (their supervisor starts fresh ones).

    Only the connections this app configured (and its default) are signalled.
    """
    setup(ctx)
    _report(control.restart(), "Told workers on {} to restart after their current job.")


@main.command()
@app_option
@click.pass_context
def down(ctx: click.Context) -> None:
    """Maintenance mode: workers finish their job and take no new ones (except with --force)."""
    setup(ctx)
    _report(control.down(), "Workers on {} are paused until `eventbus up`.")


@main.command()
@app_option
@click.pass_context
def up(ctx: click.Context) -> None:
    """Leave maintenance mode."""
    setup(ctx)
    _report(control.up(), "Workers on {} take jobs again.")
