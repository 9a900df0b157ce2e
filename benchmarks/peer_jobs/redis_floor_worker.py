"""The floor's workers: bare loops, no queue library (``python -m peer_jobs.redis_floor_worker``).

Reliable (``--reliable``, peers.py's drain): the classic at-least-once list loop, one job at a
time: ``BLMOVE`` a body from the queue to this process's processing list, run its job (one
``INCR``), ``LREM`` it from the processing list; exits when the queue stays empty for half a
second. What draining a job costs here with an acknowledgement and nothing else: no retry, no
timeout, no monitoring.

Async (``--async N``, the async I/O column): the same loop in N asyncio tasks of one process on
redis-py's asyncio client; a ``wait`` body awaits 50 ms before its ``INCR``.

Batched (the default, placement.py's floor): takes 32 bodies at a time (``LRANGE`` + ``LTRIM`` in
one transaction), parses each as JSON and runs its job; no acknowledgement; exits when the list is
empty.

Waiting (``--wait``, the latency phase): blocks on the list (``BLPOP``) and runs each body's job
(``incr`` or ``stamp``) as it comes, until stopped. What this machine's wake-up of an idle
process costs with nothing else in the way: the latency the others are read against.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

import redis.asyncio

from peer_jobs import _redis

QUEUE = "floor:queue"
BATCH = 32
EMPTY_S = 0.5  # how long a draining loop waits on an empty queue before it stops

JOBS = {"incr": _redis.incr, "stamp": _redis.stamp}


def main() -> None:
    argv = sys.argv[1:]
    if "--wait" in argv:
        wait()
    elif "--reliable" in argv:
        reliable()
    elif "--async" in argv:
        asyncio.run(async_drain(int(argv[argv.index("--async") + 1])))
    else:
        drain()


def wait() -> None:
    client = _redis.client()
    while True:
        _, body = client.blpop([QUEUE])  # type: ignore[misc]
        JOBS[json.loads(body)["job"]]()


def reliable() -> None:
    client = _redis.client()
    processing = f"floor:processing:{os.getpid()}"
    while (body := client.blmove(QUEUE, processing, EMPTY_S, "LEFT", "RIGHT")) is not None:
        JOBS[json.loads(body)["job"]]()
        client.lrem(processing, 1, body)


async def async_drain(concurrency: int) -> None:
    client = redis.asyncio.Redis.from_url(_redis.REDIS_URL, max_connections=concurrency + 1)

    async def loop(processing: str) -> None:
        while (body := await client.blmove(QUEUE, processing, EMPTY_S, "LEFT", "RIGHT")) is not None:
            if json.loads(body)["job"] == "wait":
                await asyncio.sleep(_redis.WAIT_S)
            await client.incr(_redis.COUNTER)
            await client.lrem(processing, 1, body)

    await asyncio.gather(*(loop(f"floor:processing:{os.getpid()}:{i}") for i in range(concurrency)))
    await client.aclose()


def drain() -> None:
    client = _redis.client()
    while True:
        pipe = client.pipeline(transaction=True)
        pipe.lrange(QUEUE, 0, BATCH - 1)
        pipe.ltrim(QUEUE, BATCH, -1)
        bodies, _ = pipe.execute()
        if not bodies:
            return
        for body in bodies:
            json.loads(body)
            _redis.incr()


if __name__ == "__main__":
    main()
