"""The ``eventbus`` command: a thin shell over the library, one module per group of commands.

Each command's module is imported when the command is called (``eventbus.cli.base.
BUILT_IN_COMMANDS``); add-ons contribute commands through the ``eventbus.commands`` entry-point
group, read when a name is not a built-in one, or for ``--help``.
"""

from __future__ import annotations

from eventbus.cli.base import app_option, load_app, load_commands, main, say

__all__ = ["app_option", "batches", "failed", "jobs", "load_app", "load_commands", "main", "observe", "queues",
           "run", "say", "schedule", "work", "workers"]


def run() -> None:
    """The console script."""
    main()
