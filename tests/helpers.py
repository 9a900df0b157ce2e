"""Helpers shared by the tests: server URLs, availability checks, worker subprocesses."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import time

import redis

ROOT = pathlib.Path(__file__).resolve().parent.parent
TESTS = pathlib.Path(__file__).resolve().parent
REDIS_URL = os.environ.get("EVENTBUS_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
PG_URL = os.environ.get("EVENTBUS_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
MYSQL_URL = os.environ.get("EVENTBUS_TEST_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306/test")

sys.path.insert(0, str(TESTS))


def _answers(url: str) -> str | None:
    """None when the database answers, else the reason."""
    import sqlalchemy as sa

    try:
        engine = sa.create_engine(url)
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
        engine.dispose()
        return None
    except Exception as exc:  # noqa: BLE001 - any failure means: skip with the reason
        return f"{url.split('@')[-1]} does not answer: {str(exc).splitlines()[0]}"


_availability: dict[str, str | None] = {}


def database_reason(url: str) -> str | None:
    if url not in _availability:
        _availability[url] = _answers(url)
    return _availability[url]


class WorkerProcess:
    """``eventbus work`` in a subprocess, its output captured."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "eventbus", "work", "--app", "apps.jobs", *args],
                                     env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     start_new_session=True)

    def wait(self, timeout: float = 60) -> int:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
            raise AssertionError(f"worker did not exit in {timeout}s\nstdout:\n{out}\nstderr:\n{err}")

    def output(self) -> tuple[str, str]:
        out, err = self.proc.communicate()
        return out, err

    def signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def kill(self) -> None:
        """Kill the worker and everything it started (a supervisor's children included)."""
        try:
            os.killpg(self.proc.pid, 9)
        except ProcessLookupError:
            pass
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def run_worker(start_worker: object, *args: str, env: dict[str, str] | None = None,
               timeout: float = 60) -> tuple[int, str, str]:
    """Run a worker to completion; return (exit code, stdout, stderr)."""
    w = start_worker(*args, env=env)  # type: ignore[operator]
    code = w.wait(timeout)
    out, err = w.output()
    return code, out, err


def wait_for(predicate: object, timeout: float = 15.0, interval: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(interval)
    raise AssertionError("condition not met in time")


def traces(client: redis.Redis, kind: str) -> list[str]:
    return [v.decode() for v in client.lrange(f"trace:{kind}", 0, -1)]


def wait_until_catching(pid: int, *signums: int, timeout: float = 20.0) -> None:
    """Wait until the process has handlers for ``signums`` (SigCgt in /proc/PID/status)."""
    import pathlib

    def catching() -> bool:
        try:
            status = pathlib.Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return False
        mask = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
        return all(mask & (1 << (s - 1)) for s in signums)

    wait_for(catching, timeout=timeout)
