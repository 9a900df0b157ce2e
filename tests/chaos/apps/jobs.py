"""Ledger jobs: each writes ``start`` when it begins and ``done`` when its work is finished.

Options travel per instance (an instance attribute wins over the class option), so one class
serves every scenario: ``Work(n, seconds=0.05, tries=20)``.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import eventbus
from chaos import ledger


class Work(eventbus.Job):
    """Sleeps ``seconds`` between its ``start`` and ``done`` entries (a well-behaved job)."""

    def __init__(self, n: int, seconds: float = 0.05, tries: int = 20, timeout: float | None = None,
                 value: Any = None, hook_seconds: float = 0.0) -> None:
        self.n = n
        self.seconds = seconds
        self.hook_seconds = hook_seconds
        self.tries = tries  # type: ignore[misc]
        if timeout is not None:
            self.timeout = timeout  # type: ignore[misc]
        if value is not None:
            self.value = value

    def handle(self) -> None:
        ledger.record("start", self)
        time.sleep(self.seconds)
        ledger.record("done", self)

    def failed(self, exc: BaseException) -> None:
        """Records the call; takes ``hook_seconds`` (a hook that sends an alert, say)."""
        ledger.record("hook", self)
        time.sleep(getattr(self, "hook_seconds", 0.0))


class Stubborn(Work):
    """Swallows the timeout interrupt: keeps going until ``seconds`` have passed, then is done."""

    def handle(self) -> None:
        ledger.record("start", self)
        deadline = time.monotonic() + self.seconds
        while time.monotonic() < deadline:
            try:
                time.sleep(min(0.02, max(deadline - time.monotonic(), 0)))
            except BaseException:  # noqa: BLE001 - the point of this job
                pass
        ledger.record("done", self)


class Boom(Work):
    """Raises ``ValueError("boom N")`` on every attempt."""

    def handle(self) -> None:
        ledger.record("start", self)
        raise ValueError(f"boom {self.n}")


class BlackholeAfterDone(Work):
    """Finishes its work, then black-holes the proxy between its worker and Redis
    (``CHAOS_PROXY_CONTROL``): the acknowledgement that follows goes nowhere."""

    def handle(self) -> None:
        super().handle()
        from chaos.proxy import send_command

        if self.attempts == 1:  # the fault once; a second run (the duplicate) just works
            send_command(os.environ["CHAOS_PROXY_CONTROL"], "blackhole")


class FreezeServerAfterDone(Work):
    """Finishes its work, then SIGSTOPs the Redis server (``CHAOS_REDIS_PID``) before returning."""

    def handle(self) -> None:
        super().handle()
        if self.attempts == 1:
            os.kill(int(os.environ["CHAOS_REDIS_PID"]), signal.SIGSTOP)


class FailsFirst(Work):
    """Works ``seconds``, then raises on its first attempt; later attempts work ``later_seconds``
    and are done."""

    def __init__(self, n: int, seconds: float = 0.05, tries: int = 20, later_seconds: float | None = None) -> None:
        super().__init__(n, seconds=seconds, tries=tries)
        self.later_seconds = seconds if later_seconds is None else later_seconds

    def handle(self) -> None:
        ledger.record("start", self)
        if self.attempts == 1:
            time.sleep(self.seconds)
            raise RuntimeError(f"first attempt of {self.n}")
        time.sleep(self.later_seconds)
        ledger.record("done", self)


class UniqueWork(Work):
    """A unique job (one per ``n`` waiting or running at a time)."""

    unique = True

    def unique_id(self) -> str:
        return str(self.n)


class Callback(Work):
    """A batch callback: writes ``kind`` (``then``, ``finally``) for batch ``n`` to the ledger."""

    def __init__(self, n: int, kind: str) -> None:
        super().__init__(n, seconds=0.0)
        self.kind = kind

    def handle(self) -> None:
        ledger.record(self.kind, self)
