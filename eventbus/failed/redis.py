"""Failed jobs in Redis: a hash uuid -> record JSON and a sorted set uuid -> failed_at.

Both keys share the hash tag ``{failed_jobs}`` and change together inside Lua scripts, so the
store works on Redis Cluster too.
"""

from __future__ import annotations

import json
import time
from typing import Any

from eventbus.failed.base import FailedJob, FailedJobStore
from eventbus.queue.redis import client_for, load_script


class RedisFailedJobStore(FailedJobStore):
    def __init__(self, url: str, prefix: str = "eventbus:{failed_jobs}", cluster: bool = False) -> None:
        self.redis: Any = client_for(url, name="eventbus:failed", cluster=cluster)
        self.keys = [prefix, f"{prefix}:index"]
        self._save = load_script(self.redis, "failed_save")
        self._forget = load_script(self.redis, "failed_forget")
        self._prune = load_script(self.redis, "failed_prune")

    def insert(self, record: FailedJob) -> bool:
        # ensure_ascii: text that is not valid UTF-8 (kept as surrogates) is stored as \u escapes
        text = json.dumps(record.to_dict(), ensure_ascii=True)
        return bool(self._save(keys=self.keys, args=[record.uuid, text, repr(record.failed_at)]))

    def all(self) -> list[FailedJob]:
        indexed = self.redis.zrevrange(self.keys[1], 0, -1, withscores=True)
        if not indexed:
            return []
        rows = self.redis.hmget(self.keys[0], [uuid for uuid, _ in indexed])
        return [self._record(uuid, row, failed_at) for (uuid, failed_at), row in zip(indexed, rows) if row]

    def find(self, uuid: str) -> FailedJob | None:
        row = self.redis.hget(self.keys[0], uuid)
        if not row:
            return None
        return self._record(uuid.encode(), row, self.redis.zscore(self.keys[1], uuid) or 0.0)

    @staticmethod
    def _record(uuid: bytes, row: bytes, failed_at: float) -> FailedJob:
        """The stored record; one that cannot be read is shown as such, never dropped or fatal."""
        try:
            return FailedJob.from_dict(json.loads(row))
        except (ValueError, KeyError, TypeError, RecursionError):
            return FailedJob(uuid=uuid.decode("utf-8", "replace"), connection="?", queue="?",
                             payload=row.decode("utf-8", "surrogateescape"),
                             exception="(unreadable failed record)", failed_at=float(failed_at))

    def forget(self, uuid: str) -> bool:
        return bool(self._forget(keys=self.keys, args=[uuid]))

    def flush(self, older_than_s: float | None = None) -> int:
        cutoff = repr(time.time() - older_than_s) if older_than_s is not None else "+inf"
        return int(self._prune(keys=self.keys, args=[cutoff]))

    def close(self) -> None:
        self.redis.close()
