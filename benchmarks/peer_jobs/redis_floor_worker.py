"""The drain floor: a bare worker loop, no queue library (``python -m peer_jobs.redis_floor_worker``).

Takes 32 bodies at a time from the floor's list (``LRANGE`` + ``LTRIM`` in one transaction),
parses each as JSON and runs the benchmark job (one ``INCR``); exits when the list is empty. What
draining a job costs here with nothing but the job and a batched pop: no reservation, no retry,
no acknowledgement, no timeout, no monitoring.
"""

from __future__ import annotations

import json

from peer_jobs import _redis

QUEUE = "floor:queue"
BATCH = 32


def main() -> None:
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
