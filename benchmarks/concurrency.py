"""I/O-bound jobs and ``eventbus work --concurrency N``: one worker process, jobs that each wait.

    python benchmarks/concurrency.py [--jobs 1000] [--wait-ms 50] [--concurrency 50]

Queues ``--jobs`` jobs that each wait ``--wait-ms`` (an ``async def handle`` awaiting
``asyncio.sleep``, and a plain ``handle`` calling ``time.sleep``), then drains them with one worker
process at ``--concurrency 1`` and at ``--concurrency N``, on a private redis-server. The rate runs
from the first job's end to the last one's (each job increments a counter), so worker start is
excluded, as in ``peers.py``. Prints each rate and the speed-up (issue 11's target: >= 30x with 50).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import redis  # noqa: E402

import eventbus  # noqa: E402
from waiting_jobs import COUNTER, AsyncWait, SyncWait  # noqa: E402


def drain(kind: str, jobs: int, concurrency: int, url: str, wait_s: float) -> float:
    """Jobs a second from the first finished job to the last, one worker process."""
    client = redis.Redis.from_url(url)
    client.flushdb()
    job = AsyncWait if kind == "async" else SyncWait
    eventbus.dispatch_many([job() for _ in range(jobs)])
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVENTBUS_")}
    env.update({"PYTHONPATH": f"{HERE}{os.pathsep}{ROOT}", "BENCH_CONCURRENCY_URL": url,
                "BENCH_WAIT_S": str(wait_s)})
    worker = subprocess.Popen([sys.executable, "-m", "eventbus", "work", "redis", "--app", "waiting_jobs",
                               "--queue", "io", "--quiet", "--stop-when-empty", "--concurrency",
                               str(concurrency)], env=env, cwd=HERE)
    first = last = None
    while True:
        done = int(client.get(COUNTER) or 0)
        now = time.perf_counter()
        if done and first is None:
            first = (done, now)
        if done >= jobs:
            last = now
            break
        if worker.poll() is not None and int(client.get(COUNTER) or 0) < jobs:
            raise SystemExit(f"the worker exited with {worker.returncode} after {done} of {jobs} jobs")
        time.sleep(0.002)
    worker.wait(60)
    assert first is not None
    return (jobs - first[0]) / (last - first[1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--wait-ms", type=float, default=50.0)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--redis-url", help="use this database (flushed) instead of a private server")
    args = parser.parse_args()
    wait_s = args.wait_ms / 1000

    def run(url: str) -> None:
        eventbus.configure(default="redis", connections={"redis": {"driver": "redis", "url": url, "queue": "io"}})
        print(f"{args.jobs} jobs of {args.wait_ms:g} ms each, one worker process")
        print(f"{'handle':<8} {'--concurrency 1':>16} {f'--concurrency {args.concurrency}':>18} {'speed-up':>9}")
        for kind in ("async", "sync"):
            one = drain(kind, args.jobs, 1, url, wait_s)
            many = drain(kind, args.jobs, args.concurrency, url, wait_s)
            print(f"{kind:<8} {one:>14,.1f}/s {many:>16,.1f}/s {many / one:>8.1f}x")

    if args.redis_url:
        run(args.redis_url)
        return
    from peer_harness.redis_server import private_redis

    with private_redis() as url:
        run(url)


if __name__ == "__main__":
    main()
