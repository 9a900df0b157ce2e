"""Queued mail notifications delivered per second to a local SMTP server (aiosmtpd), with 1 and 2
worker processes, SMTP connection reuse on and off.

    python benchmarks/notify.py [--n 2000]
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import redis  # noqa: E402
from aiosmtpd.controller import Controller  # noqa: E402

import eventbus  # noqa: E402
from _common import REDIS_URL, rate, start_workers, worker_env  # noqa: E402
from bench_app import Customer, Receipt  # noqa: E402


class Counter:
    def __init__(self) -> None:
        self.received = 0
        self.sessions: set[int] = set()

    async def handle_DATA(self, server: object, session: object, envelope: object) -> str:
        self.received += 1
        self.sessions.add(session.peer)  # one peer address per TCP connection
        return "250 OK"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(n: int, processes: int, reuse: bool, port: int, counter: Counter) -> tuple[float, int]:
    counter.received, counter.sessions = 0, set()
    customers = [Customer(i, f"c{i}@example.com") for i in range(n)]
    for customer in customers:
        customer.notify(Receipt(customer.id))
    env = worker_env("redis", None, {"EVENTBUS_MAIL_URL": f"smtp://127.0.0.1:{port}?reuse={int(reuse)}"})
    started = time.perf_counter()
    for w in start_workers(processes, env, "--stop-when-empty"):
        w.wait()
    elapsed = time.perf_counter() - started
    assert counter.received == n, f"{counter.received} of {n} delivered"
    return elapsed, len(counter.sessions)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    args = parser.parse_args()
    eventbus.configure(default="redis", connections={"redis": {"driver": "redis", "url": REDIS_URL}})
    redis.Redis.from_url(REDIS_URL).flushdb()
    counter = Counter()
    port = free_port()
    controller = Controller(counter, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        for reuse in (True, False):
            for processes in (1, 2):
                seconds, sessions = run(args.n, processes, reuse, port, counter)
                print(f"reuse {'on ' if reuse else 'off'}, {processes} worker process{'es' if processes > 1 else '  '}"
                      f"  {rate(args.n, seconds)}  {sessions} SMTP session(s)")
    finally:
        controller.stop()


if __name__ == "__main__":
    main()
