"""Job middleware: code that runs around a job in the worker (Laravel's job middleware).

A middleware is any object with ``handle(job, next)`` (plain or ``async def``). It may call
``next(job)`` to run the rest of the pipeline and the job, or not call it, or release the job
(``job.release(delay)``), or fail it (``job.fail(exc)``). Returning without calling ``next`` and
without releasing or failing counts as success, as in Laravel: the job is deleted and its chain
goes on. A job lists its own middleware in ``middleware()``, which runs in the worker::

    class ImportAccount(Job):
        def middleware(self) -> list[Middleware]:
            return [Skip.when(self.account_id in PAUSED)]

Middleware for every job comes from ``configure(middleware=[...])`` and runs outermost.
"""

from eventbus.middleware.limited import RateLimited
from eventbus.middleware.overlapping import WithoutOverlapping
from eventbus.middleware.pipeline import Middleware, middleware_for, run_through
from eventbus.middleware.skip import Skip
from eventbus.middleware.throttling import ThrottlesExceptions

__all__ = ["Middleware", "RateLimited", "Skip", "ThrottlesExceptions", "WithoutOverlapping",
           "middleware_for", "run_through"]
