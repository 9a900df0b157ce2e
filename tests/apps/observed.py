"""The jobs of ``apps.jobs`` plus one the dashboard tests repair by hand.

``Broken`` fails while the Redis key ``trace:broken`` exists, and records each run that got
through: fail it, delete the key, press Retry, and it runs.
"""

from __future__ import annotations

import eventbus
from apps.jobs import TRACE, Record, trace

__all__ = ["Broken", "Record"]


class Broken(eventbus.Job):
    def __init__(self, n: int) -> None:
        self.n = n

    def handle(self) -> None:
        if TRACE.exists("trace:broken"):
            raise RuntimeError(f"job {self.n} is broken until someone fixes it")
        trace("ran", f"broken:{self.n}")
