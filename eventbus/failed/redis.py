"""Failed jobs in Redis: a hash uuid -> record JSON and a sorted set uuid -> failed_at.

Both keys share the hash tag ``{failed_jobs}`` and change together inside Lua scripts, so the
store works on Redis Cluster too. Every key starts with the app's queue prefix (``queues:`` by
default; ``shop:failed:{failed_jobs}``), so apps that share a server, each with a prefix of its
own, never see, retry or delete each other's records.

When the store is the Redis of the queue whose job failed, recording the failure and deleting
the job are one script (:meth:`RedisFailedJobStore.fail_reserved`). One script touches one hash
slot, so those records live beside their queue, under its hash tag (``queues:{default}:failed``
and ``...:failed:index``: a shard). Recording a failure touches that slot and nothing else: on a
cluster it needs only the master of the job's own queue, whichever other master is down.

The shards are found where they are: every read (``all``, ``find``, ``forget``, ``flush``) goes
over the store's own keys, then every shard a ``SCAN`` of each master finds (keys ending in
``}:failed:index`` right after the store's prefix, so only this app's queues). Nothing lists
them in one place, so no one master holds the list. While a master is down its shards cannot be
read: ``all`` returns the others and logs which master it could not reach, ``find`` and
``forget`` of a record not found elsewhere, and ``flush``, raise
:class:`~eventbus.errors.ConnectionUnavailableError` naming it. The shards found are remembered
for :data:`SHARDS_TTL_S` (a dashboard reading every few seconds does not scan each time).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

from eventbus.errors import ConnectionUnavailableError, EventBusError
from eventbus.failed.base import FailedJob, FailedJobStore, FailOutcome, alternative_record
from eventbus.queue.base import QueueJob
from eventbus.queue.redis import RedisQueue, client_for, load_script
from eventbus.queue.redis.queue import script_source
from eventbus.queue.redis.errors import LOST_CONNECTION
from eventbus.queue.redis.topology import scan_nodes
from eventbus.urls import redact_url

log = logging.getLogger(__name__)

T = TypeVar("T")

Keys = tuple[str, str]
#: How long the shards a scan found stand for the servers' keys before the next scan.
SHARDS_TTL_S = 2.0
SHARD_SUFFIX = "}:failed:index"


#: The store's scripts, beside the queue's (``eventbus/queue/lua``).
SCRIPTS = ("failed_save", "failed_forget", "failed_prune")


def prepare_fork() -> None:
    """Read the scripts before a supervisor forks its workers (``eventbus.failed.prepare_fork``)."""
    for name in SCRIPTS:
        script_source(name)


class RedisFailedJobStore(FailedJobStore):
    def __init__(self, url: str, prefix: str = "queues:", cluster: bool = False) -> None:
        self.url = url
        self.cluster = cluster
        self.prefix = prefix
        self.redis: Any = self._call("connect", lambda: client_for(url, name="eventbus:failed", cluster=cluster))
        base = f"{prefix}failed:{{failed_jobs}}"
        self.keys: Keys = (base, f"{base}:index")
        #: Only the shards of this app's queues (those under its prefix): apps that share a
        #: server, each with a prefix of its own, never see each other's records.
        self.shard_prefix = prefix
        self._shards: tuple[float, list[Keys], list[str]] | None = None
        self._save = load_script(self.redis, "failed_save")
        self._forget = load_script(self.redis, "failed_forget")
        self._prune = load_script(self.redis, "failed_prune")

    def _call(self, action: str, fn: Callable[[], T]) -> T:
        """A lost or refused connection becomes ConnectionUnavailableError, as for the queues."""
        try:
            return fn()
        except LOST_CONNECTION as exc:
            raise ConnectionUnavailableError(
                f"cannot reach the failed job store at {redact_url(self.url)} ({action}): {exc}") from exc

    # -- writing ------------------------------------------------------------------------------
    def insert(self, record: FailedJob) -> bool:
        return bool(self._call("record failed job", lambda: self._save(
            keys=list(self.keys), args=[record.uuid, _json(record), repr(record.failed_at)])))

    def fail_reserved(self, job: QueueJob, record: FailedJob) -> FailOutcome:
        """One script when the job's queue lives on this Redis; otherwise the general two steps."""
        queue = job.queue
        if not (isinstance(queue, RedisQueue) and queue.is_server(self.url, self.cluster)):
            return super().fail_reserved(job, record)
        shard = queue.failed_keys(job.queue_name)
        for _ in range(5):
            alternative = alternative_record(record)
            done = queue.fail_reserved(job, shard, [
                record.uuid, _json(record), alternative.uuid, _json(alternative), repr(record.failed_at)])
            if done >= 0:
                return FailOutcome.RECORDED if done else FailOutcome.NOT_HELD
        raise EventBusError(f"cannot store the failed job {record.uuid}: its id keeps colliding",
                            job_uuid=record.uuid)

    # -- reading ------------------------------------------------------------------------------
    def _locations(self) -> tuple[list[Keys], list[str]]:
        """The store's own keys and every queue's shard found on the servers, and the servers
        that could not be scanned (a cluster master that is down)."""
        now = time.monotonic()
        if self._shards is None or now - self._shards[0] > SHARDS_TTL_S:
            pattern = f"{_glob_escape(self.shard_prefix or '')}{'' if self.shard_prefix else '*'}{{*{SHARD_SUFFIX}"
            found, missed = self._call("find failed shards", lambda: scan_nodes(self.redis, pattern))
            names = sorted({k.decode("utf-8", "replace")[:-len(":index")] for k in found})
            self._shards = (now, [(name, f"{name}:index") for name in names], missed)
        return [self.keys, *self._shards[1]], list(self._shards[2])

    def _visit(self, action: str, visit: Callable[[str, str], T]) -> tuple[list[T], list[str]]:
        """``visit(records, index)`` at every location that answers; returns the results and the
        servers or shards it could not reach."""
        locations, missed = self._locations()
        results: list[T] = []
        for records, index in locations:
            try:
                results.append(self._call(action, lambda: visit(records, index)))
            except ConnectionUnavailableError:
                missed.append(records)
                self._shards = None  # the layout may have changed (a failover): scan again next time
        return results, missed

    def _unreachable(self, missed: list[str], what: str) -> ConnectionUnavailableError:
        return ConnectionUnavailableError(
            f"{what}: cannot reach the failed jobs at {', '.join(missed)} in {redact_url(self.url)} "
            "(a server that is down); try again when it answers")

    def all(self) -> list[FailedJob]:
        found, missed = self._visit("read failed jobs", self._read)
        if missed:
            log.warning("failed jobs at %s in %s are not shown: cannot reach them", ", ".join(missed),
                        redact_url(self.url))
        return sorted((r for part in found for r in part), key=lambda r: r.failed_at, reverse=True)

    def _read(self, records: str, index: str) -> list[FailedJob]:
        indexed = self.redis.zrevrange(index, 0, -1, withscores=True)
        if not indexed:
            return []
        rows = self.redis.hmget(records, [uuid for uuid, _ in indexed])
        return [self._record(uuid, row, failed_at) for (uuid, failed_at), row in zip(indexed, rows) if row]

    def find(self, uuid: str) -> FailedJob | None:
        def look(records: str, index: str) -> FailedJob | None:
            row = self.redis.hget(records, uuid)
            if not row:
                return None
            return self._record(uuid.encode(), row, self.redis.zscore(index, uuid) or 0.0)

        found, missed = self._visit("find failed job", look)
        record = next((r for r in found if r is not None), None)
        if record is None and missed:
            raise self._unreachable(missed, f"failed job {uuid} not found among those that answer")
        return record

    @staticmethod
    def _record(uuid: bytes, row: bytes, failed_at: float) -> FailedJob:
        """The stored record; one that cannot be read is shown as such, never dropped or fatal."""
        try:
            return FailedJob.from_dict(json.loads(row))
        except (ValueError, KeyError, TypeError, RecursionError):
            return FailedJob(uuid=uuid.decode("utf-8", "replace"), connection="?", queue="?",
                             payload=row.decode("utf-8", "surrogateescape"),
                             exception="(unreadable failed record)", failed_at=float(failed_at))

    # -- removing -----------------------------------------------------------------------------
    def forget(self, uuid: str) -> bool:
        removed, missed = self._visit("forget failed job",
                                      lambda records, index: int(self._forget(keys=[records, index], args=[uuid])))
        if not sum(removed) and missed:
            raise self._unreachable(missed, f"failed job {uuid} not found among those that answer")
        return sum(removed) > 0

    def flush(self, older_than_s: float | None = None) -> int:
        cutoff = repr(time.time() - older_than_s) if older_than_s is not None else "+inf"
        removed, missed = self._visit("flush failed jobs",
                                      lambda records, index: int(self._prune(keys=[records, index], args=[cutoff])))
        if missed:
            raise self._unreachable(missed, f"flushed {sum(removed)} failed jobs, not all of them")
        return sum(removed)

    def close(self) -> None:
        self.redis.close()


def _glob_escape(text: str) -> str:
    return "".join(f"\\{c}" if c in "*?[]\\" else c for c in text)


def _json(record: FailedJob) -> str:
    # ensure_ascii: text that is not valid UTF-8 (kept as surrogates) is stored as \u escapes
    return json.dumps(record.to_dict(), ensure_ascii=True)
