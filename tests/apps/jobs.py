"""Jobs that worker subprocesses run in the tests. Each leaves a trace in Redis (db 15).

The app configures itself from the environment the test gives the worker:
TEST_REDIS_URL for traces, EVENTBUS_CONNECTION / TEST_DB_URL for the queue.
"""

from __future__ import annotations

import os
import time

import redis

import eventbus

TRACE = redis.Redis.from_url(os.environ.get("TEST_REDIS_URL")
                            or os.environ.get("EVENTBUS_TEST_REDIS_URL", "redis://127.0.0.1:6379/15"))

if os.environ.get("TEST_CLUSTER_URL"):
    eventbus.configure(default="cluster", connections={"cluster": {
        "driver": "redis", "url": os.environ["TEST_CLUSTER_URL"], "cluster": True, "block_for": 1}})
elif os.environ.get("TEST_DB_URL"):
    eventbus.configure(connections={"database": {"driver": "database", "url": os.environ["TEST_DB_URL"],
                                                 "retry_after": float(os.environ.get("TEST_RETRY_AFTER", "90"))}})
elif os.environ.get("TEST_RETRY_AFTER"):
    eventbus.configure(connections={"redis": {"driver": "redis", "url": os.environ["EVENTBUS_REDIS_URL"],
                                              "retry_after": float(os.environ["TEST_RETRY_AFTER"]),
                                              "block_for": 1}})


def trace(kind: str, value: object) -> None:
    TRACE.rpush(f"trace:{kind}", str(value))


class Record(eventbus.Job):
    """Appends its number to trace:ran (and when it started to trace:started)."""

    def __init__(self, n: int, sleep: float = 0.0) -> None:
        self.n = n
        self.sleep = sleep

    def handle(self) -> None:
        trace("started", f"{self.n}:{time.time()}")
        if self.sleep:
            time.sleep(self.sleep)
        trace("ran", self.n)


class CountCalls(eventbus.Job):
    """Appends to trace:calls how many times the Redis server at ``url`` ran ``command`` so far,
    read as the job starts (what its worker asked the server before running it)."""

    def __init__(self, url: str, command: str) -> None:
        self.url, self.command = url, command

    def handle(self) -> None:
        stats = redis.Redis.from_url(self.url).info("commandstats")
        trace("calls", stats.get(f"cmdstat_{self.command}", {}).get("calls", 0))


class Flaky(eventbus.Job):
    """Fails every attempt; records attempts and the failed() call."""

    tries = 3
    backoff = [0.2, 0.4]

    def __init__(self, n: int) -> None:
        self.n = n

    def handle(self) -> None:
        trace("attempt", f"{self.n}:{self.attempts}:{time.time()}")
        raise RuntimeError(f"flaky {self.n} failed on attempt {self.attempts}")

    def failed(self, exc: BaseException) -> None:
        trace("failed", f"{self.n}:{type(exc).__name__}:{exc}")


class Slow(eventbus.Job):
    """Sleeps longer than its timeout."""

    timeout = 1
    tries = 2

    def handle(self) -> None:
        trace("attempt", self.attempts)
        time.sleep(30)

    def failed(self, exc: BaseException) -> None:
        trace("failed", f"{type(exc).__name__}:{exc}")


class Stubborn(eventbus.Job):
    """Swallows the timeout interrupt and keeps going: it cannot be interrupted."""

    timeout = 1
    tries = 1

    def handle(self) -> None:
        trace("attempt", self.attempts)
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                time.sleep(0.05)
            except BaseException:
                pass

    def failed(self, exc: BaseException) -> None:
        trace("failed", f"{type(exc).__name__}:{exc}")


class Releaser(eventbus.Job):
    """Releases itself once with a delay, then succeeds (a release counts as an attempt)."""

    tries = 3

    def handle(self) -> None:
        trace("attempt", f"{self.attempts}:{time.time()}")
        if self.attempts == 1:
            self.release(0.5)


class Counted(eventbus.Job):
    """Increments a counter per run (exactly-once checks across workers)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def handle(self) -> None:
        TRACE.hincrby("trace:count", str(self.n), 1)


class ExplodingFailedHook(eventbus.Job):
    def handle(self) -> None:
        raise ValueError("first")

    def failed(self, exc: BaseException) -> None:
        trace("failed", "hook ran")
        raise RuntimeError("the hook itself broke")


class AsyncJob(eventbus.Job):
    def __init__(self, n: int) -> None:
        self.n = n

    async def handle(self) -> None:
        import asyncio

        await asyncio.sleep(0.01)
        trace("ran", f"async:{self.n}")


class MaxExceptions(eventbus.Job):
    tries = 10
    max_exceptions = 2
    backoff = 0

    def handle(self) -> None:
        trace("attempt", self.attempts)
        raise RuntimeError("again")

    def failed(self, exc: BaseException) -> None:
        trace("failed", str(exc))


class First(eventbus.Job):
    def handle(self) -> None:
        trace("chain", "first")


class Second(eventbus.Job):
    def __init__(self, fail: bool = False) -> None:
        self.fail_it = fail

    def handle(self) -> None:
        trace("chain", "second")
        if self.fail_it:
            raise RuntimeError("second fails")


class Third(eventbus.Job):
    def handle(self) -> None:
        trace("chain", "third")


class SelfFailing(eventbus.Job):
    """Gives up on its own: no retries although tries would allow them."""

    tries = 5

    def handle(self) -> None:
        trace("attempt", self.attempts)
        self.fail("the upstream said no")

    def failed(self, exc: BaseException) -> None:
        trace("failed", f"{type(exc).__name__}:{exc}")


class SelfDeleting(eventbus.Job):
    """Deletes itself, then raises: the exception must not bring it back."""

    tries = 5

    def handle(self) -> None:
        trace("attempt", self.attempts)
        self.delete()
        raise RuntimeError("after delete")


class Shouting(eventbus.Job):
    """Fails with terminal escape sequences in its display name and message."""

    display_name = "Shouting\x1b[2J\x1b]0;pwned\x07"

    def handle(self) -> None:
        raise RuntimeError("red \x1b[31malert\u202e")


class Overlapping(eventbus.Job):
    """Waits ``seconds`` (awaiting when ``use_async``) and records how many of its kind ran at
    that moment, its event loop and thread: what ``--concurrency`` does, seen from the jobs."""

    def __init__(self, n: int, seconds: float = 0.2, use_async: bool = True) -> None:
        self.n = n
        self.seconds = seconds
        self.use_async = use_async

    def _enter(self) -> None:
        import threading

        now = TRACE.incr("overlap:now")
        TRACE.rpush("trace:overlap", now)
        TRACE.rpush("trace:thread", threading.current_thread().name)

    def _leave(self) -> None:
        TRACE.decr("overlap:now")
        trace("ran", self.n)

    def handle(self) -> object:
        if self.use_async:
            return self._wait_async()
        self._enter()
        time.sleep(self.seconds)
        self._leave()
        return None

    async def _wait_async(self) -> None:
        import asyncio

        self._enter()
        TRACE.rpush("trace:loop", id(asyncio.get_running_loop()))
        await asyncio.sleep(self.seconds)
        self._leave()


class AsyncStubborn(eventbus.Job):
    """Awaits far past its timeout: cancelled at the timeout under --concurrency."""

    timeout = 1
    tries = 1

    def __init__(self, n: int) -> None:
        self.n = n

    async def handle(self) -> None:
        import asyncio

        trace("started", self.n)
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            trace("cancelled", self.n)
            raise
        trace("ran", self.n)


class ThreadStubborn(eventbus.Job):
    """Sleeps past its timeout in a thread, where nothing can interrupt it."""

    timeout = 1
    tries = 1

    def __init__(self, n: int) -> None:
        self.n = n

    def handle(self) -> None:
        trace("started", self.n)
        time.sleep(30)
        trace("ran", self.n)


class Doomed(eventbus.Job):
    """Fails its only try: one failed record per job, in the order the worker ran them."""

    def __init__(self, n: int) -> None:
        self.n = n

    def handle(self) -> None:
        trace("attempt", self.n)
        raise RuntimeError(f"doomed {self.n}")


class UniqueRecord(Record):
    """A :class:`Record` that is unique by its number while queued or running."""

    unique = True

    def unique_id(self) -> str:
        return str(self.n)
