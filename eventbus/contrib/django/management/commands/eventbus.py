"""``manage.py eventbus ARGS...``: the ``eventbus`` command line, with Django set up.

The arguments go to the ``eventbus`` click group untouched (``manage.py eventbus --help``,
``manage.py eventbus work --help``), so every command and option is the same as ``eventbus``'s.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from eventbus.contrib._cli import run_eventbus_command

BOOT_MODULE = "eventbus.contrib.django.boot"
PROG_NAME = "manage.py eventbus"


class Command(BaseCommand):
    help = ("Queued jobs, failed jobs and workers: the eventbus commands "
            "(manage.py eventbus --help lists them).")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("args", nargs=argparse.REMAINDER, help="eventbus command and options")

    def run_from_argv(self, argv: list[str]) -> None:
        """From the command line: every argument after ``eventbus`` is the eventbus CLI's."""
        sys.exit(run_eventbus_command(argv[2:], prog_name=PROG_NAME, boot=BOOT_MODULE))

    def handle(self, *args: str, **options: Any) -> None:
        """From ``call_command("eventbus", "failed")``: a non-zero exit is a CommandError."""
        code = run_eventbus_command(args, prog_name=PROG_NAME, boot=BOOT_MODULE)
        if code:
            raise CommandError(f"eventbus {' '.join(args)} exited with {code}", returncode=code)
