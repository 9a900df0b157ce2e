"""One long-lived event loop per thread for running ``async def`` handlers from sync code.

A worker runs many async jobs; keeping one loop lets them share connections bound to it (an SMTP
connection reused across messages) instead of building a loop per job as ``asyncio.run`` would.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Awaitable
from typing import Any, TypeVar

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
    """Run ``awaitable`` to completion on this thread's loop; cancel what it leaves behind on error."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise RuntimeError("eventbus cannot run a coroutine synchronously inside a running event "
                           "loop; use the async API (aemit, anotify_now) there")
    current = loop()
    try:
        return current.run_until_complete(awaitable)
    except BaseException:
        _cancel_pending(current)
        raise


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
