"""Shared benchmark plumbing: connections, worker processes, timing."""

from __future__ import annotations

import os
import pathlib
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
REDIS_URL = os.environ.get("BENCH_QUEUE_REDIS_URL", "redis://127.0.0.1:6379/13")


def worker_env(connection: str, db_url: str | None, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVENTBUS_")}
    env.update({"PYTHONPATH": f"{HERE}{os.pathsep}{ROOT}", "EVENTBUS_CONNECTION": connection,
                "EVENTBUS_REDIS_URL": REDIS_URL})
    if db_url:
        env["BENCH_DB_URL"] = db_url
    env.update(extra or {})
    return env


def start_workers(n: int, env: dict[str, str], *args: str) -> list[subprocess.Popen[bytes]]:
    cmd = [sys.executable, "-m", "eventbus", "work", "--app", "bench_app", "--quiet", "--sleep", "0.05", *args]
    return [subprocess.Popen(cmd, env=env, cwd=HERE) for _ in range(n)]


def rate(count: int, seconds: float) -> str:
    return f"{count / seconds:>10,.0f}/s  ({count} in {seconds:.2f}s)"


def percentiles(values: Sequence[float]) -> tuple[float, float]:
    ordered = sorted(values)
    p50 = statistics.median(ordered)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return p50, p99


def timed(fn: object) -> float:
    started = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - started
