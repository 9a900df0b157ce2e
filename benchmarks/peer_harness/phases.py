"""The measurements, the same for every peer: bulk, dispatch one call per job (and the Redis memory
the queued jobs take), drain, idle latency, and the async I/O drain.

Every figure is jobs (or seconds, or bytes) measured in the harness process against the peer's
``Peer`` object (see ``peer_jobs``); the job is one INCR (Redis) or one UPDATE (PostgreSQL) of a
counter, and the counter is how the harness sees jobs run.
"""

from __future__ import annotations

import pathlib
import statistics
import time
from collections.abc import Sequence
from typing import Any

from peer_harness.workers import Workers

POLL_S = 0.005
FIRST_POLL_S = 0.001  # finer until the first job: the time to it is a figure of its own
STALL_S = 60.0


class PhaseError(Exception):
    """A phase could not be measured; the message is one line for the table."""


def warm_up(peer: Any, n: int = 20) -> None:
    """A few jobs through each way in, untimed, then a clean slate: the first call of a client
    loads its scripts and opens its connections, which no phase should pay for (flushing the
    database keeps the scripts)."""
    peer.reset()
    peer.dispatch(n)
    if hasattr(peer, "bulk"):
        peer.bulk(n)
    peer.reset()


def bulk(peer: Any, n: int) -> float:
    """Jobs a second through the peer's bulk API (building the jobs included)."""
    peer.reset()
    started = time.perf_counter()
    peer.bulk(n)
    elapsed = time.perf_counter() - started
    peer.reset()
    return n / elapsed


def dispatch(peer: Any, n: int) -> tuple[float, tuple[float, float, float] | None]:
    """(jobs a second with one enqueue call per job, the Redis memory a queued job takes).

    Leaves the n jobs queued for ``drain``. The memory (None on PostgreSQL) is three figures a
    job: the growth of the server's ``used_memory`` (``INFO memory``) over the n jobs, divided by
    n (the payload and whatever index, hash or stream entry the peer keeps for a waiting job:
    what the table shows); the same from ``MEMORY USAGE`` summed over every key, as a cross-check;
    and the keys a job adds."""
    peer.reset()
    before = used_memory(peer)
    started = time.perf_counter()
    peer.dispatch(n)
    rate = n / (time.perf_counter() - started)
    if before is None:
        return rate, None
    after = int(peer.redis.info("memory")["used_memory"])
    keys = peer.redis.dbsize()
    return rate, ((after - before) / n, keys_memory(peer) / n, keys / n)


def used_memory(peer: Any) -> int | None:
    if getattr(peer, "backend", "") != "redis":
        return None
    return int(peer.redis.info("memory")["used_memory"])


def keys_memory(peer: Any) -> int:
    """``MEMORY USAGE`` of every key, summed (``SAMPLES 0``: every element counted)."""
    total, pipe = 0, peer.redis.pipeline(transaction=False)
    for key in peer.redis.scan_iter(count=1000):
        pipe.memory_usage(key, samples=0)
    for used in pipe.execute():
        total += int(used or 0)
    return total


def drain(peer: Any, n: int, commands: Sequence[Sequence[str]],
          logdir: pathlib.Path) -> tuple[float, float, float, int]:
    """(jobs a second without worker start, jobs a second with it, seconds from launch to the
    first job, jobs run more than once) for the workers ``commands``.

    The queue already holds n jobs. The workers are started on it and the counter is polled: the
    first rate runs from the first INCR seen to the last, so importing and connecting is not
    counted; the second from starting the processes to the last INCR. A counter short of n fails
    the phase (a job lost); one beyond n is reported (a job run twice), not hidden.
    """
    launched = time.perf_counter()
    workers = Workers(commands, logdir)
    try:
        first_count, first_at = _wait_for(lambda c: c > 0, peer, workers, n, FIRST_POLL_S)
        _, last_at = _wait_for(lambda c: c >= n, peer, workers, n, POLL_S)
        if getattr(peer, "burst", False):
            workers.wait(timeout_s=10.0)  # let a burst-mode worker exit by itself
    finally:
        workers.stop()
    time.sleep(0.2)
    if (final := peer.count()) < n:
        raise PhaseError(f"counter is {final} after {n} jobs")
    peer.reset()
    if last_at <= first_at:
        raise PhaseError(f"all {n} jobs ran between two polls: give it more jobs")
    return (n - first_count) / (last_at - first_at), n / (last_at - launched), first_at - launched, final - n


def refill(peer: Any, n: int) -> None:
    """Queue n jobs again for another drain (untimed), through ``bulk`` where the peer has one."""
    peer.reset()
    if hasattr(peer, "bulk"):
        peer.bulk(n)
    else:
        peer.dispatch(n)


def async_io(peer: Any, n: int, logdir: pathlib.Path) -> tuple[float, int]:
    """(jobs a second, jobs run twice), start excluded, of one worker process at the peer's concurrency-50 setting
    draining n jobs that each await 50 ms (and then INCR the counter)."""
    peer.reset()
    peer.enqueue_waits(n)
    rate, _, _, twice = drain(peer, n, peer.worker_commands(1, burst=True, setting=peer.async_setting), logdir)
    return rate, twice


def _wait_for(done: Any, peer: Any, workers: Workers, n: int, poll_s: float) -> tuple[int, float]:
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
        time.sleep(poll_s)


def latency(peer: Any, samples: int, logdir: pathlib.Path, *, gap_s: float = 0.02) -> tuple[float, float]:
    """(p50, p99) seconds from the enqueue call to the job running, one job at a time into one
    idle worker process at the peer's default settings (the job pushes its start time to a Redis
    list). A peer whose enqueue happens in another process (BullMQ for Node) returns the moment
    it made the call, so the pipe to it is not counted."""
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
            sent = peer.enqueue_stamp() or sent
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
