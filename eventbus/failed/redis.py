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

    def save(self, record: FailedJob) -> None:
        self._save(keys=self.keys, args=[record.uuid, json.dumps(record.to_dict()), repr(record.failed_at)])

    def all(self) -> list[FailedJob]:
        uuids = self.redis.zrevrange(self.keys[1], 0, -1)
        if not uuids:
            return []
        rows = self.redis.hmget(self.keys[0], uuids)
        return [FailedJob.from_dict(json.loads(r)) for r in rows if r]

    def find(self, uuid: str) -> FailedJob | None:
        row = self.redis.hget(self.keys[0], uuid)
        return FailedJob.from_dict(json.loads(row)) if row else None

    def forget(self, uuid: str) -> bool:
        return bool(self._forget(keys=self.keys, args=[uuid]))

    def flush(self, older_than_s: float | None = None) -> int:
        cutoff = repr(time.time() - older_than_s) if older_than_s is not None else "+inf"
        return int(self._forget(keys=self.keys, args=[f"before:{cutoff}"]))

    def close(self) -> None:
        self.redis.close()
