"""Jobs and callbacks for the batch tests, run by real workers on Redis, SQLite and PostgreSQL.

The worker (and the test process) configure the connection under test from the environment:
BATCHES_DRIVER (redis/database) and BATCHES_URL. Each job records what happened in a log file
(BATCHES_LOG), one line per event, so several worker processes write to one place.
"""

from __future__ import annotations

import os
import time
from typing import Any

import eventbus
from listeners import listener

if os.environ.get("BATCHES_URL"):
    driver = os.environ["BATCHES_DRIVER"]
    conn: dict[str, Any] = {"driver": driver, "url": os.environ["BATCHES_URL"],
                            "retry_after": float(os.environ.get("BATCHES_RETRY_AFTER", "30"))}
    if driver == "redis":
        conn["block_for"] = 0.5
    eventbus.configure(default="batches", connections={"batches": conn})


def record(*fields: object) -> None:
    with open(os.environ["BATCHES_LOG"], "a") as log:
        log.write(" ".join(str(f) for f in (*fields, os.getpid(), time.time())) + "\n")


def state(batch: Any) -> str:
    return f"{batch.total}/{batch.pending}/{batch.failed}" if batch is not None else "-"


class N(eventbus.Job):
    """Records that it ran; fails for good when told to; skips when its batch was cancelled."""

    tries = 1

    def __init__(self, name: str, fail: bool = False, seconds: float = 0.0) -> None:
        self.name = name
        self.fail_it = fail
        self.seconds = seconds

    def handle(self) -> None:
        time.sleep(self.seconds)
        current = self.batch()
        if current is not None and current.cancelled:
            record("skipped", self.name)
            return
        record("ran", self.name)
        if self.fail_it:
            raise RuntimeError(f"{self.name} failed")


class Grow(N):
    """Adds two more jobs to its own batch, then runs."""

    def handle(self) -> None:
        current = self.batch()
        assert current is not None
        current.add([N(f"{self.name}-child-1"), N(f"{self.name}-child-2")])
        super().handle()


class Flaky(N):
    """Fails for good until the file ``flag`` exists (then ``eventbus retry-batch`` can fix it)."""

    def __init__(self, name: str, flag: str) -> None:
        super().__init__(name)
        self.flag = flag

    def handle(self) -> None:
        record("ran", self.name)
        if not os.path.exists(self.flag):
            raise RuntimeError(f"{self.name} failed")


class CancelsBatch(eventbus.Job):
    """Cancels its own batch."""

    def handle(self) -> None:
        current = self.batch()
        assert current is not None
        current.cancel()


class Amend(N):
    """Runs, then adds steps to its own chain: ``last`` with ``append_to_chain``, ``first`` with
    ``prepend_to_chain``. A step whose name starts with "bad" fails."""

    def __init__(self, name: str, first: list[str] | None = None, last: list[str] | None = None) -> None:
        super().__init__(name)
        self.first = first or []
        self.last = last or []

    def handle(self) -> None:
        super().handle()
        for name in self.last:
            self.append_to_chain(N(name, fail=name.startswith("bad")))
        for name in self.first:
            self.prepend_to_chain(N(name, fail=name.startswith("bad")))


class Report(eventbus.Job):
    """A job callback: records its name and the batch's total/pending/failed."""

    def __init__(self, name: str) -> None:
        self.name = name

    def handle(self) -> None:
        record("callback", self.name, state(self.batch()))


#: Batch callbacks that are functions must be registered with @listener (on a bus of their own
#: here, listening for an event that never comes): only registered names travel in payloads.
_callbacks = eventbus.EventBus()


@listener(eventbus.JobProcessed, on=_callbacks)
def on_catch(batch: Any, exc: BaseException) -> None:
    """A function callback that takes the exception (``catch``, ``allow_failures(fn)``)."""
    assert isinstance(exc, eventbus.FailedJobError)  # the exception stayed in the worker that failed
    record("catch-fn", state(batch), exc.type_name, str(exc).replace(" ", "_"))


@listener(eventbus.JobProcessed, on=_callbacks)
def on_failure(batch: Any, exc: BaseException) -> None:
    """An ``allow_failures`` callback: called at each failure."""
    assert isinstance(exc, eventbus.FailedJobError)
    record("failure-fn", state(batch), exc.type_name, str(exc).replace(" ", "_"))


@listener(eventbus.JobProcessed, on=_callbacks)
def on_progress(batch: Any) -> None:
    record("progress-fn", state(batch))


@listener(eventbus.JobProcessed, on=_callbacks)
def report_listener(batch: Any) -> None:
    record("callback", "listener", state(batch))
