"""One contender in the state store race tests: ``python state_race.py CONFIG START_AT ME``.

Builds the connection's state store from CONFIG (a connection dict as JSON), waits until the
wall clock reaches START_AT so that both contenders start together, then tries to take 40 locks
with ``add`` and adds 1 to a shared counter 150 times. Prints the locks it won as JSON.
"""

from __future__ import annotations

import json
import sys
import time

import eventbus
from eventbus import runtime


def main() -> None:
    config, start_at, me = json.loads(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
    eventbus.configure(default="under_test", connections={"under_test": config})
    store = runtime.state()
    store.get("race:warm-up")  # connect (and create the table) before the start line
    time.sleep(max(start_at - time.time(), 0))
    won = [i for i in range(40) if store.add(f"race:lock:{i}", me, ttl_s=60)]
    for _ in range(150):
        store.incr("race:counter", 1, ttl_s=60)
    store.incr_many({"race:many:a": 1, "race:many:b": 0.5}, ttl_s=60)
    print(json.dumps(won))


if __name__ == "__main__":
    main()
