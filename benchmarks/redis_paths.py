"""The three ways a script call can reach Redis, measured side by side in one run: CPU time per
``EVALSHA`` of a one-line script (best of 8 rounds of 10,000 calls).

- the driver's hot path (``eventbus.queue.redis.wire``): a redis-py connection written to and
  read from directly, the pool, retries and response callbacks skipped;
- redis-py's own connection API (``send_packed_command`` + ``read_response``), the same layer by
  hand, as a check that the hot path adds nothing;
- a redis-py client (``Redis.evalsha``), what every other call of the driver uses.

    python benchmarks/redis_paths.py      # BENCH_QUEUE_REDIS_URL, database 13 by default
"""

from __future__ import annotations

import time
from collections.abc import Callable

import hiredis
import redis

from _common import REDIS_URL
from eventbus.queue.redis.wire import Script, Wire

ROUNDS, CALLS = 8, 10_000


def main() -> None:
    script = Script("return redis.call('incr', KEYS[1])")
    wire = Wire(REDIS_URL, timeout=None, name="bench:wire")
    client = redis.Redis.from_url(REDIS_URL)
    client.script_load(script.source)
    conn = client.connection_pool.make_connection()
    conn.connect()
    packed = [hiredis.pack_command(("EVALSHA", script.sha, 1, "bench:paths"))]

    def by_hand() -> None:
        conn.send_packed_command(packed, check_health=False)
        conn.read_response()

    paths: dict[str, Callable[[], object]] = {
        "hot path (eventbus.queue.redis.wire)": lambda: wire.run(script, ["bench:paths"], []),
        "redis-py Connection, by hand": by_hand,
        "redis-py client (Redis.evalsha)": lambda: client.evalsha(script.sha, 1, "bench:paths"),
    }
    best = dict.fromkeys(paths, float("inf"))
    for _ in range(ROUNDS):
        for name, call in paths.items():
            started = time.process_time()
            for _ in range(CALLS):
                call()
            best[name] = min(best[name], (time.process_time() - started) / CALLS * 1e6)
    client.delete("bench:paths")
    fastest = min(best.values())
    print(f"{'path':40s} {'CPU µs/call':>12s} {'x fastest':>10s}")
    for name, micros in best.items():
        print(f"{name:40s} {micros:12.2f} {micros / fastest:10.2f}")


if __name__ == "__main__":
    main()
