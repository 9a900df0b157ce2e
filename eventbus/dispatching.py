"""Building payloads and pushing them: ``dispatch``, ``dispatch_sync``, ``chain``.

This is the API the add-ons (``listeners``, ``notifications``, third-party channels) build on to
queue their own commands: :func:`make_payload` turns a registered command into a
:class:`~eventbus.payload.Payload`, a :class:`Destination` says where it goes, and
:func:`push_command` / :func:`push_payload` send it (emitting ``JobQueued``). A connection whose
driver runs jobs inline (``sync``) runs the job here, through the worker's rules, before the push
returns. Fakes (``eventbus.testing.fake_queue``) take pushes through :data:`push_interceptors`.

(The module is not named ``dispatch`` so that ``eventbus.dispatch`` stays the function.)
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from collections.abc import Callable, Sequence
from typing import Any

from eventbus import encryption, registry, serializer
from eventbus.errors import ConfigurationError, SerializationError
from eventbus.event_bus import bus
from eventbus.events import JobQueued
from eventbus.payload import Payload
from eventbus.processing import run_sync_job
from eventbus.queue.base import Delay, Queue, delay_seconds
from eventbus.runtime import connection as get_connection
from eventbus.runtime import settings
from eventbus.timeouts import grace_s, timeout_conflict
from eventbus.transactions import defer_if_in_transaction

# -- payload building ---------------------------------------------------------------------------


def option(command: Any, name: str, default: Any = None) -> Any:
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
    """The registered name of ``command``'s class; SerializationError when it has none."""
    name = serializer.class_name(type(command), type(command).__qualname__)
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
        encoded = encryption.seal(encoded, key)
    timeout = option(command, "timeout")
    payload = Payload(
        display_name=display_name or getattr(command, "display_name", None) or name,
        command_name=name,
        command=encoded,
        max_tries=option(command, "tries"),
        max_exceptions=option(command, "max_exceptions"),
        backoff=_backoff_list(option(command, "backoff")),
        timeout=float(timeout) if timeout is not None else None,
        retry_until=_retry_until_timestamp(getattr(command, "retry_until", None)),
        fail_on_timeout=bool(option(command, "fail_on_timeout", False)),
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
        conn = connection or option(command, "connection") or settings().default
        q = queue or option(command, "queue")
        d = delay if delay is not None else option(command, "delay")
        return cls(conn, q, delay_seconds(d))

    def to_dict(self) -> dict[str, Any]:
        return {"connection": self.connection, "queue": self.queue, "delay": self.delay}


# -- pushing ------------------------------------------------------------------------------------

#: A fake queue (eventbus.testing.fake_queue) takes pushes here instead of a driver.
push_interceptors: list[Callable[[Any, Destination, Payload], bool]] = []


def push_command(command: Any, destination: Destination, *, display_name: str | None = None,
                 chained: list[dict[str, Any]] | None = None) -> str:
    """Serialize ``command`` and push it to ``destination``; emit ``JobQueued``. Returns the uuid."""
    payload = make_payload(command, display_name=display_name, chained=chained)
    return push_payload(payload, destination, command)


def push_payload(payload: Payload, destination: Destination, command: Any = None) -> str:
    """Push a built payload (fakes see it first); on an inline connection, run it now."""
    for intercept in push_interceptors:
        if intercept(command, destination, payload):
            return payload.uuid
    queue = get_connection(destination.connection)
    if queue.runs_inline:
        run_inline(queue, payload.to_json(), destination.queue)
        return payload.uuid
    refuse_timeout_beyond_reservation(queue, payload)
    if destination.delay > 0:
        queue.later(destination.delay, payload, destination.queue)
    else:
        queue.push(payload, destination.queue)
    bus.emit(JobQueued(destination.connection, queue.queue_name(destination.queue), payload.uuid,
                       payload.display_name, destination.delay))
    return payload.uuid


def refuse_timeout_beyond_reservation(queue: Queue, payload: Payload) -> None:
    """A job's own timeout plus the watchdog grace must be below the connection's retry_after
    (see :mod:`eventbus.timeouts`): refuse it here, where the mistake is made."""
    if payload.timeout is None or not queue.holds_reservations:
        return
    problem = timeout_conflict(f"{payload.display_name}'s timeout", payload.timeout, grace_s(),
                               queue.retry_after, queue.connection_name,
                               "Lower the job's timeout or raise retry_after.")
    if problem is not None:
        raise ConfigurationError(problem, job_uuid=payload.uuid, connection=queue.connection_name)


def push_raw(connection: str | None, raw: str, queue: str | None = None) -> str:
    """Push a stored payload as it is (``eventbus retry``); on an inline connection, run it now."""
    target = get_connection(connection)
    if target.runs_inline:
        return run_inline(target, raw, queue)
    return target.push_raw(raw, queue)


def run_inline(queue: Queue, raw: str, queue_name: str | None) -> str:
    """Run a job in this process under the sync rules (exceptions propagate after failed())."""
    job = queue.inline_job(raw, queue_name)
    run_sync_job(job, continue_chain=dispatch_next_in_chain, bus=bus)
    return str(job.job_id)


def dispatch_next_in_chain(chained: list[dict[str, Any]]) -> None:
    """Push the next job of a chain, carrying the rest of the chain with it."""
    if not chained:
        return
    head, rest = chained[0], chained[1:]
    payload = Payload.from_dict(head["payload"])
    payload = dataclasses.replace(payload, chained=rest, signature=None)
    key = settings().key
    push_payload(payload.signed(key) if key else payload, Destination(**head["destination"]))


# -- the public verbs ---------------------------------------------------------------------------

def dispatch(job: Any, *, queue: str | None = None, delay: Delay | None = None,
             connection: str | None = None, after_commit: bool | None = None) -> str:
    """Push ``job`` to its connection and queue (arguments win over its class options).

    Returns the job's uuid. On the ``sync`` connection the job runs before this returns. With
    ``after_commit`` (or the job's own ``after_commit = True``) a push made inside an
    ``eventbus.after_commit()`` block waits for the block to end without an exception.
    """
    destination = Destination.of(job, queue=queue, delay=delay, connection=connection)
    payload = make_payload(job)
    if holds_until_commit(job, after_commit):
        defer_if_in_transaction(lambda: push_payload(payload, destination, job))
    else:
        push_payload(payload, destination, job)
    return payload.uuid


def holds_until_commit(command: Any, after_commit: bool | None = None) -> bool:
    """The call's ``after_commit`` if given, else the command's own option."""
    return bool(option(command, "after_commit", False) if after_commit is None else after_commit)


def dispatch_sync(job: Any) -> Any:
    """Run ``job`` now in this process, as the sync driver would (failed() on exception)."""
    return push_command(job, Destination.of(job, connection="sync", delay=0))


class PendingChain:
    """Jobs that run one after another: each is pushed when the previous one succeeded."""

    def __init__(self, jobs: Sequence[Any]) -> None:
        if not jobs:
            raise ValueError("chain() needs at least one job")
        self.jobs = list(jobs)

    def dispatch(self, *, queue: str | None = None, connection: str | None = None,
                 after_commit: bool | None = None) -> str:
        """Push the first job, carrying the others. The chain's ``queue``/``connection`` apply
        only to steps that name none of their own (Laravel's PendingChain)."""
        rest = []
        for job in self.jobs[1:]:
            rest.append({"destination": self._destination(job, queue, connection).to_dict(),
                         "payload": make_payload(job).to_dict()})
        first = self.jobs[0]
        payload = make_payload(first, chained=rest)
        destination = self._destination(first, queue, connection)
        if holds_until_commit(first, after_commit):
            defer_if_in_transaction(lambda: push_payload(payload, destination, first))
        else:
            push_payload(payload, destination, first)
        return payload.uuid

    @staticmethod
    def _destination(job: Any, queue: str | None, connection: str | None) -> Destination:
        return Destination.of(job, queue=option(job, "queue") or queue,
                              connection=option(job, "connection") or connection)


def chain(jobs: Sequence[Any]) -> PendingChain:
    """``chain([A(), B(), C()]).dispatch()``: B runs after A succeeds, C after B."""
    return PendingChain(jobs)
