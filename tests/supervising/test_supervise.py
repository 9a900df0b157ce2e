"""``eventbus supervise`` with real worker processes, on Redis, SQLite and PostgreSQL: one
scenario per backend, as an operator lives it.

300 jobs of 100 ms wait on the queue ``load`` of a supervisor that balances 1 to 4 processes
(``apps.supervised``). It grows to at least 3 processes as ``eventbus workers --json`` lists
them, shrinks back to 1 once the queue is empty, replaces a worker killed with SIGKILL, pauses
and continues, and ``eventbus terminate`` makes it exit 0 without losing a job: every job ran
exactly once or is still queued.
"""

from __future__ import annotations

import collections
import json
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator

import pytest
import redis
from apps.naps import Nap
from click.testing import CliRunner
from helpers import children_of, wait_for
from observing import BACKENDS, Backend, use_backend

import eventbus
from eventbus.cli import main

pytestmark = [pytest.mark.integration, pytest.mark.timeout(150)]

APP = "apps.supervised"


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, redis_client: redis.Redis, tmp_path: pathlib.Path) -> Backend:
    return use_backend(request.param, tmp_path)


class Master:
    """``eventbus supervise --app apps.supervised`` in a subprocess, and the jobs its workers ran."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.ran = pathlib.Path(env["RAN"])
        # its log goes to a file: a pipe read only at the end would stop the master once full
        self.errors = tempfile.TemporaryFile("w+")
        self.proc = subprocess.Popen([sys.executable, "-m", "eventbus", "supervise", "--app", APP, "--quiet"],
                                     env=env, stdout=subprocess.DEVNULL, stderr=self.errors, text=True,
                                     start_new_session=True)
        self.started = time.monotonic()

    def eventbus(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Another ``eventbus`` command, as an operator would type it."""
        return subprocess.run([sys.executable, "-m", "eventbus", *args, "--app", APP], env=self.env,
                              capture_output=True, text=True, timeout=60)

    def runs(self) -> collections.Counter[int]:
        lines = self.ran.read_text().split("\n") if self.ran.exists() else []
        return collections.Counter(int(line.split()[0]) for line in lines if line)

    def log(self) -> str:
        self.errors.seek(0)
        return self.errors.read()[-4000:]

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.errors.close()


def workers() -> list[dict[str, object]]:
    """The supervisor's workers, as ``eventbus workers --json`` lists them."""
    result = CliRunner().invoke(main, ["workers", "--json"])
    assert result.exit_code == 0, result.output
    return [w for w in map(json.loads, result.output.splitlines()) if w["supervisor"] == "load"]


def supervisor() -> dict[str, object]:
    result = CliRunner().invoke(main, ["supervisors", "--json"])
    assert result.exit_code == 0, result.output
    found = [json.loads(line) for line in result.output.splitlines()]
    assert [s["name"] for s in found] == ["load"]
    return found[0]


def test_a_supervisor_balances_replaces_pauses_and_terminates_without_losing_a_job(
        backend: Backend, worker_env: dict[str, str], tmp_path: pathlib.Path) -> None:
    queue = eventbus.connection()
    for n in range(300):
        Nap(n, 0.1).dispatch()
    master = Master({**worker_env, **backend.env, "RAN": str(tmp_path / "ran.log")})
    try:
        # Given a backlog, the supervisor grows (one process a second) ...
        wait_for(lambda: len(workers()) >= 3, timeout=20 - (time.monotonic() - master.started), interval=0.3)
        assert supervisor()["total_processes"] >= 3
        # ... and shrinks back to min_processes once the queue is empty.
        wait_for(lambda: queue.size("load") == 0, timeout=60, interval=0.3)
        wait_for(lambda: len(workers()) == 1, timeout=45, interval=0.3)
        wait_for(lambda: supervisor()["processes"] == {"load": 1}, timeout=10, interval=0.3)
        assert master.runs() == collections.Counter(range(300))

        # A worker killed outright is replaced.
        [killed] = [int(w["pid"]) for w in workers()]  # type: ignore[call-overload]
        os.kill(killed, signal.SIGKILL)
        wait_for(lambda: [w for w in workers() if w["pid"] != killed] != [], timeout=20, interval=0.3)
        assert killed not in children_of(master.proc.pid)

        # Paused, its workers take no job; continued, they do.
        paused = master.eventbus("supervise", "pause", "load")
        assert paused.returncode == 0, paused.stderr
        wait_for(lambda: supervisor()["status"] == "paused", timeout=15, interval=0.3)
        wait_for(lambda: all(w["status"] == "paused" for w in workers() if w["pid"] != killed),
                 timeout=15, interval=0.3)
        for n in range(1000, 1005):
            Nap(n, 0.1).dispatch()
        time.sleep(1.5)  # a paused worker would have taken them by now
        assert queue.size("load") == 5
        resumed = master.eventbus("supervise", "continue")
        assert resumed.returncode == 0, resumed.stderr
        wait_for(lambda: queue.size("load") == 0, timeout=20, interval=0.3)

        # terminate: the jobs in hand finish, the master exits 0, no job is lost.
        for n in range(2000, 2020):
            Nap(n, 0.5).dispatch()
        wait_for(lambda: any(w["job"] for w in workers()), timeout=20, interval=0.2)
        terminated = master.eventbus("terminate")
        assert terminated.returncode == 0, terminated.stderr
        assert master.proc.wait(60) == 0, master.log()
        assert children_of(master.proc.pid) == []
    finally:
        master.close()
    runs = master.runs()
    assert max(runs.values()) == 1  # nothing ran twice
    assert set(range(300)) | set(range(1000, 1005)) <= set(runs)
    late = {n for n in runs if n >= 2000}
    stats = queue.stats("load")
    assert stats.reserved == 0  # nothing left in a worker's hands
    assert len(late) + stats.ready == 20  # every late job ran once or waits for the next master
    assert eventbus.connection().size("load") == stats.ready
    assert supervisor_gone()


def supervisor_gone() -> bool:
    result = CliRunner().invoke(main, ["supervisors", "--json"])
    return result.exit_code == 0 and result.output == ""
