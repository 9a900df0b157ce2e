"""The sync driver: a dispatch runs the job at once in the caller (Laravel's SyncQueue).

The driver itself only states that fact (``runs_inline``); :mod:`eventbus.dispatching` sees it
and runs the job through the worker's rules before ``dispatch`` returns. Exceptions propagate to
the caller after the job's ``failed()`` hook ran and ``JobFailed`` was emitted; nothing is
retried and nothing is stored.
"""

from __future__ import annotations

import collections
from collections.abc import Mapping
from typing import Any

from eventbus.errors import EventBusError
from eventbus.queue.null import NullQueue


class SyncQueue(NullQueue):
    driver = "sync"
    runs_inline = True
    not_cancellable_because = "it runs every job the moment it is pushed; nothing is ever queued"

    def __init__(self, connection_name: str, config: Mapping[str, Any]) -> None:
        super().__init__(connection_name, config)
        self._exceptions: collections.Counter[str] = collections.Counter()

    def push_raw(self, payload: str, queue: str | None = None, *, delay: float = 0.0) -> str:
        """Refused: a job on this connection runs only through ``eventbus.dispatching``."""
        raise EventBusError(f"connection {self.connection_name!r} runs jobs as they are dispatched and "
                            "stores none; push through eventbus.dispatch() or "
                            "eventbus.dispatching.push_raw()", connection=self.connection_name)

    def record_exception(self, uuid: str) -> int:
        self._exceptions[uuid] += 1
        return self._exceptions[uuid]
