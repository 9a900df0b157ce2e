"""An app that notes each import of itself, and jobs that note which process ran them.

With ``IMPORTS`` set, each import appends the importing process's pid to that file; with
``EXITS`` set, each process that exits normally appends its pid to that file (an atexit handler
registered at import); with ``PREPARED`` set, each process that prepares the workers'
connection before forking them (``runtime.prepare_fork``) appends its pid; ``RAN`` names the file where :class:`WhoRuns` appends ``n pid parent-pid``. The queue is configured as
:mod:`apps.jobs` configures it (``EVENTBUS_CONNECTION``, ``TEST_DB_URL``).
"""

from __future__ import annotations

import atexit
import os
import time

import eventbus
from apps import jobs  # noqa: F401 - its configuration of the queue

if os.environ.get("IMPORTS"):
    with open(os.environ["IMPORTS"], "a") as log:
        log.write(f"{os.getpid()}\n")


def note_exit() -> None:
    with open(os.environ["EXITS"], "a") as log:
        log.write(f"{os.getpid()}\n")


if os.environ.get("EXITS"):
    atexit.register(note_exit)

if os.environ.get("PREPARED"):  # each process that prepares the children's connection, noted
    from eventbus import runtime

    _prepare_fork = runtime.prepare_fork

    def noting_prepare_fork(name: str | None = None) -> None:
        with open(os.environ["PREPARED"], "a") as log:
            log.write(f"{os.getpid()}\n")
        _prepare_fork(name)

    runtime.prepare_fork = noting_prepare_fork


class WhoRuns(eventbus.Job):
    def __init__(self, n: int, sleep: float = 0.0) -> None:
        self.n = n
        self.sleep = sleep

    def handle(self) -> None:
        time.sleep(self.sleep)
        with open(os.environ["RAN"], "a") as log:
            log.write(f"{self.n} {os.getpid()} {os.getppid()}\n")
