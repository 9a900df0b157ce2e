"""Jobs and dispatching: ``Job``, ``dispatch``, ``dispatch_sync``, ``chain``.

A job's state is its instance attributes, written as tagged JSON; its options are class attributes
(an instance attribute of the same name wins). Inside ``handle`` the job reaches its queue entry
through ``self.attempts``, ``self.release()``, ``self.delete()`` and ``self.fail()``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from eventbus import registry, serializer
from eventbus.config import settings
from eventbus.connections import connection as get_connection
from eventbus.errors import ManuallyFailedError, SerializationError
from eventbus.payload import Payload
from eventbus.queue.base import Delay, delay_seconds

if TYPE_CHECKING:
    from eventbus.queue.base import QueueJob


class InteractsWithQueue:
    """What a running command can do to its own queue entry (Laravel's InteractsWithQueue)."""

    _queue_job: QueueJob | None = None

    @property
    def attempts(self) -> int:
        """How many times this job has been attempted, this attempt included (1 when run inline)."""
        return self._queue_job.attempts if self._queue_job is not None else 1

    @property
    def job_uuid(self) -> str | None:
        return self._queue_job.uuid if self._queue_job is not None else None

    def release(self, delay: Delay | None = 0) -> None:
        """Put the job back on its queue, to run again after ``delay``."""
        if self._queue_job is not None:
            self._queue_job.release(delay)

    def delete(self) -> None:
        """Remove the job from its queue without running it again."""
        if self._queue_job is not None:
            self._queue_job.delete()

    def fail(self, exc: BaseException | str | None = None) -> None:
        """Fail the job now: no more attempts, ``failed()`` runs, and it goes to the failed store."""
        if isinstance(exc, str) or exc is None:
            exc = ManuallyFailedError(exc or "the job marked itself as failed")
        if self._queue_job is not None:
            from eventbus.processing import fail_job  # late: processing imports jobs

            fail_job(self._queue_job, exc)


class Job(InteractsWithQueue):
    """Base class for queued jobs. Subclasses are registered for payloads automatically."""

    queue: ClassVar[str | None] = None
    connection: ClassVar[str | None] = None
    tries: ClassVar[int | None] = None
    max_exceptions: ClassVar[int | None] = None
    backoff: ClassVar[int | float | Sequence[int | float] | None] = None
    timeout: ClassVar[float | None] = None
    retry_until: ClassVar[Any] = None
    fail_on_timeout: ClassVar[bool] = False
    delay: ClassVar[Delay | None] = None
    delete_when_missing_models: ClassVar[bool] = False
    encrypted: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        registry.register(cls)

    def handle(self) -> Any:
        """Do the work. May be ``async def``."""
        raise NotImplementedError(f"{type(self).__qualname__} must define handle()")

    def failed(self, exc: BaseException) -> None:
        """Called once when the job has failed for good. Override to clean up or alert."""

    def dispatch(self, *, queue: str | None = None, delay: Delay | None = None,
                 connection: str | None = None) -> str:
        """Push this job; same as ``eventbus.dispatch(self, ...)``."""
        return dispatch(self, queue=queue, delay=delay, connection=connection)


# -- payload building ---------------------------------------------------------------------------

def _option(command: Any, name: str, default: Any = None) -> Any:
    """A class or instance option; a method of that name (``def backoff(self)``) is called."""
    value = getattr(command, name, default)
    if callable(value) and not isinstance(value, type) and name != "retry_until":
        value = value()
    return default if value is None else value


def _backoff_list(value: Any) -> list[float] | None:
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [float(value)]
    try:
        return [float(v) for v in value]
    except TypeError as exc:
        raise SerializationError(f"backoff must be seconds or a list of seconds, not {value!r}") from exc


def _retry_until_timestamp(value: Any) -> float | None:
    if callable(value):
        value = value()
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return value.timestamp()
    if isinstance(value, dt.timedelta):
        return time.time() + value.total_seconds()
    return time.time() + float(value)


def command_name(command: Any) -> str:
    name = registry.dotted_name(type(command))
    if not registry.is_registered(name):
        raise SerializationError(
            f"{name} cannot be queued: it is not registered (subclass eventbus.Job, "
            "or decorate it with @eventbus.serializable)")
    return name


def make_payload(command: Any, *, display_name: str | None = None,
                 chained: list[dict[str, Any]] | None = None) -> Payload:
    """Build the JSON payload for ``command`` from its state and options."""
    name = command_name(command)
    state = serializer.object_state(command)
    encoded = {k: serializer.encode(v, f"{type(command).__name__}.{k}") for k, v in state.items()}
    key = settings().key
    if getattr(command, "encrypted", False):
        from eventbus.encryption import seal

        encoded = seal(encoded, key)
    timeout = _option(command, "timeout")
    payload = Payload(
        display_name=display_name or getattr(command, "display_name", None) or name,
        command_name=name,
        command=encoded,
        max_tries=_option(command, "tries"),
        max_exceptions=_option(command, "max_exceptions"),
        backoff=_backoff_list(_option(command, "backoff")),
        timeout=float(timeout) if timeout is not None else None,
        retry_until=_retry_until_timestamp(getattr(command, "retry_until", None)),
        fail_on_timeout=bool(_option(command, "fail_on_timeout", False)),
        chained=chained or list(getattr(command, "_chained", None) or []),
    )
    return payload.signed(key) if key else payload


@dataclasses.dataclass(frozen=True)
class Destination:
    """Where a command goes: connection, queue, delay (arguments win over the command's options)."""

    connection: str
    queue: str | None
    delay: float

    @classmethod
    def of(cls, command: Any, *, queue: str | None = None, delay: Delay | None = None,
           connection: str | None = None) -> Destination:
        conn = connection or _option(command, "connection") or settings().default
        q = queue or _option(command, "queue")
        d = delay if delay is not None else _option(command, "delay")
        return cls(conn, q, delay_seconds(d))

    def to_dict(self) -> dict[str, Any]:
        return {"connection": self.connection, "queue": self.queue, "delay": self.delay}


# A fake queue (eventbus.testing.fake_queue) takes pushes here instead of a driver.
push_interceptors: list[Callable[[Any, Destination, Payload], bool]] = []


def push_command(command: Any, destination: Destination, *, display_name: str | None = None,
                 chained: list[dict[str, Any]] | None = None) -> str:
    """Serialize ``command`` and push it to ``destination``; emit ``JobQueued``. Returns the uuid."""
    payload = make_payload(command, display_name=display_name, chained=chained)
    return push_payload(payload, destination, command)


def push_payload(payload: Payload, destination: Destination, command: Any = None) -> str:
    for intercept in push_interceptors:
        if intercept(command, destination, payload):
            return payload.uuid
    queue = get_connection(destination.connection)
    if destination.delay > 0:
        queue.later(destination.delay, payload, destination.queue)
    else:
        queue.push(payload, destination.queue)
    if queue.driver != "sync":
        from eventbus.dispatcher import emit
        from eventbus.events import JobQueued

        emit(JobQueued(destination.connection, queue.queue_name(destination.queue), payload.uuid,
                       payload.display_name, destination.delay))
    return payload.uuid


def dispatch(job: Any, *, queue: str | None = None, delay: Delay | None = None,
             connection: str | None = None) -> str:
    """Push ``job`` to its connection and queue (arguments win over its class options).

    Returns the job's uuid. On the ``sync`` connection the job runs before this returns.
    """
    return push_command(job, Destination.of(job, queue=queue, delay=delay, connection=connection))


def dispatch_sync(job: Any) -> Any:
    """Run ``job`` now in this process, as the sync driver would (failed() on exception)."""
    return push_command(job, Destination.of(job, connection="sync", delay=0))


class PendingChain:
    """Jobs that run one after another: each is pushed when the previous one succeeded."""

    def __init__(self, jobs: Sequence[Any]) -> None:
        if not jobs:
            raise ValueError("chain() needs at least one job")
        self.jobs = list(jobs)

    def dispatch(self, *, queue: str | None = None, connection: str | None = None) -> str:
        rest = []
        for job in self.jobs[1:]:
            dest = Destination.of(job, queue=queue, connection=connection)
            rest.append({"destination": dest.to_dict(), "payload": make_payload(job).to_dict()})
        first = self.jobs[0]
        return push_command(first, Destination.of(first, queue=queue, connection=connection),
                            chained=rest)


def chain(jobs: Sequence[Any]) -> PendingChain:
    """``chain([A(), B(), C()]).dispatch()``: B runs after A succeeds, C after B."""
    return PendingChain(jobs)
