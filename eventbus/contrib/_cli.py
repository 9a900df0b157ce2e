"""The ``eventbus`` commands inside a framework's own command line.

``flask eventbus work ...`` and ``manage.py eventbus work ...`` run the very same click group as
``eventbus work ...``, with ``--app`` set to a small boot module that makes the framework's app
ready. In this process the app is ready already and the boot module does nothing; the workers
that ``--processes N`` or ``--watch`` start are fresh ``python -m eventbus work --app BOOT``
processes, and there it sets the app up (the framework's own environment variable says which).
"""

from __future__ import annotations

from collections.abc import Sequence

import click

from eventbus.cli import load_commands, main


def run_eventbus_command(args: Sequence[str], *, prog_name: str, boot: str) -> int:
    """Run ``eventbus ARGS...`` in this process; return its exit code (errors already printed)."""
    load_commands()
    try:
        result = main.main(args=["--app", boot, *args], prog_name=prog_name, standalone_mode=False)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Abort:
        click.echo("Aborted!", err=True)
        return 1
    return result if isinstance(result, int) else 0
