"""The measurements, the same for every peer: bulk, dispatch one call per job, drain, idle latency.

Every figure is jobs (or seconds) measured in the harness process against the peer's ``Peer``
object (see ``peer_jobs``); the job is one INCR (Redis) or one UPDATE (PostgreSQL) of a counter,
and the counter is how the harness sees jobs run.
"""

from __future__ import annotations

import pathlib
import statistics
import time
from typing import Any

from peer_harness.workers import Workers

POLL_S = 0.005
STALL_S = 60.0


class PhaseError(Exception):
    """A phase could not be measured; the message is one line for the table."""


def bulk(peer: Any, n: int) -> float:
    """Jobs a second through the peer's bulk API (building the jobs included)."""
    peer.reset()
    started = time.perf_counter()
    peer.bulk(n)
    elapsed = time.perf_counter() - started
    peer.reset()
    return n / elapsed


def dispatch(peer: Any, n: int) -> float:
    """Jobs a second, one enqueue call per job. Leaves the n jobs queued for ``drain``."""
    peer.reset()
    started = time.perf_counter()
    peer.dispatch(n)
    return n / (time.perf_counter() - started)


def drain(peer: Any, n: int, processes: int, logdir: pathlib.Path) -> tuple[float, float]:
    """(jobs a second without worker start, jobs a second with it) for ``processes`` workers.

    The queue already holds n jobs. The workers are started on it and the counter is polled: the
    first rate runs from the first INCR seen to the last, so importing and connecting is not
    counted; the second from starting the processes to the last INCR.
    """
    launched = time.perf_counter()
    workers = Workers(peer.worker_commands(processes, burst=True), logdir)
    try:
        first_count, first_at = _wait_for(lambda c: c > 0, peer, workers, n)
        _, last_at = _wait_for(lambda c: c >= n, peer, workers, n)
        if getattr(peer, "burst", False):
            workers.wait(timeout_s=10.0)  # let a burst-mode worker exit by itself
    finally:
        workers.stop()
    time.sleep(0.2)
    if (final := peer.count()) != n:
        raise PhaseError(f"counter is {final} after {n} jobs")
    peer.reset()
    return (n - first_count) / (last_at - first_at), n / (last_at - launched)


def _wait_for(done: Any, peer: Any, workers: Workers, n: int) -> tuple[int, float]:
    """Poll the counter until ``done(count)``; fail when it stops moving or the workers die."""
    last, moved_at = -1, time.monotonic()
    while True:
        count = peer.count()
        now = time.perf_counter()
        if done(count):
            return count, now
        if count != last:
            last, moved_at = count, time.monotonic()
        elif time.monotonic() - moved_at > STALL_S:
            raise PhaseError(f"stalled at {count}/{n}: {workers.last_words()}")
        elif workers.all_exited() and peer.count() == count:
            raise PhaseError(f"workers exited at {count}/{n}: {workers.last_words()}")
        time.sleep(POLL_S)


def latency(peer: Any, samples: int, logdir: pathlib.Path, *, gap_s: float = 0.02) -> tuple[float, float]:
    """(p50, p99) seconds from the enqueue call to the job running, one job at a time into one
    idle worker process (the job pushes its start time to a Redis list)."""
    peer.reset()
    workers = Workers(peer.worker_commands(1, burst=False), logdir)
    try:
        for i in range(3):  # the first waits for the worker to start
            peer.enqueue_stamp()
            if peer.next_stamp(60.0 if i == 0 else 10.0) is None:
                raise PhaseError(f"no job ran: {workers.last_words()}")
        values = []
        for _ in range(samples):
            time.sleep(gap_s)
            sent = time.time()
            peer.enqueue_stamp()
            ran = peer.next_stamp(10.0)
            if ran is None:
                raise PhaseError(f"a job did not run within 10 s: {workers.last_words()}")
            values.append(ran - sent)
    finally:
        workers.stop()
    peer.reset()
    return percentile(values, 50), percentile(values, 99)


def percentile(values: list[float], p: float) -> float:
    if p == 50:
        return statistics.median(values)
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p / 100))]
