"""beanstalkd killed with and without its binlog (issue 27 point 8, beanstalkd half).

beanstalkd keeps its jobs in memory; only ``-b <dir>`` writes them to a binlog it reads back when
it starts. Without it a ``kill -9`` (or a restart) loses every job it held: the issue counted
1,497 of 2,000. Wanted: a worker says so when it starts on a server without a binlog (as it does
for Redis without the append-only file), says nothing with one, and with ``-b`` a ``kill -9``
loses nothing.
"""

from __future__ import annotations

import dataclasses
import pathlib
import re
import shutil
import subprocess
import time

import eventbus
from chaos.apps.jobs import Work
from chaos.scene import Result, Scene, wait_until
from chaos.servers import free_port
from chaos.target import Target
from helpers import beanstalkd_reason

WARNS = re.compile(r"binlog|persist|-b\b", re.IGNORECASE)


@dataclasses.dataclass
class Beanstalkd:
    """A ``beanstalkd`` on a fixed loopback port, with a binlog directory or none."""

    binlog: pathlib.Path | None
    port: int = dataclasses.field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"beanstalk://127.0.0.1:{self.port}"

    def start(self) -> Beanstalkd:
        binary = shutil.which("beanstalkd")
        if binary is None:
            raise FileNotFoundError("beanstalkd is not installed")
        args = [binary, "-l", "127.0.0.1", "-p", str(self.port)]
        if self.binlog is not None:
            self.binlog.mkdir(parents=True, exist_ok=True)
            args += ["-b", str(self.binlog)]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not wait_until(lambda: beanstalkd_reason(self.url) is None, 10):
            raise RuntimeError(f"beanstalkd did not start on port {self.port}")
        return self

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)


def kill9(quick: bool = True) -> Result:
    """Jobs queued on beanstalkd without and with ``-b``; the server is killed with ``-9`` and
    started again; a worker drains what is left. Wanted: the worker warns at start without a
    binlog and not with one, and with ``-b`` every job survives the kill."""
    from chaos.ledger import tally

    result = Result("beanstalkd-kill9")
    jobs = 100 if quick else 2000
    with Scene(result.scenario) as scene:
        lost: dict[bool, int] = {}
        warnings: dict[bool, list[str]] = {}
        for binlog in (False, True):
            server = Beanstalkd(scene.dir / "binlog" if binlog else None).start()
            scene._stack.callback(server.stop)
            target = Target("beanstalkd", server.url, retry_after=3.0, failed_url=scene.sqlite(f"failed-{binlog}"))
            target.configure()
            uuids = [str(u) for u in eventbus.dispatch_many(Work(n, seconds=0) for n in range(jobs))]
            server.kill()
            server.start()
            w = scene.worker(target, "--stop-when-empty", "--sleep", "0.1", "--timeout", "1", name=f"binlog-{binlog}")
            w.wait(120)
            warnings[binlog] = [line for line in w.stderr().splitlines() if WARNS.search(line)]
            t = tally(uuids, scene.ledger.entries(), scene.failed(target), 0)
            lost[binlog] = t.lost
            if binlog:
                result.enqueued, result.executed_once, result.lost = t.enqueued, t.executed_once, t.lost
                result.duplicated = t.extra_runs
        result.check("warns-without-binlog", bool(warnings[False]),
                     f"stderr lines about the binlog without -b: {warnings[False]}")
        result.check("quiet-with-binlog", not warnings[True],
                     f"stderr lines about the binlog with -b: {warnings[True]}")
        result.check("binlog-keeps-jobs", lost[True] == 0, f"{lost[True]} of {jobs} jobs lost to kill -9 with -b")
        result.note(f"kill -9 lost {lost[False]} of {jobs} jobs without -b, {lost[True]} with -b; "
                    f"warning: {warnings[False][:1] or 'none'}")
    return result
