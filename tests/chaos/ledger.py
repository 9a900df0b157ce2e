"""The ledger: every chaos job writes ``start`` and ``done`` with its uuid, attempt and pid.

It lives outside every store under test: one append-only text file, each entry a single
``os.write`` of one short line to a file opened with ``O_APPEND`` (atomic on a local file system,
so entries of concurrent workers never interleave, and a ``kill -9`` loses at most an entry that
was never written). Times are ``time.monotonic()``, one clock for every process on the machine,
which neither a clock-skew scenario (it shifts ``time.time``) nor a wall-clock step can bend.

The analysis turns the ledger, the uuids a scenario enqueued, the failed store and what is left in
the queue into the numbers the scenarios assert: executed once, lost, duplicated, stranded,
recovery.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

ENV = "CHAOS_LEDGER"
_fd: int | None = None


def record(kind: str, job: Any) -> None:
    """Append one entry for ``job`` (a running eventbus.Job with an ``n``)."""
    global _fd
    path = os.environ.get(ENV)
    if not path:
        return
    if _fd is None:
        _fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    line = f"{kind} {job.job_uuid} {getattr(job, 'n', '-')} {job.attempts} {os.getpid()} {time.monotonic():.6f}\n"
    os.write(_fd, line.encode())


@dataclasses.dataclass(frozen=True)
class Entry:
    kind: str
    uuid: str
    n: str
    attempt: int
    pid: int
    t: float


def read(path: str | os.PathLike[str]) -> list[Entry]:
    """Every complete entry, in the order written."""
    try:
        with open(path) as f:
            text = f.read()
    except FileNotFoundError:
        return []
    entries = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 6:
            entries.append(Entry(parts[0], parts[1], parts[2], int(parts[3]), int(parts[4]), float(parts[5])))
    return entries


class Ledger:
    """One scenario's ledger file, with the questions the scenarios ask of it."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)

    def entries(self) -> list[Entry]:
        return read(self.path)

    def done_counts(self) -> Counter[str]:
        return Counter(e.uuid for e in self.entries() if e.kind == "done")

    def started(self) -> set[str]:
        return {e.uuid for e in self.entries() if e.kind == "start"}

    def done(self) -> set[str]:
        return {e.uuid for e in self.entries() if e.kind == "done"}


ACK_WINDOW_S = 0.1


def in_flight(entries: Sequence[Entry], at: float, pids: Iterable[int] | None = None,
              ack_window: float = ACK_WINDOW_S) -> set[str]:
    """Jobs a fault at ``at`` may catch (run by one of ``pids``): attempts started and not done by
    then, and attempts done less than ``ack_window`` seconds before it, whose acknowledgement may
    not have reached the server yet (the ledger sees ``done``, not the delete that follows)."""
    wanted = set(pids) if pids is not None else None
    running: dict[tuple[str, int, int], Entry] = {}
    recent: set[str] = set()
    for e in entries:
        if e.t > at:
            continue
        key = (e.uuid, e.attempt, e.pid)
        if e.kind == "start":
            running[key] = e
        elif e.kind == "done":
            started = running.pop(key, None)
            if e.t > at - ack_window and (wanted is None or e.pid in wanted) and started is not None:
                recent.add(e.uuid)
    return recent | {k[0] for k, e in running.items() if wanted is None or e.pid in wanted}


def first_start_after(entries: Sequence[Entry], uuid: str, at: float) -> float | None:
    times = [e.t for e in entries if e.kind == "start" and e.uuid == uuid and e.t > at]
    return min(times) if times else None


def recovery(entries: Sequence[Entry], faults: Sequence[tuple[float, set[str]]]) -> float | None:
    """The longest wait, over every fault, from the fault to the next start of a job whose attempt
    it broke (an attempt in flight at the fault that never wrote ``done``). None when no fault
    broke an attempt; inf when a broken job never started again."""
    finished = {(e.uuid, e.attempt, e.pid) for e in entries if e.kind == "done"}
    worst: float | None = None
    for at, caught in faults:
        for uuid in caught:
            attempts = [e for e in entries if e.kind == "start" and e.uuid == uuid and e.t <= at]
            if attempts and (uuid, attempts[-1].attempt, attempts[-1].pid) in finished:
                continue  # the attempt survived the fault
            again = first_start_after(entries, uuid, at)
            wait = float("inf") if again is None else again - at
            worst = wait if worst is None else max(worst, wait)
    return worst


@dataclasses.dataclass(frozen=True)
class Tally:
    enqueued: int
    executed_once: int
    duplicated: int  # jobs done more than once
    extra_runs: int  # done entries beyond the first, over all jobs
    failed: int  # enqueued jobs that are in the failed store
    stranded: int  # jobs still in the queue when the scenario ended
    lost: int  # neither done, nor failed, nor still queued


def tally(enqueued: Sequence[str], entries: Sequence[Entry], failed: Iterable[str], stranded: int) -> Tally:
    done = Counter(e.uuid for e in entries if e.kind == "done")
    wanted = set(enqueued)
    failed_set = set(failed) & wanted
    unaccounted = [u for u in wanted if done[u] == 0 and u not in failed_set]
    return Tally(
        enqueued=len(wanted),
        executed_once=sum(1 for u in wanted if done[u] == 1),
        duplicated=sum(1 for u in wanted if done[u] > 1),
        extra_runs=sum(done[u] - 1 for u in wanted if done[u] > 1),
        failed=len(failed_set),
        stranded=stranded,
        lost=max(len(unaccounted) - stranded, 0),
    )
