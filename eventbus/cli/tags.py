"""Monitored tags: ``tags watch TAG``, ``tags unwatch TAG``, ``tags list``."""

from __future__ import annotations

import json

import click

from eventbus.cli.base import BadUsage, app_option, main, say, setup, table
from eventbus.monitoring import monitored_tags
from eventbus.tracking.records import valid_tag

_CONNECTION = click.option("--connection", "connections", multiple=True,
                           help="On this connection (repeatable; default: every connection workers consume).")


def _checked(tag: str) -> str:
    try:
        return valid_tag(tag)
    except ValueError as exc:
        raise BadUsage(str(exc)) from None


@main.group("tags")
def tags_group() -> None:
    """Monitored tags: jobs carrying one are kept for retention["monitored"] (a week) and counted.

    \b
    Examples:
      eventbus tags watch order:42
      eventbus tags list
      eventbus jobs --tag order:42            the jobs that carry it
    """


@tags_group.command("watch")
@click.argument("tag")
@_CONNECTION
@app_option
@click.pass_context
def tags_watch(ctx: click.Context, tag: str, connections: tuple[str, ...]) -> None:
    """Monitor TAG: workers keep the jobs carrying it longer and count them."""
    setup(ctx)
    added = monitored_tags.watch(_checked(tag), connections or None)
    say(f"Watching {tag}." if added else f"{tag} was watched already.")


@tags_group.command("unwatch")
@click.argument("tag")
@_CONNECTION
@app_option
@click.pass_context
def tags_unwatch(ctx: click.Context, tag: str, connections: tuple[str, ...]) -> None:
    """Stop monitoring TAG (its jobs are kept as long as their status says from then on)."""
    setup(ctx)
    removed = monitored_tags.unwatch(_checked(tag), connections or None)
    say(f"No longer watching {tag}." if removed else f"{tag} was not watched.")


@tags_group.command("list")
@_CONNECTION
@click.option("--json", "as_json", is_flag=True, help="One JSON document (the dashboard's /api/tags).")
@app_option
@click.pass_context
def tags_list(ctx: click.Context, connections: tuple[str, ...], as_json: bool) -> None:
    """The monitored tags and how many recorded jobs carry each."""
    setup(ctx)
    found, problems = monitored_tags.monitored(connections or None)
    if as_json:
        click.echo(json.dumps({"tags": [t.to_dict() for t in found], "problems": problems}))
    elif found:
        table(("TAG", "JOBS"), [(t.tag, t.count) for t in found])
    else:
        say("No monitored tags.")
    for problem in problems:
        say(f"eventbus: cannot read {problem}", err=True)
    if problems:
        ctx.exit(1)
