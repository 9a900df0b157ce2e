"""Failed jobs in Redis: a hash uuid -> record JSON and a sorted set uuid -> failed_at."""

from __future__ import annotations

import json
import time

from eventbus.failed.base import FailedJob, FailedJobStore
from eventbus.queue.redis import client_for


class RedisFailedJobStore(FailedJobStore):
    def __init__(self, url: str, prefix: str = "eventbus:failed_jobs") -> None:
        self.redis = client_for(url, name="eventbus:failed")
        self.records_key = prefix
        self.index_key = f"{prefix}:index"

    def save(self, record: FailedJob) -> None:
        pipe = self.redis.pipeline(transaction=True)
        pipe.hset(self.records_key, record.uuid, json.dumps(record.to_dict()))
        pipe.zadd(self.index_key, {record.uuid: record.failed_at})
        pipe.execute()

    def all(self) -> list[FailedJob]:
        uuids = self.redis.zrevrange(self.index_key, 0, -1)
        if not uuids:
            return []
        rows = self.redis.hmget(self.records_key, uuids)
        return [FailedJob.from_dict(json.loads(r)) for r in rows if r]

    def find(self, uuid: str) -> FailedJob | None:
        row = self.redis.hget(self.records_key, uuid)
        return FailedJob.from_dict(json.loads(row)) if row else None

    def forget(self, uuid: str) -> bool:
        pipe = self.redis.pipeline(transaction=True)
        pipe.hdel(self.records_key, uuid)
        pipe.zrem(self.index_key, uuid)
        return bool(pipe.execute()[0])

    def flush(self, older_than_s: float | None = None) -> int:
        cutoff = time.time() - older_than_s if older_than_s is not None else "+inf"
        uuids = self.redis.zrangebyscore(self.index_key, "-inf", cutoff)
        if not uuids:
            return 0
        pipe = self.redis.pipeline(transaction=True)
        pipe.hdel(self.records_key, *uuids)
        pipe.zrem(self.index_key, *uuids)
        return int(pipe.execute()[0])

    def close(self) -> None:
        self.redis.close()
