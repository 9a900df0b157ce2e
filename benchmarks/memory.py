"""A worker's resident memory over many jobs: does it grow?

    python benchmarks/memory.py                      # 100,000 no-op jobs on Redis (db 13)
    python benchmarks/memory.py --jobs 20000 --every 2000
    python benchmarks/memory.py --backlog --jobs 1000000 --every 100000

One worker process (``eventbus work --quiet``) drains jobs pushed in chunks while this script
keeps the queue fed; after every ``--every`` jobs it reads the worker's RSS from
``/proc/PID/status`` and prints the curve: jobs done, RSS, growth since the first reading (taken
after a warm-up, once imports and connection pools exist). Issue 11's target is less than 5 MB of
growth over 100,000 jobs.

``--backlog`` queues every job first, with ``dispatch_many`` in calls of 10,000, and says what
the backlog takes in Redis (``used_memory``, a job); then the worker starts on it and drains it,
the curve read the same way (issue 29: a backlog of 1,000,000 jobs drained with the worker's RSS
flat).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import redis  # noqa: E402

import eventbus  # noqa: E402
from _common import REDIS_URL, start_workers, worker_env  # noqa: E402
from bench_app import Noop  # noqa: E402

CHUNK = 2000
BACKLOG_CHUNK = 10_000


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--every", type=int, default=10_000, help="jobs between two readings")
    parser.add_argument("--warm-up", type=int, default=2_000, help="jobs before the first reading")
    parser.add_argument("--backlog", action="store_true",
                        help="queue every job before the worker starts, then drain them")
    args = parser.parse_args()

    eventbus.configure(default="redis", connections={"redis": {"driver": "redis", "url": REDIS_URL}})
    redis.Redis.from_url(REDIS_URL).flushdb()
    if args.backlog:
        return drain_backlog(args.warm_up + args.jobs, args.warm_up, args.every)
    queue = eventbus.connection()
    total = args.warm_up + args.jobs
    pushed = 0

    def keep_fed() -> int:
        nonlocal pushed
        waiting = queue.size()
        done = pushed - waiting
        if pushed < total and waiting < CHUNK:
            n = min(CHUNK, total - pushed)
            eventbus.dispatch_many(Noop() for _ in range(n))
            pushed += n
        return done

    return follow(keep_fed, total, args.warm_up, args.every)


def drain_backlog(total: int, warm_up: int, every: int) -> int:
    """Queue ``total`` jobs, then let one worker drain them, reading its RSS as it goes."""
    client = redis.Redis.from_url(REDIS_URL)
    queue = eventbus.connection()
    before = int(client.info("memory")["used_memory"])
    started = time.monotonic()
    for pushed in range(0, total, BACKLOG_CHUNK):
        eventbus.dispatch_many(Noop() for _ in range(min(BACKLOG_CHUNK, total - pushed)))
    took = time.monotonic() - started
    held = int(client.info("memory")["used_memory"]) - before
    print(f"queued {total:,} jobs with dispatch_many in {took:.1f}s ({total / took:,.0f}/s); "
          f"Redis holds {held / 2**20:,.1f} MB more, {held / total:,.0f} B a job", flush=True)
    return follow(lambda: total - queue.size(), total, warm_up, every)


def follow(step: Callable[[], int], total: int, warm_up: int, every: int) -> int:
    """Start one worker and call ``step`` (the jobs done so far; it may feed the queue) until
    ``total`` are done, printing the worker's RSS every ``every`` jobs after ``warm_up``."""
    [worker] = start_workers(1, worker_env("redis", None))
    readings: list[tuple[int, float]] = []
    next_reading = warm_up
    started = time.monotonic()
    try:
        while True:
            done = step()
            if done >= next_reading:
                readings.append((done, rss_mb(worker.pid)))
                print(f"{done:>9,} jobs   RSS {readings[-1][1]:7.1f} MB   growth "
                      f"{readings[-1][1] - readings[0][1]:+6.1f} MB", flush=True)
                next_reading += every
            if done >= total:
                break
            if worker.poll() is not None:
                print(f"the worker exited with {worker.returncode}")
                return 1
            time.sleep(0.02)
    finally:
        worker.terminate()
        worker.wait(10)
    growth = readings[-1][1] - readings[0][1]
    said = "met" if growth < 5 else "NOT met"
    print(f"\n{total - warm_up:,} jobs after the warm-up in {time.monotonic() - started:.0f}s: RSS grew "
          f"{growth:+.1f} MB (target < 5 MB: {said})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
