"""Running a command through its middleware: global ones outermost, then the job's own.

Middleware may be plain or ``async def``. A plain middleware's ``next(job)`` runs the rest of
the pipeline to completion and returns its result; an async one's ``next(job)`` returns an
awaitable. The pipeline stays on the calling thread while every middleware is plain (the common
case); from the first async middleware inward it runs on this thread's event loop, and a plain
middleware met there is run on a helper thread (with its own loop), so it never blocks the loop
and its ``next`` still runs the rest synchronously, as it expects.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from eventbus import aio

if TYPE_CHECKING:  # asyncio is imported where it is used: `import eventbus` goes without it
    import asyncio

Next = Callable[[Any], Any]


class Middleware(Protocol):
    """``handle(job, next)``: call ``next(job)`` to go on, or release, fail or skip the job."""

    def handle(self, job: Any, next: Next) -> Any: ...


def middleware_for(command: Any, global_middleware: Sequence[Any] = ()) -> list[Any]:
    """The middleware a command runs through, outermost first: global, then its own.

    The command's own list comes from its ``middleware()`` method, called now (in the worker),
    so the objects it returns never travel in the payload.
    """
    own = getattr(command, "middleware", None)
    found = list(own()) if callable(own) else []
    for item in (*global_middleware, *found):
        if not callable(getattr(item, "handle", None)):
            raise TypeError(f"job middleware needs a handle(job, next) method, not {item!r}")
    return [*global_middleware, *found]


def _is_async(middleware: Any) -> bool:
    return inspect.iscoroutinefunction(middleware.handle)


def run_through(command: Any, middleware: Sequence[Any], final: Next) -> Any:
    """``final(command)`` inside every middleware, outermost first; returns its result."""
    if not middleware:  # most jobs: no pipeline to build
        return aio.resolve(final(command))

    def sync_from(index: int, job: Any) -> Any:
        if index == len(middleware):
            return aio.resolve(final(job))
        layer = middleware[index]
        if _is_async(layer):
            return aio.run(async_from(index, job))
        return layer.handle(job, lambda inner: sync_from(index + 1, inner))

    async def async_from(index: int, job: Any) -> Any:
        import asyncio
        if index == len(middleware):
            result = final(job)
            return await result if inspect.isawaitable(result) else result
        layer = middleware[index]
        if _is_async(layer):
            result = await layer.handle(job, lambda inner: async_from(index + 1, inner))
            return await result if inspect.isawaitable(result) else result  # `return next(job)`
        return await asyncio.to_thread(layer.handle, job, lambda inner: sync_from(index + 1, inner))

    return sync_from(0, command)
