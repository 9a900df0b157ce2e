"""What one scenario owns: a temp directory, a ledger, servers, proxies, worker processes.

Everything a scene starts it also stops (``with Scene(...) as scene``), by process id: worker
processes run in their own session, so a supervisor and the children it started are killed
together. The failed store is read through the ``eventbus failed`` command, the public surface.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import eventbus
from chaos import servers
from chaos.ledger import Ledger
from chaos.proxy import Proxy
from chaos.target import CONNECTION, Target

TESTS = pathlib.Path(__file__).resolve().parent.parent
ROOT = TESTS.parent
APP = "chaos.apps.app"
GRACE = "1"  # EVENTBUS_TIMEOUT_GRACE for every worker: timeout + grace stays below retry_after


def base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVENTBUS_", "CHAOS_"))}
    env.update({"PYTHONPATH": f"{TESTS}{os.pathsep}{ROOT}", "PYTHONUNBUFFERED": "1",
                "EVENTBUS_TIMEOUT_GRACE": GRACE})
    return env


def wait_until(predicate: Callable[[], object], timeout: float, interval: float = 0.05) -> bool:
    """Poll ``predicate`` until it is true (True) or ``timeout`` seconds passed (False)."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


def children_of(pid: int) -> list[int]:
    """Live (non-zombie) child processes of ``pid``."""
    found = []
    for stat in pathlib.Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


class Worker:
    """``eventbus work --app chaos.apps.app ...`` with its output in files (never a full pipe)."""

    def __init__(self, args: list[str], env: dict[str, str], directory: pathlib.Path, name: str,
                 prefix: Sequence[str] = ()) -> None:
        self.name = name
        self.out_path = directory / f"{name}.out"
        self.err_path = directory / f"{name}.err"
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:  # prefix: ip netns exec ...
            self.proc = subprocess.Popen([*prefix, sys.executable, "-m", "eventbus", "work", "--app", APP, *args],
                                         env=env, cwd=directory, stdout=out, stderr=err, start_new_session=True)
        self.started_at = time.monotonic()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def wait(self, timeout: float) -> int | None:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def signal(self, sig: int) -> None:
        if self.alive():
            os.kill(self.pid, sig)

    def stop(self, timeout: float = 15.0) -> int | None:
        """SIGTERM (resuming it first if frozen), then the exit status."""
        self.signal(signal.SIGCONT)
        self.signal(signal.SIGTERM)
        return self.wait(timeout)

    def children(self) -> list[int]:
        return children_of(self.pid)

    def kill(self) -> None:
        """SIGKILL this worker and every process of its session (a supervisor's children)."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5)

    def stderr(self) -> str:
        return self.err_path.read_text(errors="replace")

    def stdout(self) -> str:
        return self.out_path.read_text(errors="replace")


_FAILED_ROW = re.compile(r"^(\S+)\s.*?\d{4}-\d\d-\d\d \d\d:\d\d:\d\d  (.*)$")


class Scene:
    """One scenario's resources; closing it stops everything it started."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix=f"eventbus-chaos-{name}-"))
        self.ledger = Ledger(self.dir / "ledger.log")
        self.workers: list[Worker] = []
        self.server: servers.RedisServer | None = None  # the first Redis server the scene started
        self._stack = contextlib.ExitStack()
        self.t0 = time.monotonic()
        # the test process dispatches under the same grace as the workers (a dispatch-time check
        # of timeout + grace against retry_after then agrees with the workers' own check)
        self._grace_before = os.environ.get("EVENTBUS_TIMEOUT_GRACE")
        os.environ["EVENTBUS_TIMEOUT_GRACE"] = GRACE

    def __enter__(self) -> Scene:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for w in self.workers:
            w.kill()
        self._stack.close()
        if self._grace_before is None:
            os.environ.pop("EVENTBUS_TIMEOUT_GRACE", None)
        else:
            os.environ["EVENTBUS_TIMEOUT_GRACE"] = self._grace_before
        eventbus.configure()  # drop this scene's connections in the test process
        if not os.environ.get("CHAOS_KEEP"):
            shutil.rmtree(self.dir, ignore_errors=True)

    # -- servers --------------------------------------------------------------------------------
    def redis(self, *, aof: bool = False, name: str = "redis") -> servers.RedisServer:
        server = servers.RedisServer(self.dir / name, aof=aof).start()
        self._stack.callback(server.stop)
        self.server = self.server or server
        return server

    @property
    def redis_server(self) -> servers.RedisServer:
        assert self.server is not None, "the scene started no Redis server"
        return self.server

    def postgres(self, base_url: str) -> str:
        url: str = self._stack.enter_context(servers.fresh_pg_database(base_url))
        return url

    def sqlite(self, name: str = "queue") -> str:
        return f"sqlite:///{self.dir / (name + '.sqlite3')}"

    def proxy(self, port: int) -> Proxy:
        proxy = Proxy(port)
        self._stack.callback(proxy.close)
        return proxy

    # -- workers --------------------------------------------------------------------------------
    def env(self, target: Target, **extra: str) -> dict[str, str]:
        env = base_env()
        env.update(target.env())
        env["CHAOS_LEDGER"] = self.ledger.path
        env.update(extra)
        return env

    def worker(self, target: Target, *args: str, env: dict[str, str] | None = None, name: str = "",
               prefix: Sequence[str] = ()) -> Worker:
        w = Worker(list(args), self.env(target, **(env or {})), self.dir, name or f"worker{len(self.workers)}",
                   prefix)
        self.workers.append(w)
        return w

    def cli(self, target: Target, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "eventbus", *args], env=self.env(target),
                              cwd=self.dir, capture_output=True, text=True, timeout=timeout)

    # -- the queue and the failed store, from the test process ----------------------------------
    def dispatch(self, target: Target, jobs: Iterable[Any]) -> list[str]:
        target.configure()
        return [eventbus.dispatch(job) for job in jobs]

    def size(self, target: Target) -> int:
        target.configure()
        return eventbus.connection(CONNECTION).size()

    def failed(self, target: Target) -> dict[str, str]:
        """uuid -> the exception's ``Type: message`` line, from ``eventbus failed``."""
        result = self.cli(target, "failed")
        if result.returncode != 0:
            raise RuntimeError(f"eventbus failed exited {result.returncode}: {result.stderr.strip()}")
        records = {}
        for line in result.stdout.splitlines()[1:]:
            match = _FAILED_ROW.match(line)
            if match:
                records[match.group(1)] = match.group(2)
        return records

    def now(self) -> float:
        return time.monotonic()


@dataclasses.dataclass
class Check:
    ok: bool
    detail: str


@dataclasses.dataclass
class Result:
    """One row of the table, and the checks behind its pass or fail."""

    scenario: str
    enqueued: int = 0
    executed_once: int = 0
    lost: int = 0
    duplicated: int = 0
    stranded: int = 0
    recovery: float | None = None
    checks: dict[str, Check] = dataclasses.field(default_factory=dict)
    notes: list[str] = dataclasses.field(default_factory=list)

    def check(self, name: str, ok: bool, detail: str) -> None:
        self.checks[name] = Check(bool(ok), detail)

    def note(self, text: str) -> None:
        self.notes.append(text)

    @property
    def passed(self) -> bool:
        return all(c.ok for c in self.checks.values())

    def failures(self, names: Iterable[str] | None = None) -> list[str]:
        wanted = list(names) if names is not None else list(self.checks)
        missing = [n for n in wanted if n not in self.checks]
        if missing:
            raise KeyError(f"{self.scenario} has no check {missing} (has {sorted(self.checks)})")
        return [f"{n}: {self.checks[n].detail}" for n in wanted if not self.checks[n].ok]

    def summary(self) -> str:
        rec = "-" if self.recovery is None else "never" if self.recovery == float("inf") else f"{self.recovery:.1f}s"
        return (f"{self.scenario}: enqueued {self.enqueued}, once {self.executed_once}, lost {self.lost}, "
                f"duplicated {self.duplicated}, stranded {self.stranded}, recovery {rec}; "
                + "; ".join(self.notes))
