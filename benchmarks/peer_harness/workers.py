"""Worker processes of any peer: start them, stop them, and say why they died."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
from collections.abc import Sequence


class Workers:
    """The worker processes of one phase, each in a session of its own so that its children
    (Celery's pool, Huey's processes, eventbus's supervised workers) stop with it."""

    def __init__(self, commands: Sequence[Sequence[str]], logdir: pathlib.Path) -> None:
        self.logs = [logdir / f"worker-{i}.log" for i in range(len(commands))]
        self.procs = []
        for command, log in zip(commands, self.logs):
            with open(log, "wb") as out:
                self.procs.append(subprocess.Popen(list(command), stdout=out, stderr=subprocess.STDOUT,
                                                   start_new_session=True))

    def all_exited(self) -> bool:
        return all(p.poll() is not None for p in self.procs)

    def stop(self, *, grace_s: float = 10.0) -> None:
        """SIGTERM each process group, then SIGKILL what is left after ``grace_s``."""
        for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
            for p in self.procs:
                if p.poll() is None:
                    self._signal_group(p, sig)
            for p in self.procs:
                try:
                    p.wait(timeout=wait_s)
                except subprocess.TimeoutExpired:
                    pass
        for p in self.procs:  # a pool child that outlived its parent
            self._signal_group(p, signal.SIGKILL)

    def wait(self, timeout_s: float) -> bool:
        """Wait for every process to exit by itself (burst mode); True if they did."""
        try:
            for p in self.procs:
                p.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return False
        return True

    def last_words(self) -> str:
        """The last non-empty line any worker printed, for an error message."""
        for log in self.logs:
            lines = [line.strip() for line in log.read_text(errors="replace").splitlines() if line.strip()]
            if lines:
                return lines[-1][:160]
        return "no output"

    @staticmethod
    def _signal_group(p: subprocess.Popen[bytes], sig: int) -> None:
        try:
            os.killpg(p.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
