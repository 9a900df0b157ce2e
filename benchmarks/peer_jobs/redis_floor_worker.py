"""The floor's workers: bare loops, no queue library (``python -m peer_jobs.redis_floor_worker``).

Draining (the default): takes 32 bodies at a time from the floor's list (``LRANGE`` + ``LTRIM`` in
one transaction), parses each as JSON and runs the benchmark job (one ``INCR``); exits when the
list is empty. What draining a job costs here with nothing but the job and a batched pop: no
reservation, no retry, no acknowledgement, no timeout, no monitoring.

Waiting (``--wait``, the latency phase): blocks on the list (``BLPOP``) and runs each body's job
(``incr`` or ``stamp``) as it comes, until stopped. What this machine's wake-up of an idle
process costs with nothing else in the way: the latency the others are read against.
"""

from __future__ import annotations

import json
import sys

from peer_jobs import _redis

QUEUE = "floor:queue"
BATCH = 32


JOBS = {"incr": _redis.incr, "stamp": _redis.stamp}


def main() -> None:
    if "--wait" in sys.argv[1:]:
        wait()
    else:
        drain()


def wait() -> None:
    client = _redis.client()
    while True:
        _, body = client.blpop([QUEUE])  # type: ignore[misc]
        JOBS[json.loads(body)["job"]]()


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
