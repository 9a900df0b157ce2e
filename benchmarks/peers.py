"""eventbus against RQ and Dramatiq on the same Redis, same machine, same no-op job.

    pip install rq dramatiq && python benchmarks/peers.py [--jobs 10000]

Each library enqueues N jobs one by one, then one worker process drains them (RQ's SimpleWorker,
which does not fork per job; Dramatiq with one process, one thread and with its default eight;
eventbus work --stop-when-empty). Drain time includes starting the worker process. The peers are
not dependencies of eventbus: install them to run this.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import redis  # noqa: E402

from _common import HERE, REDIS_URL, rate, start_workers, timed, worker_env  # noqa: E402

PEER_URL = "redis://127.0.0.1:6379/12"


def bench_eventbus(n: int) -> tuple[float, float]:
    import eventbus
    from bench_app import Noop

    eventbus.configure(default="redis", connections={"redis": {"driver": "redis", "url": REDIS_URL}})
    redis.Redis.from_url(REDIS_URL).flushdb()
    enqueue = timed(lambda: [Noop().dispatch() for _ in range(n)])
    env = worker_env("redis", None)
    drain = timed(lambda: [w.wait() for w in start_workers(1, env, "--stop-when-empty")])
    assert eventbus.connection().size() == 0
    return enqueue, drain


def bench_rq(n: int) -> tuple[float, float]:
    from rq import Queue

    from peer_tasks import rq_noop

    conn = redis.Redis.from_url(PEER_URL)
    conn.flushdb()
    q = Queue("bench", connection=conn)
    enqueue = timed(lambda: [q.enqueue(rq_noop) for _ in range(n)])
    env = {**os.environ, "PYTHONPATH": str(HERE)}
    drain = timed(lambda: subprocess.run(
        ["rq", "worker", "--burst", "--worker-class", "rq.worker.SimpleWorker", "--url", PEER_URL,
         "--quiet", "bench"], env=env, cwd=HERE, check=True, capture_output=True))
    assert len(q) == 0
    return enqueue, drain


def bench_dramatiq(n: int, threads: int = 1) -> tuple[float, float]:
    from peer_tasks import dramatiq_noop

    conn = redis.Redis.from_url(PEER_URL)
    conn.flushdb()
    enqueue = timed(lambda: [dramatiq_noop.send() for _ in range(n)])
    env = {**os.environ, "PYTHONPATH": str(HERE)}
    started = time.perf_counter()
    proc = subprocess.Popen(["dramatiq", "peer_tasks", "--processes", "1", "--threads", str(threads)], env=env, cwd=HERE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # Dramatiq has no burst mode: wait until its queue and in-flight set are empty.
    while conn.llen("dramatiq:default") or conn.hlen("dramatiq:default.msgs"):
        time.sleep(0.01)
    drain = time.perf_counter() - started
    proc.terminate()
    proc.wait()
    return enqueue, drain


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=10000)
    args = parser.parse_args()
    print(f"{args.jobs} no-op jobs, Redis on loopback, one worker process")
    benches = (("eventbus", bench_eventbus), ("rq (SimpleWorker)", bench_rq),
               ("dramatiq, 1 thread", bench_dramatiq),
               ("dramatiq, 8 threads", lambda n: bench_dramatiq(n, threads=8)))
    for name, bench in benches:
        enqueue, drain = bench(args.jobs)  # type: ignore[operator]
        print(f"{name:20} enqueue {rate(args.jobs, enqueue)}   drain {rate(args.jobs, drain)}")


if __name__ == "__main__":
    main()
