"""Ledger jobs for the batch scenarios: members that write ``start``/``done`` (or fail), and
callbacks that write ``start``/``done`` under a name saying whose callback they are.

A member's ``n`` is ``<batch>.<index>``; a callback's is ``<batch>:<kind>`` (``7:then``), so the
analysis groups the ledger by batch without asking any store.
"""

from __future__ import annotations

import time

import eventbus
from chaos import ledger


class Member(eventbus.Job):
    """A batch member: sleeps ``seconds``; with ``fail`` it raises instead of finishing, and its
    ``failed()`` hook takes ``hook_seconds`` (an alert that takes a while to send, say)."""

    def __init__(self, n: str, seconds: float = 0.05, tries: int = 20, fail: bool = False,
                 hook_seconds: float = 0.0) -> None:
        self.n = n
        self.seconds = seconds
        self.tries = tries  # type: ignore[misc]
        self.fail_it = fail
        self.hook_seconds = hook_seconds

    def handle(self) -> None:
        ledger.record("start", self)
        time.sleep(self.seconds)
        if self.fail_it:
            raise ValueError(f"member {self.n} fails")
        ledger.record("done", self)

    def failed(self, exc: BaseException) -> None:
        ledger.record("hook", self)
        time.sleep(self.hook_seconds)
        ledger.record("hooked", self)


class Callback(eventbus.Job):
    """A batch callback: ``n`` is ``<batch>:<kind>``."""

    def __init__(self, n: str) -> None:
        self.n = n
        self.tries = 20  # type: ignore[misc]

    def handle(self) -> None:
        ledger.record("start", self)
        ledger.record("done", self)
