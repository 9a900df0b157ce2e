"""Jobs for the toolbox tests: rate limits, overlap locks, exception throttling, unique jobs.

The worker (and the test process) configure the connection under test from the environment:
TOOLBOX_DRIVER (redis/database) and TOOLBOX_URL. Each job records what happened in a log file
(TOOLBOX_LOG), one line per event, so two worker processes write to one place.
"""

from __future__ import annotations

import os
import time
from typing import Any

import eventbus
from eventbus import RateLimited, ThrottlesExceptions, WithoutOverlapping

if os.environ.get("TOOLBOX_URL"):
    driver = os.environ["TOOLBOX_DRIVER"]
    conn: dict[str, Any] = {"driver": driver, "url": os.environ["TOOLBOX_URL"], "retry_after": 30}
    if driver == "redis":
        conn["block_for"] = 0.5
    eventbus.configure(default="toolbox", connections={"toolbox": conn},
                       failed=os.environ.get("TOOLBOX_FAILED_URL"))

eventbus.rate_limit("toolbox-per-second", per_second=2)


def record(*fields: object) -> None:
    with open(os.environ["TOOLBOX_LOG"], "a") as log:
        log.write(" ".join(str(f) for f in (*fields, os.getpid(), time.time())) + "\n")


class Limited(eventbus.Job):
    tries = 1  # a release by the limit must not use it up

    def __init__(self, n: int) -> None:
        self.n = n

    def middleware(self) -> list[Any]:
        return [RateLimited("toolbox-per-second")]

    def handle(self) -> None:
        record("limited", self.n, self.attempts)


class Exclusive(eventbus.Job):
    tries = 1

    def __init__(self, n: int, key: str) -> None:
        self.n = n
        self.key = key

    def middleware(self) -> list[Any]:
        return [WithoutOverlapping(self.key, release_after=0.1, expire_after=20)]

    def handle(self) -> None:
        record("start", self.n)
        time.sleep(0.4)
        record("end", self.n)


class Unstable(eventbus.Job):
    tries = 20

    def __init__(self, n: int) -> None:
        self.n = n

    def middleware(self) -> list[Any]:
        return [ThrottlesExceptions(max_attempts=3, decay_s=2, by="unstable")]

    def handle(self) -> None:
        record("unstable", self.n, self.attempts)
        if os.path.exists(os.environ["TOOLBOX_LOG"] + ".broken"):
            raise ConnectionError("the service is down")


class Reindex(eventbus.Job):
    unique = True
    unique_for = 60

    def __init__(self, shop: int, seconds: float = 0.0) -> None:
        self.shop = shop
        self.seconds = seconds

    def unique_id(self) -> str:
        return str(self.shop)

    def handle(self) -> None:
        record("reindex-start", self.shop)
        time.sleep(self.seconds)
        record("reindex-end", self.shop)


class ReindexUntilProcessing(Reindex):
    unique_until_processing = True


class Step(eventbus.Job):
    """Records that it ran; fails when told to (tries=1, so that is final)."""

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


class Grow(Step):
    """Adds two more steps to its own batch, then runs."""

    def handle(self) -> None:
        current = self.batch()
        assert current is not None
        current.add([Step(f"{self.name}-child-1"), Step(f"{self.name}-child-2")])
        super().handle()


class Report(eventbus.Job):
    """A callback: records its name and what the batch looked like."""

    def __init__(self, name: str) -> None:
        self.name = name

    def handle(self) -> None:
        current = self.batch()
        state = f"{current.total}/{current.pending}/{current.failed}" if current else "-"
        record("callback", self.name, state)


def report_listener(batch: Any) -> None:
    record("callback", "listener", f"{batch.total}/{batch.pending}/{batch.failed}")


from listeners import listener  # noqa: E402  (a function the batch calls back)

listener(eventbus.JobProcessed, on=eventbus.EventBus())(report_listener)
