"""The ``database`` driver (SQLite, PostgreSQL, MySQL/MariaDB through SQLAlchemy): the queue
(:mod:`~eventbus.queue.database.queue`), its tables (:mod:`~eventbus.queue.database.schema`),
reservations (:mod:`~eventbus.queue.database.reserve`), PostgreSQL's own statements and
``LISTEN/NOTIFY`` (:mod:`~eventbus.queue.database.postgres`), idle waits
(:mod:`~eventbus.queue.database.wait`), inspection (:mod:`~eventbus.queue.database.inspect`)
and pushes from an event loop (:mod:`~eventbus.queue.database.aio`). Importing it imports
SQLAlchemy.

The driver class is imported on first use, so that a module of the wing (its errors, say)
can be imported without the whole driver.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from eventbus.queue.database.queue import DatabaseQueue

__all__ = ["DatabaseQueue"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module("eventbus.queue.database.queue"), name)
