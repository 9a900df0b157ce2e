"""Is the machine idle enough to measure? A CPU sample from /proc/stat and the load average.

A figure taken while something else keeps the CPUs busy is not comparable with the others: the
harness waits a while for the machine to calm down before each run, meters what the rest of the
machine used during the run, and marks the run as contended if either was over the threshold.
"""

from __future__ import annotations

import dataclasses
import glob
import os
import resource
import time


@dataclasses.dataclass(frozen=True)
class Sample:
    busy: float  # fraction of all CPUs busy during the sample, 0..1
    load1: float
    contended: bool

    def describe(self) -> str:
        return f"CPU {self.busy:.0%} busy, load {self.load1:.2f}"


def _cpu_times() -> tuple[int, int]:
    """(idle, total) jiffies over all CPUs."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return idle, sum(fields[:8])


def cpu_busy(seconds: float = 1.0) -> float:
    """The fraction of all CPUs busy over the next ``seconds`` (0.0 where /proc/stat is missing)."""
    try:
        idle0, total0 = _cpu_times()
        time.sleep(seconds)
        idle1, total1 = _cpu_times()
    except OSError:
        return 0.0
    total = total1 - total0
    return 0.0 if total <= 0 else 1.0 - (idle1 - idle0) / total


def wait_for_idle(*, threshold: float = 0.2, max_wait_s: float = 60.0) -> Sample:
    """Sample the CPUs until they are below ``threshold`` busy, for at most ``max_wait_s``.

    The load average is reported but not decided on: it lags by a minute and so still counts the
    previous benchmark run.
    """
    deadline = time.monotonic() + max_wait_s
    while True:
        busy = cpu_busy()
        if busy < threshold or time.monotonic() >= deadline:
            return Sample(busy, os.getloadavg()[0], contended=busy >= threshold)


SERVERS = ("postgres", "redis-server")


def _server_jiffies() -> int:
    """CPU time of every Redis and PostgreSQL server process (they work for the benchmark)."""
    total = 0
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(stat) as f:
                text = f.read()
        except OSError:
            continue
        comm, rest = text[text.index("(") + 1:text.rindex(")")], text[text.rindex(")") + 2:].split()
        if comm in SERVERS:
            total += int(rest[11]) + int(rest[12])  # utime, stime
    return total


def _children_jiffies() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * os.sysconf("SC_CLK_TCK")


class Meter:
    """How much CPU the rest of the machine took while a run went on: all busy time, less this
    process's finished children (the run, its workers) and the database servers."""

    def __init__(self) -> None:
        self.start = (_cpu_times(), _children_jiffies(), _server_jiffies())

    def others(self) -> float:
        """The fraction of all CPUs used by other work since the meter was made."""
        (idle0, total0), children0, servers0 = self.start
        idle1, total1 = _cpu_times()
        total = total1 - total0
        if total <= 0:
            return 0.0
        busy = total - (idle1 - idle0)
        ours = (_children_jiffies() - children0) + (_server_jiffies() - servers0)
        return max(0.0, (busy - ours) / total)
