"""The Redis driver's hot-path connection (``eventbus.queue.redis_wire``): one per thread and
per process, so that a forked child never writes to its parent's socket."""

from __future__ import annotations

import os

import redis

from eventbus.queue.redis_wire import Wire
from helpers import REDIS_URL


def test_a_forked_child_opens_its_own_connection(redis_client: redis.Redis) -> None:
    wire = Wire(REDIS_URL, timeout=5.0, name="eventbus:wire-test")
    parent_id = wire.call("CLIENT", "ID")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its first call must not go over the parent's socket
        try:
            os.write(write, str(wire.call("CLIENT", "ID")).encode())
        finally:
            os._exit(0)
    os.close(write)
    child_id = int(os.read(read, 64) or b"0")
    os.waitpid(pid, 0)
    os.close(read)
    assert child_id and child_id != parent_id
    assert wire.call("CLIENT", "ID") == parent_id  # the parent keeps its own
    wire.close()
