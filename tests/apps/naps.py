"""A job for the supervisor tests, in a module that configures nothing (the test process pushes
it under its own configuration): :class:`Nap` sleeps, then appends ``n pid`` to the file ``RAN`` names."""

from __future__ import annotations

import os
import time

import eventbus


class Nap(eventbus.Job):
    queue = "load"

    def __init__(self, n: int, sleep: float = 0.1) -> None:
        self.n = n
        self.sleep = sleep

    def handle(self) -> None:
        time.sleep(self.sleep)
        with open(os.environ["RAN"], "a") as log:
            log.write(f"{self.n} {os.getpid()}\n")
