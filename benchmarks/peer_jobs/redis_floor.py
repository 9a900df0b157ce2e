"""The floor: bare redis-py loops, no queue library: what each column costs on this machine with
this client and nothing in the way.

- dispatch: a one-line Lua push script per job (``EVALSHA``, a small JSON body with a fresh uuid),
  one round trip a job;
- bulk: the same push, pipelined, 1,000 to a round trip;
- drain: ``redis_floor_worker --reliable`` (``BLMOVE`` to a processing list, the ``INCR``, ``LREM``):
  the least an acknowledged job can cost;
- idle latency: a bare ``BLPOP`` loop (``redis_floor_worker --wait``): how long this machine takes
  to wake an idle process, the tail included;
- memory: a list of those JSON bodies, nothing else;
- async I/O: ``redis_floor_worker --async 50``, the reliable loop in 50 asyncio tasks.

placement.py's floor is the batched loop (``batched_worker_commands``): a pop of 32 and the job.
"""

from __future__ import annotations

import importlib.metadata
import json
import sys
import uuid
from collections.abc import Sequence

from peer_jobs import redis_floor_worker
from peer_jobs._redis import RedisPeer

PUSH = "return redis.call('RPUSH', KEYS[1], ARGV[1])"
PIPELINE = 1000


def body(job: str) -> str:
    return json.dumps({"uuid": uuid.uuid4().hex, "job": job})


class Peer(RedisPeer):
    burst = True
    bulk_api = f"EVALSHA pipelined, {PIPELINE:,} to a round trip"
    workers = "2 x BLMOVE, INCR, LREM loop"
    default_setting = "one job at a time a process"
    async_setting = ("--async", "50")
    async_setting_label = "50 asyncio tasks"
    _sha: str | None = None

    def version(self) -> str:
        return "redis-py " + importlib.metadata.version("redis")

    def sha(self) -> str:
        """The push script's, loaded once (before the first timed call of a phase that needs it)."""
        if self._sha is None:
            self._sha = str(self.redis.script_load(PUSH))
        return self._sha

    def dispatch(self, n: int) -> None:
        sha = self.sha()
        for _ in range(n):
            self.redis.evalsha(sha, 1, redis_floor_worker.QUEUE, body("incr"))

    def bulk(self, n: int, job: str = "incr") -> None:
        sha = self.sha()
        for start in range(0, n, PIPELINE):
            pipe = self.redis.pipeline(transaction=False)
            for _ in range(min(PIPELINE, n - start)):
                pipe.evalsha(sha, 1, redis_floor_worker.QUEUE, body(job))
            pipe.execute()

    def enqueue_stamp(self) -> None:
        self.redis.evalsha(self.sha(), 1, redis_floor_worker.QUEUE, body("stamp"))

    def enqueue_waits(self, n: int) -> None:
        self.bulk(n, "wait")

    def worker_commands(self, processes: int, *, burst: bool,
                        setting: Sequence[str] | None = None) -> list[list[str]]:
        """``processes`` bare loops: reliable draining ones (or ``setting``'s), or (not ``burst``)
        waiting ones that block on the list until stopped."""
        mode = list(setting or ("--reliable",)) if burst else ["--wait"]
        return [[sys.executable, "-m", "peer_jobs.redis_floor_worker", *mode] for _ in range(processes)]

    def batched_worker_commands(self, processes: int) -> list[list[str]]:
        """placement.py's floor: the batched pop of 32, no acknowledgement."""
        return [[sys.executable, "-m", "peer_jobs.redis_floor_worker"] for _ in range(processes)]
