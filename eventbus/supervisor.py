"""``eventbus work --processes N``: run and supervise N worker processes.

Each child is ``python -m eventbus work`` with the same options. A child that exits is started
again (a crash, the memory limit, ``--max-jobs``/``--max-time``, ``eventbus restart``), unless it
was told to stop when empty or after one job. SIGTERM/SIGINT are forwarded to every child; the
supervisor waits for them to finish their current job and exits 0.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from types import FrameType

log = logging.getLogger(__name__)

SUPERVISOR_PID_ENV = "EVENTBUS_SUPERVISOR_PID"


class Supervisor:
    def __init__(self, argv: Sequence[str], processes: int, *, restart: bool = True) -> None:
        self.argv = [sys.executable, "-m", "eventbus", *argv]
        self.processes = processes
        self.restart = restart
        self.children: list[subprocess.Popen[bytes]] = []
        self.stopping = False

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self._on_stop)
        signal.signal(signal.SIGINT, self._on_stop)
        self.children = [self._start() for _ in range(self.processes)]
        while self.children:
            time.sleep(0.2)
            for i, child in enumerate(list(self.children)):
                code = child.poll()
                if code is None:
                    continue
                if self.stopping or not self.restart and code == 0:
                    self.children.remove(child)
                    continue
                log.warning("worker process %s exited with %s; starting a new one", child.pid, code)
                self.children[self.children.index(child)] = self._start()
                time.sleep(0.5 if code else 0)
        return 0

    def _start(self) -> subprocess.Popen[bytes]:
        # A child whose supervisor was killed outright (SIGKILL, OOM) notices and exits.
        env = {**os.environ, SUPERVISOR_PID_ENV: str(os.getpid())}
        return subprocess.Popen(self.argv, env=env)

    def _on_stop(self, signum: int, frame: FrameType | None) -> None:
        self.stopping = True
        for child in self.children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
