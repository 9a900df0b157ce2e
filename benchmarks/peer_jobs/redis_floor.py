"""The floor: a bare redis-py loop calling a one-line Lua push script per job (EVALSHA), no queue library.

What one round trip per dispatched job costs on this machine with this client; a queue's
one-call-per-job dispatch cannot beat it by much. Its latency is a bare ``BLPOP`` loop's
(``redis_floor_worker --wait``): how long this machine takes to wake an idle process and run a
job, the tail included, with no queue in the way. Its drain workers (``redis_floor_worker``, used
by ``placement.py``, not by ``peers.py``'s table) are the same for a drain: a batched pop and the
job, nothing else.
"""

from __future__ import annotations

import importlib.metadata
import json
import sys
import uuid

from peer_jobs import redis_floor_worker
from peer_jobs._redis import RedisPeer

PUSH = "return redis.call('RPUSH', KEYS[1], ARGV[1])"


class Peer(RedisPeer):
    _sha: str | None = None  # the stamp script's, loaded once

    def version(self) -> str:
        return "redis-py " + importlib.metadata.version("redis")

    def dispatch(self, n: int) -> None:
        sha = self.redis.script_load(PUSH)
        for _ in range(n):
            self.redis.evalsha(sha, 1, redis_floor_worker.QUEUE, json.dumps({"uuid": uuid.uuid4().hex, "job": "incr"}))

    def enqueue_stamp(self) -> None:
        if self._sha is None:  # loaded before the first (untimed) stamp, not inside a timed one
            self._sha = self.redis.script_load(PUSH)
        self.redis.evalsha(self._sha, 1, redis_floor_worker.QUEUE,
                           json.dumps({"uuid": uuid.uuid4().hex, "job": "stamp"}))

    def worker_commands(self, processes: int, *, burst: bool) -> list[list[str]]:
        """``processes`` bare worker loops: draining ones that stop when the list is empty, or
        (not ``burst``) waiting ones that block on it until stopped."""
        command = [sys.executable, "-m", "peer_jobs.redis_floor_worker"] + ([] if burst else ["--wait"])
        return [command for _ in range(processes)]
