"""The ``eventbus`` command: a thin shell over the library, one module per group of commands.

Add-ons contribute commands through the ``eventbus.commands`` entry-point group.
"""

from __future__ import annotations

import logging
from importlib.metadata import entry_points

import click

from eventbus.cli import batches, failed, observe, queues, schedule, work, workers
from eventbus.cli.base import app_option, load_app, main, say

__all__ = ["app_option", "batches", "failed", "load_app", "load_commands", "main", "observe", "queues",
           "run", "say", "schedule", "work", "workers"]


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
