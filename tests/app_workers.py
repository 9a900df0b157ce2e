"""Worker subprocesses running one of the test apps (``tests/apps``) against the connection under
test; the app reads that connection and its log file from ``{PREFIX}_DRIVER``, ``_URL`` and
``_LOG``. The batch and toolbox backends build on it."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

from helpers import ROOT, TESTS


class AppWorkers:
    """The connection under test and the worker processes of ``app`` that drain it."""

    #: Workers :meth:`start_workers` starts when not told how many.
    default_workers = 1

    def __init__(self, driver: str, url: str, log: pathlib.Path, *, app: str, prefix: str) -> None:
        self.driver, self.url, self.log, self.app = driver, url, log, app
        self.env = {**{k: v for k, v in os.environ.items() if not k.startswith("EVENTBUS_")},
                    "PYTHONPATH": f"{TESTS}{os.pathsep}{ROOT}", f"{prefix}_DRIVER": driver,
                    f"{prefix}_URL": url, f"{prefix}_LOG": str(log), "PYTHONUNBUFFERED": "1"}
        self.workers: list[subprocess.Popen[str]] = []
        self.worker_log = open(log.with_suffix(".workers"), "a")  # noqa: SIM115 (closed by stop)

    def command(self, *args: str, sleep: str = "0.1") -> list[str]:
        """``eventbus work`` for the app with the tests' defaults (``args`` after them win)."""
        return [sys.executable, "-m", "eventbus", "work", "--app", self.app, "--sleep", sleep,
                "--quiet", "--memory", "0", "--timeout", "10", *args]

    def start_workers(self, count: int | None = None, *args: str, env: dict[str, str] | None = None) -> None:
        """Worker processes (their options after the defaults win); ``env`` adds variables."""
        for _ in range(self.default_workers if count is None else count):
            self.workers.append(subprocess.Popen(
                self.command(*args), env={**self.env, **(env or {})}, start_new_session=True,
                stdout=subprocess.DEVNULL, stderr=self.worker_log, text=True))

    def stop(self) -> None:
        for w in self.workers:
            if w.poll() is None:
                os.killpg(w.pid, 9)
            w.wait()
        self.worker_log.close()

    def worker_output(self) -> str:
        """What the workers wrote on stderr (their log)."""
        return self.log.with_suffix(".workers").read_text()
