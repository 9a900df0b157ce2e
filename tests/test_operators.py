"""What operators rely on: health-check exit codes, confirmation before destroying anything,
``--version``, and commands that touch only the connections the app uses.

Every command runs as a real subprocess (the exit code a health check or cron sees), against a
real Redis and real workers.
"""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import time
from importlib.metadata import version

import pytest
import redis

from helpers import REDIS_URL, ROOT, wait_for

pytestmark = pytest.mark.integration

APP = '''
import eventbus

eventbus.configure(default="redis", connections={{"redis": {{"driver": "redis", "url": {url!r},
                                                           "block_for": 1}}}}, failed={failed!r})


class Nap(eventbus.Job):
    def handle(self) -> None:
        pass
'''


@pytest.fixture
def app(tmp_path: pathlib.Path, redis_client: redis.Redis) -> pathlib.Path:
    (tmp_path / "opsapp.py").write_text(APP.format(url=REDIS_URL, failed=REDIS_URL))
    return tmp_path


def env_for(directory: pathlib.Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVENTBUS_")}
    env.update({"PYTHONPATH": os.pathsep.join([str(directory), str(ROOT)]), "EVENTBUS_APP": "opsapp",
                "PYTHONUNBUFFERED": "1"})
    return env


def eventbus_cmd(directory: pathlib.Path, *args: str, stdin: int | None = subprocess.DEVNULL,
                 env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "eventbus", *args], cwd=directory, stdin=stdin,
                          env=env or env_for(directory), capture_output=True, text=True, timeout=120)


def dispatch(directory: pathlib.Path, n: int) -> None:
    code = f"import opsapp\nfor _ in range({n}):\n    opsapp.Nap().dispatch()\n"
    subprocess.run([sys.executable, "-c", code], cwd=directory, env=env_for(directory), check=True,
                   timeout=120)


# -- status and monitor exit codes --------------------------------------------------------------

def test_status_exit_codes_say_healthy_busy_short_of_workers_or_unreachable(app: pathlib.Path) -> None:
    worker = subprocess.Popen([sys.executable, "-m", "eventbus", "work", "--sleep", "0.1"], cwd=app,
                              env=env_for(app), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: json.loads(eventbus_cmd(app, "status", "--json").stdout)["workers"], timeout=60)
        healthy = eventbus_cmd(app, "status", "--min-workers", "1", "--max", "5")
        assert healthy.returncode == 0, healthy.stdout + healthy.stderr
        worker.send_signal(signal.SIGUSR2)  # paused: the worker lives but takes nothing
        time.sleep(0.5)
        dispatch(app, 5)
        busy = eventbus_cmd(app, "status", "--min-workers", "1", "--max", "5")
        assert busy.returncode == 1
        assert "eventbus: alert: queue redis:default holds 5 jobs (limit 5)" in busy.stderr
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(60)
    missing = eventbus_cmd(app, "status", "--min-workers", "1", "--json")
    assert missing.returncode == 1
    assert json.loads(missing.stdout)["alerts"] == [
        "connection redis has 0 live workers (at least 1 expected)"]
    assert eventbus_cmd(app, "status").returncode == 0  # nothing was asked of it: healthy


@pytest.mark.parametrize("where", ["queue", "failed store"])
def test_status_exit_code_is_2_when_a_broker_or_the_failed_store_is_unreachable(
        tmp_path: pathlib.Path, where: str) -> None:
    dead = "redis://127.0.0.1:1/0"
    url, failed = (dead, REDIS_URL) if where == "queue" else (REDIS_URL, dead)
    (tmp_path / "opsapp.py").write_text(APP.format(url=url, failed=failed))
    result = eventbus_cmd(tmp_path, "status")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "cannot reach" in result.stderr and "Traceback" not in result.stderr


def test_monitor_exits_1_when_it_fires_and_still_emits(app: pathlib.Path) -> None:
    (app / "pager.py").write_text(
        "import eventbus, opsapp\n"
        "eventbus.listen(eventbus.QueueBusy, lambda e: print(f'PAGED {e.queue} {e.size}'))\n")
    assert eventbus_cmd(app, "monitor", "--max", "2", "--app", "pager").returncode == 0
    dispatch(app, 2)
    fired = eventbus_cmd(app, "monitor", "--max", "2", "--app", "pager")
    assert fired.returncode == 1 and "PAGED default 2" in fired.stdout
    (app / "opsapp.py").write_text(APP.format(url="redis://127.0.0.1:1/0", failed=REDIS_URL))
    unreachable = eventbus_cmd(app, "monitor", "--max", "2")
    assert unreachable.returncode == 2 and unreachable.stderr.startswith("eventbus: error: ")
    assert len(unreachable.stderr.strip().splitlines()) == 1


# -- confirmation before destroying -------------------------------------------------------------

def answer_on_a_terminal(directory: pathlib.Path, answer: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run an eventbus command whose stdin is a terminal (a pty), typing ``answer`` at its prompt."""
    primary, secondary = os.openpty()
    try:
        os.write(primary, answer.encode() + b"\n")
        return eventbus_cmd(directory, *args, stdin=secondary)
    finally:
        os.close(primary)
        os.close(secondary)


@pytest.mark.parametrize("command", [["clear"], ["flush", "--hours", "0"], ["prune-failed", "--hours", "0"]])
def test_destructive_commands_ask_on_a_terminal_and_refuse_without_one(
        app: pathlib.Path, command: list[str], redis_client: redis.Redis) -> None:
    dispatch(app, 3)
    fail = ("import eventbus, opsapp\n"
            "for n in range(2): eventbus.failed_store().log('redis', 'default', '{}', 'E: x', f'u{n}')\n")
    subprocess.run([sys.executable, "-c", fail], cwd=app, env=env_for(app), check=True, timeout=120)

    def remaining() -> int:
        return redis_client.llen("queues:{default}") if command == ["clear"] else \
            len(eventbus_cmd(app, "failed", "--json").stdout.splitlines())

    before = remaining()
    refused = eventbus_cmd(app, *command)
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr.count("\n") == 1 and "pass --force" in refused.stderr
    declined = answer_on_a_terminal(app, "n", *command)
    assert declined.returncode == 1 and "[y/N]" in declined.stderr
    assert remaining() == before
    accepted = answer_on_a_terminal(app, "y", *command)
    assert accepted.returncode == 0, accepted.stderr
    what = "3 ready and delayed jobs" if command == ["clear"] else "2 failed job records"
    assert f"Delete {what}" in accepted.stderr
    assert remaining() == 0


def test_force_skips_the_question(app: pathlib.Path, redis_client: redis.Redis) -> None:
    dispatch(app, 2)
    result = eventbus_cmd(app, "clear", "--force")
    assert result.returncode == 0 and result.stdout == "Cleared 2 jobs from redis:default.\n"


def test_flush_hours_keeps_newer_records(app: pathlib.Path) -> None:
    code = ("import time, eventbus, opsapp\n"
            "from eventbus.failed.base import FailedJob\n"
            "store = eventbus.failed_store()\n"
            "store.add(FailedJob('old', 'redis', 'default', '{}', 'E: old', time.time() - 3 * 3600))\n"
            "store.add(FailedJob('new', 'redis', 'default', '{}', 'E: new', time.time()))\n")
    subprocess.run([sys.executable, "-c", code], cwd=app, env=env_for(app), check=True, timeout=120)
    result = eventbus_cmd(app, "flush", "--hours", "2", "--force")
    assert result.returncode == 0 and result.stdout == "Deleted 1 failed jobs.\n"
    assert [json.loads(line)["uuid"] for line in eventbus_cmd(app, "failed", "--json").stdout.splitlines()] == ["new"]


# -- version -----------------------------------------------------------------------------------

def test_version_is_single_sourced(tmp_path: pathlib.Path) -> None:
    import eventbus

    result = subprocess.run([sys.executable, "-m", "eventbus", "--version"], capture_output=True, text=True,
                            cwd=tmp_path, timeout=60)
    assert result.returncode == 0 and result.stdout == f"eventbus {eventbus.__version__}\n"
    assert version("eventbus") == eventbus.__version__


# -- one line for an unknown connection --------------------------------------------------------

@pytest.mark.parametrize("args", [["--connection", "nosuch"], ["nosuch"]])
def test_work_with_an_unknown_connection_says_only_that(tmp_path: pathlib.Path, args: list[str]) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVENTBUS_")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-m", "eventbus", "work", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "eventbus: error: unknown connection 'nosuch' (configured: database, null, redis, sync)"]
