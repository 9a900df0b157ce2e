"""Workers: ``restart``, ``down``, ``up``."""

from __future__ import annotations

import click

from eventbus import control
from eventbus.cli.base import app_option, main, say, setup


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
    setup(ctx)
    say(f"Told workers on {_told(control.restart())} to restart after their current job.")


@main.command()
@app_option
@click.pass_context
def down(ctx: click.Context) -> None:
    """Maintenance mode: workers finish their job and take no new ones (except with --force)."""
    setup(ctx)
    say(f"Workers on {_told(control.down())} are paused until `eventbus up`.")


@main.command()
@app_option
@click.pass_context
def up(ctx: click.Context) -> None:
    """Leave maintenance mode."""
    setup(ctx)
    say(f"Workers on {_told(control.up())} take jobs again.")
