"""Event loop helpers: one long-lived loop per thread for sync code, one resource per loop.

A worker runs many async jobs; keeping one loop lets them share connections bound to it (an SMTP
connection reused across messages) instead of building a loop per job as ``asyncio.run`` would.

An async client (``redis.asyncio``, ``httpx.AsyncClient``) belongs to the loop it first ran on:
:class:`PerLoop` gives every loop its own and closes it on that loop when the loop shuts down.
"""

from __future__ import annotations

import contextlib
import inspect
import logging
import threading
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine, Iterator
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from eventbus.errors import JobTimeoutError

if TYPE_CHECKING:  # asyncio is imported where it is used: `import eventbus` goes without it
    import asyncio

T = TypeVar("T")
R = TypeVar("R")
log = logging.getLogger(__name__)
_local = threading.local()  # module-level: one event loop per thread, by nature (not the runtime's)


def loop() -> asyncio.AbstractEventLoop:
    """This thread's loop (created on first use)."""
    import asyncio
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
    import asyncio
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
            return _run_on(shared, awaitable)
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


def _run_on(shared: SharedLoop, awaitable: Awaitable[T]) -> T:
    """Run ``awaitable`` as a task of the shared loop and block this thread until it is done.

    A bare lock is the hand-back (the loop releases it when the task ends): the cheapest signal
    between two threads, where ``run_coroutine_threadsafe``'s future and condition variable cost
    about a tenth of a short async job's time.
    """
    import asyncio
    done = threading.Lock()
    done.acquire()
    tasks: list[asyncio.Task[T]] = []

    def start() -> None:
        task = shared.loop.create_task(_within(awaitable, shared))
        tasks.append(task)
        task.add_done_callback(lambda _: done.release())

    shared.loop.call_soon_threadsafe(start)
    done.acquire()
    return tasks[0].result()


async def _within(awaitable: Awaitable[T], shared: SharedLoop) -> T:
    import asyncio
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
    if value is None:  # what almost every handle() returns: spare the ABC check
        return None
    return run(value) if inspect.isawaitable(value) else value


def _cancel_pending(current: asyncio.AbstractEventLoop) -> None:
    import asyncio
    pending = [t for t in asyncio.all_tasks(current) if not t.done()]
    for task in pending:
        task.cancel()
    if pending:
        try:
            current.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        except BaseException:  # a second interruption while cleaning up: start a fresh loop
            current.close()
            _local.loop = None


# -- one resource per event loop --------------------------------------------------------------

class PerLoop(Generic[R]):
    """One resource (an async client) per running event loop, closed on its loop when it goes.

    A client made on one loop holds that loop's sockets and futures: used from another loop it
    fails or hangs, so every loop gets its own, made by ``make`` on first use there and shared
    by everything that runs on that loop. ``close(resource)`` is awaited on the loop:

    - when the loop shuts down through ``asyncio.run``, ``asyncio.Runner`` or anything else that
      calls ``loop.shutdown_asyncgens()`` (uvicorn does): each resource is watched by a suspended
      async generator started on its loop, and the loop closes its generators after it cancelled
      its tasks and before it closes, so nothing uses the resource any more;
    - when this holder is dropped while the loop still runs (the loop finalizes the watcher);
    - on :meth:`aclose` (this loop's resource) or :meth:`close` (every loop's, from sync code).

    A loop closed without shutting down (``loop.close()`` alone) is forgotten the next time a
    resource is made for any loop; its resource is then left to the garbage collector.
    """

    def __init__(self, make: Callable[[], R], close: Callable[[R], Awaitable[object]]) -> None:
        import asyncio
        self._make = make
        self._close = close
        self._lock = threading.Lock()
        self._entries: dict[asyncio.AbstractEventLoop, tuple[R, AsyncGenerator[None, None]]] = {}
        #: How many resources were made: one per loop, and one more after each close.
        self.opened = 0

    async def get(self) -> R:
        """The running loop's resource, made on first use (or after it was closed)."""
        import asyncio
        loop = asyncio.get_running_loop()
        with self._lock:
            entry = self._entries.get(loop)
            if entry is not None:
                return entry[0]
            self._forget_closed_loops()
            resource = self._make()
            watcher = self._watch(loop, resource)
            self._entries[loop] = (resource, watcher)
            self.opened += 1
        await watcher.__anext__()  # started on this loop: its shutdown_asyncgens() will close it
        return resource

    def values(self) -> list[R]:
        """The resources alive now, one per loop (for tools and tests)."""
        with self._lock:
            return [resource for resource, _ in self._entries.values()]

    async def _watch(self, loop: asyncio.AbstractEventLoop, resource: R) -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            with self._lock:
                entry = self._entries.get(loop)
                if entry is not None and entry[0] is resource:
                    del self._entries[loop]
            try:
                await self._close(resource)
            except Exception:  # a connection that fails while closing is closed enough
                log.debug("closing a per-loop resource failed", exc_info=True)

    def _forget_closed_loops(self) -> None:
        for loop in [loop for loop in self._entries if loop.is_closed()]:
            del self._entries[loop]

    async def aclose(self) -> None:
        """Close the running loop's resource now; the next :meth:`get` makes a new one."""
        import asyncio
        with self._lock:
            entry = self._entries.pop(asyncio.get_running_loop(), None)
        if entry is not None:
            await entry[1].aclose()

    def close(self) -> None:
        """Close every loop's resource from sync code (a reset), each on its own loop."""
        with self._lock:
            entries = list(self._entries.items())
            self._entries.clear()
        for loop, (_, watcher) in entries:
            close_on(loop, watcher.aclose())


def close_on(loop: asyncio.AbstractEventLoop, closing: Coroutine[Any, Any, Any]) -> None:
    """Run ``closing`` on ``loop``: now when it is idle, soon when it is running, never when closed.

    Sync code that forgets a pooled client living on a loop uses this; leaving the client to the
    garbage collector would close its sockets at an arbitrary moment, with warnings.
    """
    if loop.is_closed():
        closing.close()
    elif loop.is_running():
        loop.call_soon_threadsafe(loop.create_task, closing)
    else:
        try:
            loop.run_until_complete(closing)
        except Exception:  # a connection that fails while closing is closed enough
            closing.close()  # when another loop runs here, it never started: no warning then
            log.debug("closing a pooled client failed", exc_info=True)
