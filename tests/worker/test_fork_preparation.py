"""What a supervisor loads once before it forks its workers (``runtime.prepare_fork``), and what
a worker's connections no longer look up each time they open (issue 29: start in a blink).

Each check runs in a fresh interpreter: what the test process imported already would hide what
a worker started from the app alone has to load."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
import redis
from helpers import PG_URL, REDIS_URL, ROOT, TESTS, database_reason


def _run(code: str) -> dict[str, object]:
    """Run ``code`` (which prints one JSON line last) in a fresh interpreter on this tree."""
    env = {**os.environ, "PYTHONPATH": f"{TESTS}{os.pathsep}{ROOT}", "REDIS_URL": REDIS_URL, "PG_URL": PG_URL}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_preparing_a_redis_connection_loads_what_a_worker_loads_and_connects_nowhere(
        redis_client: redis.Redis) -> None:
    found = _run("""
        import json, os, sys
        import eventbus
        eventbus.configure(default="redis", connections={"redis": {"driver": "redis", "url": os.environ["REDIS_URL"]}})
        from eventbus import runtime
        from eventbus.queue.redis import queue
        from eventbus.state import redis as state_redis
        stores = ("eventbus.failed.redis", "eventbus.state.redis")
        before = {name: name in sys.modules for name in stores}
        runtime.prepare_fork()
        prepared = {name: name in sys.modules for name in stores}
        read = queue.script_source.cache_info().currsize
        misses = (queue.script_source.cache_info().misses, state_redis._script.cache_info().misses)
        connected = "redis" in runtime._queues
        q = runtime.connection("redis")  # what a forked worker builds: no script read again
        from eventbus.failed import redis as failed_redis
        failed_redis.RedisFailedJobStore(q.url, prefix=q.prefix)
        q.state_store()
        again = (queue.script_source.cache_info().misses, state_redis._script.cache_info().misses)
        print(json.dumps({"prepared": prepared, "read": read, "connected": connected,
                          "misses": misses, "again": again,
                          "wanted": len(queue.QUEUE_SCRIPTS + failed_redis.SCRIPTS)}))
    """)
    assert all(found["prepared"].values()), found  # type: ignore[union-attr]
    assert found["read"] == found["wanted"]
    assert found["connected"] is False  # prepared without building (or connecting) the queue
    assert found["again"] == found["misses"], found  # building the worker's objects read no script


def test_preparing_a_database_connection_loads_its_database_driver() -> None:
    reason = database_reason(PG_URL)
    if reason:
        pytest.skip(reason)
    found = _run("""
        import json, os, sys
        import eventbus
        eventbus.configure(default="database", connections={"database": {"driver": "database", "url": os.environ["PG_URL"]}})
        from eventbus import runtime
        before = "psycopg" in sys.modules
        runtime.prepare_fork()
        print(json.dumps({"before": before, "after": "psycopg" in sys.modules,
                          "stores": "eventbus.failed.database" in sys.modules,
                          "engines": "database" in runtime._queues}))
    """)
    assert found == {"before": False, "after": True, "stores": True, "engines": False}


def test_a_driver_that_cannot_prepare_leaves_it_to_the_worker() -> None:
    found = _run("""
        import json
        import eventbus
        eventbus.configure(default="database", connections={"database": {"driver": "database", "url": "nosuchdialect://x/y"}})
        from eventbus import runtime
        runtime.prepare_fork()  # the worker reports the bad URL when it builds the connection
        print(json.dumps({"ok": True}))
    """)
    assert found == {"ok": True}


def test_a_new_redis_connection_does_not_look_up_the_client_library_version(redis_client: redis.Redis) -> None:
    """redis-py 8 reads its version from its package metadata for every connection it opens
    unless given one (14 ms the first time in a process, 0.8 ms after)."""
    pytest.importorskip("redis.driver_info", reason="redis-py before 8 reads its version once, at import")
    found = _run("""
        import json, os
        import importlib.metadata
        looked_up = []
        real = importlib.metadata.version
        importlib.metadata.version = lambda name: looked_up.append(name) or real(name)
        import eventbus
        from eventbus.queue.redis import topology
        for _ in range(3):
            client = topology.sync_client(topology.parse(os.environ["REDIS_URL"]), socket_timeout=5.0, name="eventbus:t")
            client.ping()
            client.close()
        info = client.connection_pool.connection_kwargs["driver_info"]
        print(json.dumps({"looked_up": looked_up, "name": info.formatted_name, "version": info.lib_version}))
    """)
    assert found["looked_up"] == []
    assert found["name"] == "redis-py"
    assert found["version"] == redis.__version__
