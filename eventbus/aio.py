"""One long-lived event loop per thread for running ``async def`` handlers from sync code.

A worker runs many async jobs; keeping one loop lets them share connections bound to it (an SMTP
connection reused across messages) instead of building a loop per job as ``asyncio.run`` would.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import threading
import time
from collections.abc import Awaitable, Iterator
from typing import Any, TypeVar

from eventbus.errors import JobTimeoutError

T = TypeVar("T")
_local = threading.local()


def loop() -> asyncio.AbstractEventLoop:
    """This thread's loop (created on first use)."""
    current: asyncio.AbstractEventLoop | None = getattr(_local, "loop", None)
    if current is None or current.is_closed():
        current = asyncio.new_event_loop()
        _local.loop = current
    return current


def run(awaitable: Awaitable[T]) -> T:
    """Run ``awaitable`` to completion on this thread's loop; cancel what it leaves behind on error.

    Inside :func:`on_shared_loop` (a worker running jobs concurrently) it runs as a task of the
    worker's one loop instead, cancelled when the job's deadline passes.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise RuntimeError("eventbus cannot run a coroutine synchronously inside a running event "
                           "loop; use the async API (aemit, anotify_now) there")
    shared: SharedLoop | None = getattr(_local, "shared", None)
    if shared is not None:
        shared.awaiting += 1
        try:
            return asyncio.run_coroutine_threadsafe(_within(awaitable, shared), shared.loop).result()
        finally:
            shared.awaiting -= 1
    current = loop()
    try:
        return current.run_until_complete(awaitable)
    except BaseException:
        _cancel_pending(current)
        raise


class SharedLoop:
    """The worker's loop a job thread hands its coroutines to, and the job's deadline."""

    __slots__ = ("loop", "deadline", "what", "awaiting")

    def __init__(self, loop: asyncio.AbstractEventLoop, deadline: float | None, what: str) -> None:
        self.loop, self.deadline, self.what = loop, deadline, what
        #: How many coroutines the job's thread waits on now (its code runs on the loop then).
        self.awaiting = 0


@contextlib.contextmanager
def on_shared_loop(shared_loop: asyncio.AbstractEventLoop, timeout: float, what: str) -> Iterator[SharedLoop]:
    """Run the coroutines of this thread's job as tasks of ``shared_loop`` (running in another
    thread), each cancelled once ``timeout`` seconds (0: none) have passed since the block began:
    :class:`~eventbus.errors.JobTimeoutError` is raised in the job then, as the alarm would."""
    deadline = time.monotonic() + timeout if timeout > 0 else None
    outer = getattr(_local, "shared", None)
    shared = _local.shared = SharedLoop(shared_loop, deadline, what)
    try:
        yield shared
    finally:
        _local.shared = outer


async def _within(awaitable: Awaitable[T], shared: SharedLoop) -> T:
    if shared.deadline is None:
        return await awaitable
    remaining = shared.deadline - time.monotonic()
    try:
        return await asyncio.wait_for(_awaited(awaitable), max(remaining, 0.0))
    except TimeoutError:
        raise JobTimeoutError(f"{shared.what} timed out (cancelled at its deadline)") from None


async def _awaited(awaitable: Awaitable[T]) -> T:
    return await awaitable


def resolve(value: Any) -> Any:
    """Await ``value`` on this thread's loop when it is awaitable; return it otherwise."""
    return run(value) if inspect.isawaitable(value) else value


def _cancel_pending(current: asyncio.AbstractEventLoop) -> None:
    pending = [t for t in asyncio.all_tasks(current) if not t.done()]
    for task in pending:
        task.cancel()
    if pending:
        try:
            current.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        except BaseException:  # a second interruption while cleaning up: start a fresh loop
            current.close()
            _local.loop = None
