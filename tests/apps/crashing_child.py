"""An app whose supervised worker processes die at start (the supervisor itself imports it fine).

Each child appends its pid and the time it started to the file named by CRASH_LOG, then fails:
a child started afresh fails its import of this module; a child forked from the supervisor,
which imported it already, fails as its worker looks for its first job.
"""

from __future__ import annotations

import os
import time

import eventbus
from eventbus.events import Looping


def _crash() -> None:
    with open(os.environ["CRASH_LOG"], "a") as log:
        log.write(f"{os.getpid()} {time.time()}\n")
    raise RuntimeError("this child cannot start")


if os.environ.get("EVENTBUS_SUPERVISOR_PID"):
    _crash()


def crash_in_a_forked_child(event: Looping) -> None:
    if os.environ.get("EVENTBUS_SUPERVISOR_PID"):  # set in a forked child, not in its supervisor
        _crash()


eventbus.listen(Looping, crash_in_a_forked_child)
