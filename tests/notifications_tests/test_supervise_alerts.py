"""``eventbus supervise`` watches its queues' long waits as ``eventbus monitor`` does: a master
whose app sets ``waits`` and ``alerts`` (``apps.supervised_waits``: 1 s on the queue ``load``,
a Slack webhook served locally) emits ``LongWaitDetected`` and sends it once per
``alert_cooldown``, a cooldown it shares with ``monitor`` and with the next master, on Redis and
SQLite. The job waits on a supervisor paused before the master started, so nothing runs it."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
import redis
from apps.naps import Nap
from helpers import wait_for
from observing import Backend, use_backend

from eventbus import runtime
from eventbus.monitoring import pausing

pytestmark = [pytest.mark.integration, pytest.mark.timeout(150)]

APP = "apps.supervised_waits"


@pytest.fixture(params=["redis", "sqlite"])
def backend(request: pytest.FixtureRequest, redis_client: redis.Redis, tmp_path: pathlib.Path) -> Backend:
    return use_backend(request.param, tmp_path)


class Master:
    """``eventbus supervise`` in a subprocess; its log in a file."""

    def __init__(self, env: dict[str, str], log: pathlib.Path) -> None:
        self.log = log
        with open(log, "w") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "eventbus", "supervise", "--app", APP],
                                         env=env, stdout=subprocess.DEVNULL, stderr=out, start_new_session=True)

    def logged(self) -> str:
        return self.log.read_text()

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


@pytest.fixture
def masters() -> Iterator[list[Master]]:
    started: list[Master] = []
    yield started
    for master in started:
        master.close()


def test_a_supervise_master_sends_a_long_wait_once_per_cooldown(
        backend: Backend, worker_env: dict[str, str], tmp_path: pathlib.Path, slack_stub: tuple,
        masters: list[Master]) -> None:
    stub, webhook = slack_stub
    conn = backend.connection
    heard = tmp_path / "heard.log"
    env = {**worker_env, **backend.env, "RAN": str(tmp_path / "ran.log"), "HEARD": str(heard),
           "SLACK_WEBHOOK": webhook}

    def supervise(n: int) -> Master:
        masters.append(Master(env, tmp_path / f"master-{n}.log"))
        return masters[-1]

    def eventbus(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "eventbus", *args, "--app", APP], env=env,
                              capture_output=True, text=True, timeout=60)

    # Given a job that has waited past its 1 s limit on a paused supervisor's queue
    pausing.pause_supervisor(runtime.state(conn), conn, "load")
    Nap(1).dispatch()
    time.sleep(1.3)

    # The master sends the long wait to Slack and emits it for the app's listeners, once
    first = supervise(1)
    wait_for(lambda: len(stub.posts) >= 1, timeout=45, interval=0.2)
    [post] = stub.posts
    assert post["blocks"][0]["text"]["text"] == f"Long wait on {conn}:load"
    wait_for(lambda: "long-wait alert about" in first.logged(), timeout=10, interval=0.2)
    assert f"long-wait alert about {conn}:load sent" in first.logged()
    assert heard.read_text() == f"{first.proc.pid} {conn}:load 1.0\n"
    time.sleep(3)  # three more looks (the limit is 1 s): the cooldown holds
    assert len(stub.posts) == 1 and len(heard.read_text().splitlines()) == 1

    # A cron monitor shares the cooldown: the queue still waits too long, nobody is told twice
    monitor = eventbus("monitor")
    assert monitor.returncode == 1, monitor.stderr
    assert "not sent: one went out less than 600 s ago (alert_cooldown)" in monitor.stderr
    assert len(stub.posts) == 1

    # So does the next master (a deploy: terminate, and the process manager starts it again)
    assert eventbus("terminate").returncode == 0
    assert first.proc.wait(60) == 0
    second = supervise(2)
    wait_for(lambda: "long-wait alert about" in second.logged(), timeout=45, interval=0.2)
    assert f"long-wait alert about {conn}:load not sent: one went out less than 600 s ago" in second.logged()
    assert len(stub.posts) == 1
    assert f"{second.proc.pid} " not in heard.read_text()  # held back: not emitted again either

    # Continued, the supervisor runs the job; the master exits 0
    assert eventbus("supervise", "continue").returncode == 0
    wait_for(lambda: (tmp_path / "ran.log").exists(), timeout=30, interval=0.2)
    assert eventbus("terminate").returncode == 0
    assert second.proc.wait(60) == 0
