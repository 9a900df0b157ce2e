"""Helpers shared by the tests: server URLs, availability checks, worker subprocesses."""

from __future__ import annotations

import os
import pathlib
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import redis

ROOT = pathlib.Path(__file__).resolve().parent.parent
TESTS = pathlib.Path(__file__).resolve().parent
REDIS_URL = os.environ.get("EVENTBUS_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
PG_URL = os.environ.get("EVENTBUS_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
MYSQL_URL = os.environ.get("EVENTBUS_TEST_MYSQL_URL", "mysql+pymysql://root@127.0.0.1:3306/test")
#: A beanstalkd the tests may empty at will; unset, each test session starts a private one.
BEANSTALKD_URL = os.environ.get("EVENTBUS_TEST_BEANSTALKD_URL")
#: Queues the SQS fixture creates on the local endpoint (moto's default account).
SQS_QUEUES = ("default", "other", "high", "low", "jobs.fifo")
SQS_ACCOUNT = "123456789012"

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


def backend_url(kind: str, request: object, tmp_path: pathlib.Path, name: str,
                tables: tuple[str, ...]) -> tuple[str, str]:
    """The driver and URL of a ``backend`` fixture's ``kind`` (redis, sqlite, postgres): Redis's
    test database emptied, a fresh SQLite file ``name``, PostgreSQL's ``tables`` dropped (skipped
    when PostgreSQL does not answer)."""
    import pytest
    import sqlalchemy as sa

    if kind == "redis":
        request.getfixturevalue("redis_client")  # type: ignore[attr-defined]
        return "redis", REDIS_URL
    if kind == "sqlite":
        return "database", f"sqlite:///{tmp_path}/{name}.sqlite3"
    reason = database_reason(PG_URL)
    if reason:
        pytest.skip(reason)
    engine = sa.create_engine(PG_URL)
    with engine.begin() as conn:
        for table in tables:
            conn.execute(sa.text(f"DROP TABLE IF EXISTS {table}"))
    engine.dispose()
    return "database", PG_URL


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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def address_of(url: str) -> tuple[str, int]:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return parts.hostname or "127.0.0.1", parts.port or 11300


def beanstalkd_reason(url: str) -> str | None:
    """None when a beanstalkd answers at ``url``, else why not."""
    try:
        with socket.create_connection(address_of(url), timeout=2) as sock:
            sock.sendall(b"stats\r\n")
            if not sock.recv(3).startswith(b"OK"):
                return f"{url} answers, but not as beanstalkd"
        return None
    except OSError as exc:
        return f"no beanstalkd answers at {url}: {exc}"


class BeanstalkdServer:
    """A private ``beanstalkd`` on a free loopback port (``args`` such as ``-z 1024`` added)."""

    def __init__(self, *args: str) -> None:
        binary = shutil.which("beanstalkd")
        if binary is None:
            raise FileNotFoundError("beanstalkd is not installed (apt-get install beanstalkd)")
        port = free_port()
        self.url = f"beanstalk://127.0.0.1:{port}"
        self.proc = subprocess.Popen([binary, "-l", "127.0.0.1", "-p", str(port), *args],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     start_new_session=True)
        deadline = time.monotonic() + 10
        while beanstalkd_reason(self.url) is not None:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"beanstalkd {' '.join(args)} did not start on port {port}")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stderr is not None:
            self.proc.stderr.close()


def empty_beanstalkd(url: str, timeout: float = 10.0) -> None:
    """Delete every job of every tube, waiting for reservations of closed connections to return."""
    import greenstalk

    client: greenstalk.Client[bytes] = greenstalk.Client(address_of(url), encoding=None)
    deadline = time.monotonic() + timeout
    try:
        while True:
            reserved = 0
            for tube in client.tubes():
                client.use(tube)
                for peek in (client.peek_ready, client.peek_delayed, client.peek_buried):
                    while True:
                        try:
                            job = peek()
                        except greenstalk.NotFoundError:
                            break
                        try:
                            client.delete(job.id)
                        except greenstalk.NotFoundError:
                            pass
                try:
                    reserved += client.stats_tube(tube)["current-jobs-reserved"]
                except greenstalk.NotFoundError:
                    pass
            if not reserved or time.monotonic() > deadline:
                return
            time.sleep(0.05)
    finally:
        client.close()


def reset_moto(endpoint: str) -> None:
    """Forget every queue and message the local SQS endpoint holds."""
    request = urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST")
    with urllib.request.urlopen(request, timeout=10):
        pass


def sqs_client(endpoint: str) -> object:
    import boto3

    return boto3.client("sqs", endpoint_url=endpoint, region_name="us-east-1",
                        aws_access_key_id="testing", aws_secret_access_key="testing")


def children_of(pid: int) -> list[int]:
    """The live (not zombie) child processes of ``pid``."""
    found = []
    for stat in pathlib.Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return sorted(found)
