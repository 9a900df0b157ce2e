"""Operating on queues and workers from outside: retry failed jobs, restart, down, up.

The library side of ``eventbus retry|forget|flush|restart|down|up``: the CLI only parses and
prints. Each function returns what happened so a caller (the CLI, a dashboard, a test) can show it.
"""

from __future__ import annotations

import dataclasses
import time

from eventbus import runtime
from eventbus.dispatching import push_raw
from eventbus.errors import EventBusError
from eventbus.failed.base import FailedJob
from eventbus.payload import with_attempts


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
    except ValueError:
        raw = record.payload  # not JSON: pushed back as it was, to fail again visibly
    push_raw(record.connection, raw, record.queue)
    runtime.failed_store().forget(record.uuid)
    return Retried(record.uuid, record.display_name, record.connection, record.queue)


def forget(uuid: str) -> None:
    """Delete one failed job record; EventBusError when there is none."""
    if not runtime.failed_store().forget(uuid):
        raise EventBusError(f"no failed job with uuid {uuid}")


def flush(older_than_s: float | None = None) -> int:
    """Delete every failed job record (or those older than ``older_than_s``); return how many."""
    return runtime.failed_store().flush(older_than_s)


def signal_workers(name: str, value: float | None) -> tuple[list[str], list[str]]:
    """Set a worker signal on every connection workers consume; return (told, warnings)."""
    told, warnings = [], []
    for conn_name in runtime.connection_names(with_workers=True):
        try:
            if runtime.connection(conn_name).set_signal(name, value):
                told.append(conn_name)
        except EventBusError as exc:
            warnings.append(str(exc))
    if not told:
        raise EventBusError("no connection could be reached to signal the workers"
                            + (f": {'; '.join(warnings)}" if warnings else ""))
    return told, warnings


def restart() -> tuple[list[str], list[str]]:
    """Make every worker exit after its current job (their supervisor starts fresh ones)."""
    return signal_workers("restart", time.time())


def down() -> tuple[list[str], list[str]]:
    """Maintenance mode: workers finish their job and take no new ones (except with --force)."""
    return signal_workers("down", time.time())


def up() -> tuple[list[str], list[str]]:
    """Leave maintenance mode."""
    return signal_workers("down", None)
