"""``eventbus work --processes N``: run and supervise N worker processes.

Each child is ``python -m eventbus work`` with the same options and the name ``NAME-i``
(``default-1`` .. ``default-N``). A child that exits is started again (a crash, the memory limit,
``--max-jobs``/``--max-time``, ``eventbus restart``), unless it was told to stop when empty or
after one job. A child that keeps dying soon after it started (a broken deploy, a server that
refuses it) is restarted with exponential backoff, 0.5 s doubling up to 60 s, so it neither spins
nor floods the logs; one that ran for a while is restarted at once. SIGTERM/SIGINT are forwarded
to every child; the supervisor waits for them to finish their current job and exits 0. A child
whose supervisor is killed outright notices and exits after its current job.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from types import FrameType

log = logging.getLogger(__name__)

SUPERVISOR_PID_ENV = "EVENTBUS_SUPERVISOR_PID"
#: A child that exits sooner than this after its start counts as dying at start.
QUICK_EXIT_S = 10.0
FIRST_BACKOFF_S = 0.5
MAX_BACKOFF_S = 60.0


@dataclasses.dataclass
class Slot:
    """One of the N places a child runs in, with its restart history."""

    name: str
    child: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    quick_failures: int = 0
    start_after: float = 0.0

    def backoff(self) -> float:
        return min(FIRST_BACKOFF_S * 2.0 ** (self.quick_failures - 1), MAX_BACKOFF_S)


class Supervisor:
    def __init__(self, argv: Sequence[str], processes: int, *, restart: bool = True,
                 name: str = "default", env: Mapping[str, str] | None = None,
                 on_exit: Callable[[int], None] | None = None) -> None:
        """``env`` is added to each child's environment; ``on_exit(pid)`` is told of each child
        that exited (the metrics exporter forgets its live gauges)."""
        self.argv = [sys.executable, "-m", "eventbus", *argv]
        self.slots = [Slot(f"{name}-{i}") for i in range(1, processes + 1)]
        self.restart = restart
        self.stopping = False
        self.env = dict(env or {})
        self.on_exit = on_exit

    @property
    def children(self) -> list[subprocess.Popen[bytes]]:
        return [slot.child for slot in self.slots if slot.child is not None]

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self._on_stop)
        signal.signal(signal.SIGINT, self._on_stop)
        for slot in self.slots:
            self._start(slot)
        while any(slot.child is not None or slot.start_after for slot in self.slots):
            time.sleep(0.2)
            for slot in self.slots:
                self._tend(slot)
        return 0

    def _tend(self, slot: Slot) -> None:
        """Notice an exited child; start the slot's next child once its backoff has passed."""
        if slot.child is None:
            if slot.start_after and not self.stopping and time.monotonic() >= slot.start_after:
                self._start(slot)
            elif self.stopping:
                slot.start_after = 0.0
            return
        code = slot.child.poll()
        if code is None:
            return
        pid, slot.child = slot.child.pid, None
        if self.on_exit is not None:
            self.on_exit(pid)
        if self.stopping or (not self.restart and code == 0):
            return
        lived = time.monotonic() - slot.started_at
        slot.quick_failures = slot.quick_failures + 1 if code != 0 and lived < QUICK_EXIT_S else 0
        delay = slot.backoff() if slot.quick_failures else 0.0
        log.warning("worker %s (pid %s) exited with %s after %.1fs; restarting in %.1fs", slot.name,
                    pid, code, lived, delay)
        slot.start_after = time.monotonic() + delay

    def _start(self, slot: Slot) -> None:
        # A child whose supervisor was killed outright (SIGKILL, OOM) notices and exits.
        env = {**os.environ, **self.env, SUPERVISOR_PID_ENV: str(os.getpid())}
        slot.child = subprocess.Popen([*self.argv, "--name", slot.name], env=env)
        slot.started_at = time.monotonic()
        slot.start_after = 0.0

    def _on_stop(self, signum: int, frame: FrameType | None) -> None:
        self.stopping = True
        for child in self.children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
