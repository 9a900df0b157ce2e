"""``eventbus work --processes N`` forks its children from the supervisor after it imported the
app (eventbus/supervisor.py), on Redis and on SQLite; ``--spawn`` and EVENTBUS_WORKER_START=spawn
start them afresh, as before."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest
import redis
from apps import forked
from helpers import REDIS_URL, children_of, wait_for, wait_until_catching

import eventbus
from eventbus.monitoring.status import workers_of

pytestmark = pytest.mark.integration


class Pool:
    """``eventbus work --app apps.forked --processes 2`` in a subprocess, and the files its app writes."""

    def __init__(self, env: dict[str, str], tmp: pathlib.Path, *args: str) -> None:
        self.imports, self.ran, self.exits = tmp / "imports.log", tmp / "ran.log", tmp / "exits.log"
        self.prepared = tmp / "prepared.log"
        #: What the supervisor and its children log: a file, never a pipe nobody reads (a full pipe
        #: would stop them), and shown when a wait fails (:meth:`log`).
        self.errors = tmp / "pool.err"
        self._errors = self.errors.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "eventbus", "work", "--app", "apps.forked", "--processes", "2",
             "--sleep", "0.1", "--prefetch", "1", "--quiet", *args],
            env={**env, "IMPORTS": str(self.imports), "RAN": str(self.ran), "EXITS": str(self.exits),
                 "PREPARED": str(self.prepared),
                 "EVENTBUS_MONITOR_INTERVAL": "0.3"},
            stdout=subprocess.DEVNULL, stderr=self._errors, text=True, start_new_session=True)

    def log(self) -> str:
        """The last lines the supervisor and its children logged."""
        return "\n".join(self.errors.read_text().splitlines()[-30:]) if self.errors.exists() else ""

    def imported_by(self) -> list[int]:
        return [int(line) for line in self.imports.read_text().split()] if self.imports.exists() else []

    def prepared_by(self) -> list[int]:
        """The processes that loaded what the children need before forking them."""
        return [int(line) for line in self.prepared.read_text().split()] if self.prepared.exists() else []

    def exited(self) -> list[int]:
        """The processes that ran the atexit handler the app registered at import."""
        return [int(line) for line in self.exits.read_text().split()] if self.exits.exists() else []

    def runs(self) -> list[tuple[int, int, int]]:
        """(n, pid, parent pid) of each job run so far."""
        if not self.ran.exists():
            return []
        return [(int(n), int(pid), int(ppid)) for n, pid, ppid in
                (line.split() for line in self.ran.read_text().splitlines())]

    def children(self) -> list[int]:
        return children_of(self.proc.pid)

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(30)
        finally:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
            self._errors.close()



@pytest.fixture(params=["redis", "sqlite"])
def backend(request: pytest.FixtureRequest, redis_client: redis.Redis, worker_env: dict[str, str],
            tmp_path: pathlib.Path) -> Iterator[tuple[str, dict[str, str]]]:
    """(the connection's name, the workers' environment) with the test process configured alike."""
    if request.param == "redis":
        eventbus.configure(default="redis",
                           connections={"redis": {"driver": "redis", "url": REDIS_URL, "block_for": 1}})
        yield "redis", worker_env
        return
    url = f"sqlite:///{tmp_path / 'queue.sqlite3'}"
    eventbus.configure(default="database", connections={"database": {"driver": "database", "url": url}})
    yield "database", {**worker_env, "EVENTBUS_CONNECTION": "database", "TEST_DB_URL": url}


def run_jobs_until_both_children_ran_one(pool: Pool, first: int) -> None:
    """Jobs that take a while, so that each child takes some, until two pids ran one."""
    n = first
    for _ in range(40):
        for n in range(n, n + 4):
            forked.WhoRuns(n, sleep=0.2).dispatch()
        n += 1
        try:
            wait_for(lambda: len({pid for m, pid, _ in pool.runs() if m >= first}) == 2, timeout=2)
            return
        except AssertionError:
            continue
    raise AssertionError(f"the two children did not both run a job: {pool.runs()}")


def test_children_are_forked_after_the_app_is_imported(backend: tuple[str, dict[str, str]],
                                                        tmp_path: pathlib.Path) -> None:
    connection, env = backend
    pool = Pool(env, tmp_path)
    try:
        wait_for(lambda: len(pool.children()) == 2, timeout=20)
        run_jobs_until_both_children_ran_one(pool, 0)
        assert pool.imported_by() == [pool.proc.pid]  # the supervisor's import, and no other
        assert pool.prepared_by() == [pool.proc.pid]  # the children's scripts and modules, loaded once
        ran_in = {(pid, parent) for _, pid, parent in pool.runs()}
        assert {pid for pid, _ in ran_in} <= set(pool.children())
        assert {parent for _, parent in ran_in} == {pool.proc.pid}
        wait_for(lambda: len(workers_of(connection)) == 2, timeout=20)
        registered = workers_of(connection)  # each child's worker under its own name and pid
        assert sorted(w.name for w in registered) == ["default-1", "default-2"]
        assert sorted(w.pid for w in registered) == pool.children()
        children = pool.children()
    finally:
        code = pool.stop()
    assert code == 0
    assert pool.children() == []
    # each exits as an interpreter does: the handlers the app registered at import run in it
    assert sorted(pool.exited()) == sorted([pool.proc.pid, *children])


def test_a_killed_child_is_replaced_by_a_new_fork(backend: tuple[str, dict[str, str]],
                                                   tmp_path: pathlib.Path) -> None:
    _, env = backend
    pool = Pool(env, tmp_path)
    try:
        wait_for(lambda: len(pool.children()) == 2, timeout=20)
        first = pool.children()
        for child in first:
            wait_until_catching(child, signal.SIGTERM)  # its worker runs
            os.kill(child, signal.SIGKILL)
        wait_for(lambda: len(pool.children()) == 2 and not set(pool.children()) & set(first), timeout=20)
        run_jobs_until_both_children_ran_one(pool, 0)
        assert {pid for _, pid, _ in pool.runs()} <= set(pool.children())  # only the new children
        assert pool.imported_by() == [pool.proc.pid]  # the new forks imported nothing either
    finally:
        assert pool.stop() == 0


@pytest.mark.parametrize("how", [("--spawn",), ("env",)], ids=["--spawn", "EVENTBUS_WORKER_START"])
def test_spawn_starts_each_child_afresh(use_redis: redis.Redis, worker_env: dict[str, str],
                                        tmp_path: pathlib.Path, how: tuple[str, ...]) -> None:
    env = {**worker_env, "EVENTBUS_WORKER_START": "spawn"} if how == ("env",) else worker_env
    pool = Pool(env, tmp_path, *(a for a in how if a != "env"))
    try:
        wait_for(lambda: len(pool.children()) == 2, timeout=20)
        run_jobs_until_both_children_ran_one(pool, 0)
        assert sorted(pool.imported_by()) == sorted([pool.proc.pid, *pool.children()])
        assert {parent for _, _, parent in pool.runs()} == {pool.proc.pid}
    finally:
        assert pool.stop() == 0


def test_a_bad_worker_start_is_a_usage_error(worker_env: dict[str, str]) -> None:
    done = subprocess.run([sys.executable, "-m", "eventbus", "work", "--processes", "2"],
                          env={**worker_env, "EVENTBUS_WORKER_START": "thread"}, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().endswith(
        "eventbus: error: EVENTBUS_WORKER_START must be one of fork, spawn, not 'thread'")


def test_after_eventbus_restart_children_start_afresh_with_the_code_deployed(
        use_redis: redis.Redis, worker_env: dict[str, str], tmp_path: pathlib.Path) -> None:
    """A restart follows a deploy: children forked from the supervisor would run the code it
    imported before, so the children that replace those told to restart import the app anew."""
    from eventbus import control
    pool = Pool(worker_env, tmp_path)
    try:
        wait_for(lambda: len(pool.children()) == 2, timeout=20)
        forked_children = pool.children()
        for child in forked_children:
            wait_until_catching(child, signal.SIGTERM)
        control.restart()
        try:
            wait_for(lambda: len(pool.children()) == 2 and not set(pool.children()) & set(forked_children),
                     timeout=30)
        except AssertionError:
            raise AssertionError(f"children {pool.children()} (forked ones {forked_children}); "
                                 f"the pool logged:\n{pool.log()}") from None
        wait_for(lambda: len(pool.imported_by()) == 3, timeout=30)
        assert sorted(pool.imported_by()) == sorted([pool.proc.pid, *pool.children()])
        run_jobs_until_both_children_ran_one(pool, 0)
    finally:
        assert pool.stop() == 0
