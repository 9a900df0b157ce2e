"""A dispatcher process: pushes ``Work`` jobs one after another until ``CHAOS_STOP_FILE`` exists.

Each push that returned is written to the ledger as ``pushed`` (the job was acknowledged: the
app would now tell its user "done"); each that raised as ``refused``, after which it waits
0.05 s. ``CHAOS_DISPATCH_EVERY`` (seconds, default 0.005) spaces the pushes.
"""

from __future__ import annotations

import os
import time

import eventbus
from chaos.apps import app  # noqa: F401 - configures the connection under test
from chaos.apps.jobs import Work

_fd = os.open(os.environ["CHAOS_LEDGER"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)


def note(kind: str, uuid: str, n: int) -> None:
    os.write(_fd, f"{kind} {uuid} {n} 0 {os.getpid()} {time.monotonic():.6f}\n".encode())


def main() -> None:
    stop, every = os.environ["CHAOS_STOP_FILE"], float(os.environ.get("CHAOS_DISPATCH_EVERY", "0.005"))
    n = 0
    while not os.path.exists(stop):
        job = Work(100_000 + n, seconds=0.0)
        try:
            uuid = eventbus.dispatch(job)
        except eventbus.EventBusError:
            note("refused", "-", n)
            time.sleep(0.05)
        else:
            note("pushed", str(uuid), n)
            time.sleep(every)
        n += 1


if __name__ == "__main__":
    main()
