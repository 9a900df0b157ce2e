"""Operating on queues and workers from outside: retry failed jobs, cancel queued ones, restart,
down, up.

The library side of ``eventbus retry|cancel|forget|flush|restart|down|up``: the CLI only parses and
prints. Each function returns what happened so a caller (the CLI, a dashboard, a test) can show it.
"""

from __future__ import annotations

import dataclasses
import time

from eventbus import runtime
from eventbus.dispatching import push_raw, unique
from eventbus.errors import ConfigurationError, DeserializationError, EventBusError
from eventbus.failed.base import FailedJob
from eventbus.payload import Payload, parse_document, with_attempts, without_surrogates
from eventbus.queue.base import Cancellation, JobState, Queue, QueuedJob
from eventbus.queue.capabilities import Cancellable, supports


@dataclasses.dataclass(frozen=True)
class Retried:
    """A failed job pushed back onto its queue."""

    uuid: str
    display_name: str
    connection: str
    queue: str


def retry(uuids: list[str] | None = None) -> tuple[list[Retried], list[str]]:
    """Push failed jobs back (``None``: all of them) with attempts reset to 0 and the same uuid.

    Each record is removed once its job is queued again. Returns what was retried and the
    uuids that have no failed record.
    """
    store = runtime.failed_store()
    if uuids is None:
        records: list[FailedJob] = store.all()
        missing: list[str] = []
    else:
        found = {u: store.find(u) for u in uuids}
        records = [r for r in found.values() if r is not None]
        missing = [u for u, r in found.items() if r is None]
    return [retry_record(record) for record in records], missing


def retry_record(record: FailedJob) -> Retried:
    """Push one failed record's payload back, then forget the record."""
    try:
        raw = with_attempts(record.payload, 0)
    except ValueError:  # not JSON, or not UTF-8: pushed back as it was, to fail again visibly
        raw = without_surrogates(record.payload)  # as text every queue can hold
    push_raw(record.connection, raw, record.queue)
    runtime.failed_store().forget(record.uuid)
    return Retried(record.uuid, record.display_name, record.connection, record.queue)


@dataclasses.dataclass(frozen=True)
class Cancelled:
    """What cancelling one job did: ``cancelled`` True when it is gone, else ``reason`` says why
    not (not found, running, a batch member)."""

    uuid: str
    connection: str
    queue: str | None
    cancelled: bool
    reason: str = ""


def cancel(uuid: str, *, connection: str | None = None, queue: str | None = None) -> Cancelled:
    """Remove one ready or delayed job before it runs, and release its unique lock.

    The job is looked for on ``queue`` or, without one, on every queue of the connection that
    holds jobs. A job a worker holds (reserved: running, or held by a worker that died until
    ``retry_after``) is left alone; so is a batch member, whose batch must be cancelled as a
    whole (``Batch.cancel()``) so that its counts stay right. ConfigurationError when the
    connection's driver cannot remove one job (it is not
    :class:`~eventbus.queue.capabilities.Cancellable`).
    """
    conn = runtime.connection(connection)
    if not supports(conn, Cancellable):
        raise ConfigurationError(f"connection {conn.connection_name!r}: the {conn.driver} driver cannot "
                                 f"cancel one job: {conn.not_cancellable_because}",
                                 connection=conn.connection_name)
    found = find_queued(conn, uuid, queue)
    if found is None:
        where = f"queue {queue}" if queue else "any queue"
        return Cancelled(uuid, conn.connection_name, queue, False,
                         f"not found: no queued or delayed job with this uuid on {where} of {conn.connection_name}")
    payload = _payload_of(found.raw)
    refusal = _why_not_cancel(found, payload)
    if refusal:
        return Cancelled(uuid, conn.connection_name, found.queue, False, refusal)
    outcome = conn.cancel(uuid, found.queue)
    if outcome is not Cancellation.CANCELLED:
        return Cancelled(uuid, conn.connection_name, found.queue, False,
                         _RUNNING if outcome is Cancellation.RESERVED else "not found: it ran meanwhile")
    if payload is not None:
        unique.release(payload.unique, payload.uuid)
    return Cancelled(uuid, conn.connection_name, found.queue, True)


_RUNNING = "running: a worker holds it (reserved); a running job cannot be cancelled"


def find_queued(conn: Queue, uuid: str, queue: str | None) -> QueuedJob | None:
    """The job ``uuid`` on ``queue``, or on the first of the connection's queues that has it."""
    names = [queue] if queue else list(dict.fromkeys([conn.default_queue, *conn.queues()]))
    for name in names:
        found = conn.find(uuid, name)
        if found is not None:
            return found
    return None


def _payload_of(raw: str) -> Payload | None:
    """The stored payload, parsed; None for a body that is not one (it holds no lock, no batch)."""
    try:
        return Payload.from_dict(parse_document(raw))
    except (DeserializationError, KeyError, TypeError, ValueError):
        return None


def _why_not_cancel(found: QueuedJob, payload: Payload | None) -> str:
    """Why the job found is to be left alone; empty when it may be cancelled."""
    if found.state is JobState.RESERVED:
        return _RUNNING
    if payload is not None and payload.batch_id:
        batch_ref = payload.batch_id
        return (f"belongs to batch {batch_ref}: cancel the whole batch instead, "
                f"eventbus.find_batch({batch_ref!r}).cancel()")
    return ""


def forget(uuid: str) -> None:
    """Delete one failed job record; EventBusError when there is none."""
    if not runtime.failed_store().forget(uuid):
        raise EventBusError(f"no failed job with uuid {uuid}")


def count_failed(older_than_s: float | None = None) -> int:
    """How many failed records :func:`flush` would delete now."""
    cutoff = time.time() - older_than_s if older_than_s is not None else float("inf")
    return sum(1 for record in runtime.failed_store().all() if record.failed_at <= cutoff)


def flush(older_than_s: float | None = None) -> int:
    """Delete every failed job record (or those older than ``older_than_s``); return how many."""
    return runtime.failed_store().flush(older_than_s)


@dataclasses.dataclass(frozen=True)
class Signalled:
    """What a worker signal reached: connections told, those no worker ever used (nothing was
    written: on SQLite the file does not exist yet), and those that could not be reached."""

    told: list[str]
    idle: list[str]
    unreachable: list[str]


def signal_workers(name: str, value: float | None) -> Signalled:
    """Set a worker signal on every connection this app's workers consume.

    Only the connections the app uses (configured, or the default) are signalled: a built-in
    connection it never configured may be another app's server. EventBusError when none was
    told and one could not be reached.
    """
    told: list[str] = []
    idle: list[str] = []
    unreachable: list[str] = []
    for conn_name in runtime.connection_names(with_workers=True):
        try:
            (told if runtime.connection(conn_name).set_signal(name, value) else idle).append(conn_name)
        except EventBusError as exc:
            unreachable.append(str(exc))
    if not told and unreachable:
        raise EventBusError(f"no connection could be reached to signal the workers: {'; '.join(unreachable)}")
    return Signalled(told, idle, unreachable)


def restart() -> Signalled:
    """Make every worker exit after its current job (their supervisor starts fresh ones)."""
    return signal_workers("restart", time.time())


def down() -> Signalled:
    """Maintenance mode: workers finish their job and take no new ones (except with --force)."""
    return signal_workers("down", time.time())


def up() -> Signalled:
    """Leave maintenance mode."""
    return signal_workers("down", None)
