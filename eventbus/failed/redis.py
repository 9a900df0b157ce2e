"""Failed jobs in Redis: a hash uuid -> record JSON and a sorted set uuid -> failed_at.

Both keys share the hash tag ``{failed_jobs}`` and change together inside Lua scripts, so the
store works on Redis Cluster too.

When the store is the Redis of the queue whose job failed, recording the failure and deleting
the job are one script (:meth:`RedisFailedJobStore.fail_reserved`). One script touches one hash
slot, so those records live beside their queue, under its hash tag (``queues:{default}:failed``
and ``...:failed:index``: a shard). Every shard is listed in the set
``eventbus:{failed_jobs}:shards`` before its first record is written, and every read (``all``,
``find``, ``forget``, ``flush``) goes over the store's own keys and then each listed shard, so
``eventbus failed`` still shows every record, on a cluster too.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from eventbus.errors import ConnectionUnavailableError, EventBusError
from eventbus.failed.base import FailedJob, FailedJobStore, FailOutcome, alternative_record
from eventbus.queue.base import QueueJob
from eventbus.queue.redis import RedisQueue, client_for, load_script
from eventbus.queue.redis_errors import LOST_CONNECTION
from eventbus.urls import redact_url

T = TypeVar("T")

Keys = tuple[str, str]


class RedisFailedJobStore(FailedJobStore):
    def __init__(self, url: str, prefix: str = "eventbus:{failed_jobs}", cluster: bool = False) -> None:
        self.url = url
        self.cluster = cluster
        self.redis: Any = client_for(url, name="eventbus:failed", cluster=cluster)
        self.keys: Keys = (prefix, f"{prefix}:index")
        self.shards_key = f"{prefix}:shards"
        self._listed: set[str] = set()
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
        self._list_shard(shard)
        for _ in range(5):
            alternative = alternative_record(record)
            done = queue.fail_reserved(job, shard, [
                record.uuid, _json(record), alternative.uuid, _json(alternative), repr(record.failed_at)])
            if done >= 0:
                return FailOutcome.RECORDED if done else FailOutcome.NOT_HELD
        raise EventBusError(f"cannot store the failed job {record.uuid}: its id keeps colliding",
                            job_uuid=record.uuid)

    def _list_shard(self, shard: Keys) -> None:
        """List a shard before its first record exists, so no record is ever out of sight."""
        if shard[0] not in self._listed:
            self._call("list failed shard", lambda: self.redis.sadd(self.shards_key, shard[0]))
            self._listed.add(shard[0])

    # -- reading ------------------------------------------------------------------------------
    def _locations(self) -> Iterator[Keys]:
        """The store's own keys, then every queue's shard."""
        yield self.keys
        shards = self._call("read failed shards", lambda: self.redis.smembers(self.shards_key))
        for name in sorted(s.decode("utf-8", "replace") for s in shards):
            yield name, f"{name}:index"

    def all(self) -> list[FailedJob]:
        found: list[FailedJob] = []
        for records, index in self._locations():
            found += self._call("read failed jobs", lambda: self._read(records, index))
        return sorted(found, key=lambda r: r.failed_at, reverse=True)

    def _read(self, records: str, index: str) -> list[FailedJob]:
        indexed = self.redis.zrevrange(index, 0, -1, withscores=True)
        if not indexed:
            return []
        rows = self.redis.hmget(records, [uuid for uuid, _ in indexed])
        return [self._record(uuid, row, failed_at) for (uuid, failed_at), row in zip(indexed, rows) if row]

    def find(self, uuid: str) -> FailedJob | None:
        for records, index in self._locations():
            row = self._call("find failed job", lambda: self.redis.hget(records, uuid))
            if row:
                score = self._call("find failed job", lambda: self.redis.zscore(index, uuid))
                return self._record(uuid.encode(), row, score or 0.0)
        return None

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
        removed = 0
        for keys in self._locations():
            removed += int(self._call("forget failed job", lambda: self._forget(keys=list(keys), args=[uuid])))
        return removed > 0

    def flush(self, older_than_s: float | None = None) -> int:
        cutoff = repr(time.time() - older_than_s) if older_than_s is not None else "+inf"
        return sum(int(self._call("flush failed jobs", lambda: self._prune(keys=list(keys), args=[cutoff])))
                   for keys in self._locations())

    def close(self) -> None:
        self.redis.close()


def _json(record: FailedJob) -> str:
    # ensure_ascii: text that is not valid UTF-8 (kept as surrogates) is stored as \u escapes
    return json.dumps(record.to_dict(), ensure_ascii=True)
