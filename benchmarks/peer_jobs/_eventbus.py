"""The eventbus calls the benchmark makes, through the public API only."""

from __future__ import annotations

from collections.abc import Sequence

import eventbus

#: The concurrency settings tried besides the defaults (prefetch 32, one job at a time).
SETTINGS = {"--concurrency 4": ("--concurrency", "4"), "--prefetch 128": ("--prefetch", "128")}


def dispatch_many(jobs: Sequence[eventbus.Job]) -> None:
    """Push many jobs in one go, through the public bulk API."""
    eventbus.dispatch_many(jobs)


def version() -> str:
    import importlib.metadata  # here, not at the top: the workers import this module, and the
    # 10 ms it takes would count in eventbus's start-up

    return importlib.metadata.version("eventbus")


def worker_command(python: str, connection: str, app: str, processes: int, *, burst: bool,
                   setting: Sequence[str] | None = None) -> list[str]:
    """``eventbus work`` with N processes and the options ``setting``; ``burst`` adds
    --stop-when-empty."""
    command = [python, "-m", "eventbus", "work", connection, "--app", app, "--queue", "bench",
               "--processes", str(processes), "--quiet", *(setting or ())]
    return command + (["--stop-when-empty"] if burst else [])
