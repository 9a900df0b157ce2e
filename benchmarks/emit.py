"""The cost of emit(): 0, 1 and 10 sync listeners, and 1 queued listener on Redis, against a bare
blinker send as the floor.

    python benchmarks/emit.py [--n 100000]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import blinker  # noqa: E402
import redis  # noqa: E402

import eventbus  # noqa: E402
from _common import REDIS_URL  # noqa: E402
from bench_app import OrderShipped  # noqa: E402
from eventbus import emit  # noqa: E402


def per_second(n: int, fn: object) -> float:
    started = time.perf_counter()
    for i in range(n):
        fn(i)  # type: ignore[operator]
    return n / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100000)
    parser.add_argument("--queued-n", type=int, default=10000)
    args = parser.parse_args()

    signal = blinker.Signal()
    signal.connect(lambda sender, **kw: None, weak=False)
    print(f"blinker send, 1 receiver (floor)  {per_second(args.n, lambda i: signal.send(i)):>12,.0f}/s")

    event = OrderShipped(1)
    print(f"emit, 0 listeners                 {per_second(args.n, lambda i: emit(event)):>12,.0f}/s")
    eventbus.listen(OrderShipped, lambda e: None)
    print(f"emit, 1 sync listener             {per_second(args.n, lambda i: emit(event)):>12,.0f}/s")
    for _ in range(9):
        eventbus.listen(OrderShipped, lambda e: None)
    print(f"emit, 10 sync listeners           {per_second(args.n, lambda i: emit(event)):>12,.0f}/s")

    eventbus.forget(OrderShipped)
    eventbus.configure(default="redis", connections={"redis": {"driver": "redis", "url": REDIS_URL}})
    redis.Redis.from_url(REDIS_URL).flushdb()

    import emit_listeners  # noqa: F401  (registers the queued listener)

    rate = per_second(args.queued_n, lambda i: emit(OrderShipped(i)))
    print(f"emit, 1 queued listener (Redis)   {rate:>12,.0f}/s  ({eventbus.connection().size()} jobs pushed)")
    eventbus.connection().clear()


if __name__ == "__main__":
    main()
