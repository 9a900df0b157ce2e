"""``CallQueuedHandler``: the one handler that runs every queued command, whatever the driver.

It refuses any payload whose ``job`` is not a known handler name, whose signature does not match
(when ``EVENTBUS_KEY`` is set), or whose command names a class outside the registry.
"""

from __future__ import annotations

import logging
from typing import Any

from eventbus import _aio, encryption, registry, serializer
from eventbus.config import settings
from eventbus.errors import UnsafePayloadError
from eventbus.payload import HANDLER_NAME, Payload, verify
from eventbus.queue.base import QueueJob

log = logging.getLogger(__name__)


class CallQueuedHandler:
    """Decode a command, run it, dispatch the next job of its chain, delete the queue entry."""

    def call(self, job: QueueJob, data: dict[str, Any]) -> None:
        command = self.resolve_command(data)
        command._queue_job = job
        _aio.resolve(command.handle())
        if not job.released and not job.failed:
            dispatch_next_in_chain(data.get("chained") or [])
        if not job.is_done:
            job.delete()

    def failed(self, data: dict[str, Any], exc: BaseException, job: QueueJob | None = None) -> None:
        """Call the command's ``failed(exc)`` hook, if it has one."""
        command = self.resolve_command(data)
        command._queue_job = job
        hook = getattr(command, "failed", None)
        if callable(hook):
            _aio.resolve(hook(exc))

    @staticmethod
    def resolve_command(data: dict[str, Any]) -> Any:
        cls = registry.resolve(str(data["commandName"]))
        command = dict(data["command"])
        if encryption.is_sealed(command):
            command = encryption.unseal(command, settings().key)
        state = {k: serializer.decode(v) for k, v in command.items()}
        return serializer.restore_object(cls, state)


def dispatch_next_in_chain(chained: list[dict[str, Any]]) -> None:
    if not chained:
        return
    from eventbus.jobs import Destination, push_payload  # late: jobs imports the handler's peers

    head, rest = chained[0], chained[1:]
    payload = Payload.from_dict(head["payload"])
    payload = Payload(**{**payload.__dict__, "chained": rest, "signature": None})
    key = settings().key
    push_payload(payload.signed(key) if key else payload, Destination(**head["destination"]))


_handler = CallQueuedHandler()


def register_handler(name: str, handler: Any) -> None:
    """Allow payloads whose ``job`` is ``name``; ``handler.call(job, data)`` will run them."""
    registry.register(handler, f"handler:{name}")


def resolve(payload: Payload, doc: dict[str, Any] | None = None) -> Any:
    """The handler for a payload, after the signature check. Unknown names are refused."""
    key = settings().key
    if key and not verify(doc if doc is not None else payload.to_dict(), key):
        raise UnsafePayloadError("refusing payload: its signature does not match EVENTBUS_KEY",
                                 job_uuid=payload.uuid)
    if payload.job == HANDLER_NAME:
        return _handler
    if registry.is_registered(f"handler:{payload.job}"):
        return registry.resolve(f"handler:{payload.job}")
    raise UnsafePayloadError(f"refusing payload: unknown handler {payload.job!r} "
                             f"(only {HANDLER_NAME} and registered handlers run)", job_uuid=payload.uuid)
