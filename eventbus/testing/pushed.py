"""What :class:`~eventbus.testing.QueueFake` records of each push: a :class:`PushedJob`.

A module of its own, below the fake and its assertions (chains, batches), which all read it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from eventbus.dispatching import Destination
from eventbus.payload import Payload
from eventbus.runtime import settings


@dataclasses.dataclass(frozen=True)
class PushedJob:
    command: Any
    destination: Destination
    payload: Payload

    @property
    def queue(self) -> str:
        """The queue the job goes to: its own, else its connection's default queue."""
        if self.destination.queue:
            return self.destination.queue
        config = settings().connection_config(self.destination.connection)
        return str(config.get("queue") or "default")

    @property
    def job_class(self) -> Any:
        """The job's class; for a queued listener, the listener's class or function."""
        return getattr(self.command, "listener_target", None) or type(self.command)
