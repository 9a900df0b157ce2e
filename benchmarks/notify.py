"""Queued mail notifications delivered per second by one worker process to a local SMTP server.

    python benchmarks/notify.py [--n 3000] [--concurrency 50]

The server is aiosmtpd in a process of its own (a sink: it counts messages and keeps nothing),
so its work never shares a GIL with the benchmark or the worker. Rows, in this order:

- the sink's ceiling: bare aiosmtplib clients in this process sending the benchmark's message as
  fast as they can over 1 connection, then over 10 at once. Unless these are well above the
  worker's rate, the benchmark measures the sink, not eventbus;
- one ``eventbus work`` process draining N queued mail notifications (``bench_app.Receipt``)
  one at a time, then with ``--concurrency N``. That row is skipped, with a note, when the
  installed worker has no ``--concurrency`` option.

The rate runs from the first message the sink received to the last, so the worker's start
(imports, connecting) is left out; the rate including it is beside it. "sink busy" is the sink
process's CPU time over that span: near 100% means the sink, not the worker, set the pace.
"worker CPU" is the worker's CPU time a mail over the same span (the per-message cost).
"others" is the share of all CPUs that the rest of the machine used during the row (this
script, its worker, the sink and Redis left out); each row first waits up to 30 s for the
machine to be idle, and a row that was not is marked "contended".
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import redis  # noqa: E402

import eventbus  # noqa: E402
from _common import HERE, REDIS_URL, start_workers, worker_env  # noqa: E402
from bench_app import Customer, Receipt  # noqa: E402
from peer_harness import machine  # noqa: E402

CONTENDED = 0.2  # other work using this share of the CPUs makes a row not comparable

# The sink's counters, shared with this process: written by the sink only, read after a row.
RECEIVED, FIRST, LAST, CONNECTIONS = range(4)


class Sink:
    """aiosmtpd handler that counts messages and notes when the first and last arrived.

    Counting is all it does per message: no parsing, no logging, no storing, so aiosmtpd's own
    protocol handling is the sink's whole cost.
    """

    def __init__(self, stats: Any) -> None:
        self.stats = stats

    async def handle_DATA(self, server: object, session: object, envelope: object) -> str:
        stats = self.stats
        now = time.monotonic()  # CLOCK_MONOTONIC: the same clock in every process of this machine
        if not stats[RECEIVED]:
            stats[FIRST] = now
        stats[LAST] = now
        stats[RECEIVED] += 1
        return "250 OK"


def serve(port: int, stats: Any, ready: Any) -> None:
    """The sink process: aiosmtpd on this process's own event loop, until it is terminated."""
    from aiosmtpd.smtp import SMTP

    class CountingSMTP(SMTP):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            stats[CONNECTIONS] += 1
            super().connection_made(transport)

    async def main() -> None:
        handler = Sink(stats)
        loop = asyncio.get_running_loop()
        await loop.create_server(lambda: CountingSMTP(handler, hostname="127.0.0.1"), "127.0.0.1", port)
        ready.set()
        await asyncio.Event().wait()

    asyncio.run(main())


class SinkProcess:
    """Starts :func:`serve` in a fresh interpreter and reads its counters."""

    def __init__(self) -> None:
        context = multiprocessing.get_context("spawn")
        self.port = free_port()
        self.stats: Any = context.Array("d", 4, lock=False)  # a plain ctypes array of doubles
        ready = context.Event()
        self.process = context.Process(target=serve, args=(self.port, self.stats, ready), daemon=True)
        self.process.start()
        if not ready.wait(30):
            raise SystemExit("the SMTP sink did not start")

    def reset(self) -> None:
        """Zero the counters and start metering the machine (after waiting for it to be idle)."""
        for i in range(4):
            self.stats[i] = 0.0
        self.idle = machine.wait_for_idle(threshold=CONTENDED, max_wait_s=30)
        self.meter = machine.Meter()
        self.started = time.perf_counter()
        self.cpu_before, self.own_before = self.cpu_s(), time.process_time()

    def others(self) -> float:
        """The share of all CPUs other work used since :meth:`reset`, less this process and the sink."""
        wall_s = (time.perf_counter() - self.started) * (os.cpu_count() or 1)
        ours_s = (self.cpu_s() - self.cpu_before) + (time.process_time() - self.own_before)
        return max(0.0, self.meter.others() - ours_s / wall_s)

    def cpu_s(self) -> float:
        assert self.process.pid is not None
        return cpu_s(self.process.pid)

    def received(self) -> int:
        return int(self.stats[RECEIVED])

    def span_s(self) -> float:
        return float(self.stats[LAST] - self.stats[FIRST])

    def stop(self) -> None:
        self.process.terminate()
        self.process.join(5)


def cpu_s(pid: int) -> float:
    """A process's CPU seconds so far (user + system, from /proc: Linux only)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def receipt_bytes() -> bytes:
    """The message a Receipt notification sends, as the worker's mail channel builds it."""
    from notifications.mail.mime import build_email

    return build_email(Receipt(1).to_mail(Customer(1, "c1@example.com")), "c1@example.com",
                       "shop@example.com").as_bytes()


async def blast(port: int, n: int, connections: int, data: bytes) -> None:
    """Send ``data`` n times over ``connections`` aiosmtplib connections, as fast as they go."""
    import aiosmtplib

    async def one(count: int) -> None:
        client = aiosmtplib.SMTP(hostname="127.0.0.1", port=port)
        await client.connect()
        for _ in range(count):
            await client.sendmail("shop@example.com", ["c1@example.com"], data)
        await client.quit()

    await asyncio.gather(*(one(n // connections + (i < n % connections)) for i in range(connections)))


class Row:
    def __init__(self, label: str, n: int, sink: SinkProcess, wall_s: float | None = None,
                 worker_ms: float | None = None) -> None:
        self.label, self.n, self.worker_ms = label, n, worker_ms
        if sink.received() != n:
            raise SystemExit(f"{label}: the sink received {sink.received()} of {n} messages")
        self.span_s = sink.span_s()
        self.wall_s = wall_s
        self.connections = int(sink.stats[CONNECTIONS])
        self.sink_busy = (sink.cpu_s() - sink.cpu_before) / self.span_s if self.span_s else 0.0
        self.others = sink.others()
        self.contended = sink.idle.contended or self.others >= CONTENDED

    def __str__(self) -> str:
        rate = (self.n - 1) / self.span_s if self.span_s else float("nan")
        whole = f"{self.n / self.wall_s:>8,.0f}/s" if self.wall_s else " " * 10
        cost = f"{self.worker_ms:>8.2f} ms" if self.worker_ms is not None else " " * 11
        return (f"{self.label:<40} {rate:>8,.0f}/s  {whole}  {cost}  {self.connections:>5}  "
                f"{100 * self.sink_busy:>8.0f}%  {100 * self.others:>5.0f}%"
                + ("  contended" if self.contended else ""))


def ceiling(sink: SinkProcess, n: int, connections: int, data: bytes) -> Row:
    sink.reset()
    asyncio.run(blast(sink.port, n, connections, data))
    return Row(f"sink ceiling: aiosmtplib, {connections} connection{'s' if connections > 1 else ''}", n, sink)


def has_concurrency_option() -> bool:
    """Does the installed ``eventbus work`` take ``--concurrency``? (It is younger than this script.)"""
    env = worker_env("redis", None)
    result = subprocess.run([sys.executable, "-m", "eventbus", "work", "--help"], env=env, cwd=HERE,
                            capture_output=True, text=True)
    return "--concurrency" in result.stdout


def drain(sink: SinkProcess, n: int, concurrency: int, pool: int | None) -> Row:
    sink.reset()
    for i in range(n):
        Customer(i, f"c{i}@example.com").notify(Receipt(i))
    url = f"smtp://127.0.0.1:{sink.port}" + (f"?pool={pool}" if pool else "")
    env = worker_env("redis", None, {"EVENTBUS_MAIL_URL": url})
    options: Sequence[str] = ("--concurrency", str(concurrency)) if concurrency > 1 else ()
    started = time.perf_counter()
    [worker] = start_workers(1, env, "--stop-when-empty", *options)
    worker_ms = watch(worker, sink, n)
    if worker.wait() != 0:
        raise SystemExit(f"the worker exited with {worker.returncode}")
    wall_s = time.perf_counter() - started
    return Row(f"1 worker, concurrency {concurrency}" + (f", pool={pool}" if pool else ""), n, sink, wall_s,
               worker_ms)


def watch(worker: subprocess.Popen[bytes], sink: SinkProcess, n: int) -> float | None:
    """The worker's CPU milliseconds per mail between the first and the last mail the sink got
    (its start-up left out); None if it finished between two looks."""
    first: tuple[int, float] | None = None
    last: tuple[int, float] | None = None
    while worker.poll() is None and last is None:
        received = sink.received()
        try:
            if first is None and received:
                first = (received, cpu_s(worker.pid))
            elif first is not None and received == n:
                last = (received, cpu_s(worker.pid))
        except OSError:  # exited between poll() and the read
            break
        time.sleep(0.002)
    if first is None or last is None or last[0] == first[0]:
        return None
    return 1000 * (last[1] - first[1]) / (last[0] - first[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=3000, help="messages per row")
    parser.add_argument("--concurrency", type=int, default=50, help="the worker's --concurrency for the last row")
    parser.add_argument("--pool", type=int, default=None,
                        help="SMTP connections per event loop (the mail URL's ?pool=); default: the transport's")
    args = parser.parse_args()
    eventbus.configure(default="redis", connections={"redis": {"driver": "redis", "url": REDIS_URL}})
    redis.Redis.from_url(REDIS_URL).flushdb()
    sink = SinkProcess()
    print(f"{args.n} messages a row; aiosmtpd sink in its own process (pid {sink.process.pid})\n")
    print(f"{'':<40} {'rate':>10}  {'incl. start':>10}  {'worker CPU':>11}  {'conns':>5}  {'sink busy':>9}  "
          f"{'others':>6}")
    try:
        data = receipt_bytes()
        for connections in (1, 10):
            print(ceiling(sink, args.n, connections, data), flush=True)
        print(drain(sink, args.n, 1, args.pool), flush=True)
        if args.concurrency > 1:
            if has_concurrency_option():
                print(drain(sink, args.n, args.concurrency, args.pool), flush=True)
            else:
                print(f"1 worker, concurrency {args.concurrency}: skipped, this eventbus's `work` command has "
                      "no --concurrency option yet")
    finally:
        sink.stop()


if __name__ == "__main__":
    main()
