"""The Redis driver and failed store on a real three-node Redis Cluster started by the test."""

from __future__ import annotations

import asyncio
import json
import pathlib
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator

import pytest
import redis
from apps import jobs
from helpers import traces, wait_for

import eventbus
from eventbus.payload import Payload

pytestmark = pytest.mark.integration


def _free_ports(n: int) -> list[int]:
    ports: list[int] = []
    while len(ports) < n:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port + 10000 < 65536 and port not in ports:  # the cluster bus listens on port + 10000
            ports.append(port)
    return ports


@pytest.fixture(scope="module")
def cluster_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if not shutil.which("redis-server") or not shutil.which("redis-cli"):
        pytest.skip("redis-server and redis-cli are needed to start a local cluster")
    base = tmp_path_factory.mktemp("cluster")
    ports = _free_ports(3)
    for port in ports:
        d = pathlib.Path(base, str(port))
        d.mkdir()
        subprocess.run(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--cluster-enabled", "yes",
                        "--cluster-config-file", str(d / "nodes.conf"), "--save", "", "--appendonly", "no",
                        "--dir", str(d), "--daemonize", "yes", "--logfile", str(d / "log")], check=True)
    try:
        for port in ports:
            _wait(lambda p=port: subprocess.run(["redis-cli", "-p", str(p), "ping"], capture_output=True).returncode == 0)
        subprocess.run(["redis-cli", "--cluster", "create", *[f"127.0.0.1:{p}" for p in ports],
                        "--cluster-replicas", "0", "--cluster-yes"], check=True, capture_output=True)
        _wait(lambda: b"cluster_state:ok" in subprocess.run(
            ["redis-cli", "-p", str(ports[0]), "cluster", "info"], capture_output=True).stdout)
        yield f"redis://127.0.0.1:{ports[0]}/0"
    finally:
        for port in ports:
            subprocess.run(["redis-cli", "-p", str(port), "shutdown", "nosave"], capture_output=True)


def _wait(check: object, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError("the local Redis Cluster did not come up")
        time.sleep(0.1)


def payload(n: int) -> Payload:
    return Payload(display_name="T", command_name="t.J", command={"n": n, "big": 2**70, "empty": []})


def test_queues_on_different_slots_work_end_to_end(cluster_url: str) -> None:
    eventbus.configure(default="c", connections={"c": {"driver": "redis", "url": cluster_url, "cluster": True,
                                                       "retry_after": 1, "block_for": 1}})
    q = eventbus.connection()
    names = [f"queue-{i}" for i in range(6)]  # spread over the three nodes
    for name in names:
        q.clear(name)
        q.push(payload(1), name)
        q.bulk([payload(n) for n in range(2, 5)], name)
        q.later(0.2, payload(5), name)
    time.sleep(0.3)
    for name in names:
        assert q.size(name) == 5
        got = []
        while (job := q.pop(name)) is not None:
            got.append(json.loads(job.raw)["data"]["command"]["n"])
            assert job.delete()
        assert got == [1, 2, 3, 4, 5]
        assert json.loads(payload(0).to_json())["data"]["command"]["big"] == 2**70
    q.wait(names, 0.1)  # blocking wait on a cluster: one slot at a time
    assert q.record_exception("some-uuid") == 1
    q.set_signal("restart", 1.0)
    assert q.signals()["restart"] == 1.0


def test_failed_store_on_a_cluster(cluster_url: str) -> None:
    store = eventbus.failed.store_for(f"{cluster_url}?cluster=1")  # type: ignore[attr-defined]
    store.flush()
    store.log("c", "default", "{}", "RuntimeError: x", "u-1")
    store.log("c", "default", "{}", "RuntimeError: y", "u-2")
    assert [r.uuid for r in store.all()] == ["u-2", "u-1"]
    assert store.forget("u-1") and store.find("u-1") is None
    assert store.flush() == 1 and store.all() == []


def test_a_worker_on_a_cluster(cluster_url: str, redis_client: redis.Redis, start_worker: object) -> None:
    eventbus.configure(default="cluster", connections={"cluster": {"driver": "redis", "url": cluster_url,
                                                                   "cluster": True}})
    for n in range(10):
        jobs.Record(n).dispatch(queue="high" if n % 2 else "low")
    jobs.Flaky(99).dispatch(queue="low")
    env = {"TEST_CLUSTER_URL": cluster_url}
    w = start_worker("--queue", "high,low", "--sleep", "0.05", "--quiet", env=env)  # type: ignore[operator]
    wait_for(lambda: len(traces(redis_client, "ran")) == 10 and traces(redis_client, "failed"), timeout=30)
    w.signal(signal.SIGTERM)
    assert w.wait() == 0
    assert sorted(map(int, traces(redis_client, "ran"))) == list(range(10))
    [record] = eventbus.runtime.failed_store().all()
    assert record.queue == "low" and "flaky 99" in record.summary


def test_async_pushes_on_a_cluster(cluster_url: str) -> None:
    eventbus.configure(default="c", connections={"c": {"driver": "redis", "url": cluster_url, "cluster": True}})
    q = eventbus.connection()
    names = [f"aqueue-{i}" for i in range(6)]  # spread over the three nodes

    async def push() -> None:
        for name in names:
            await q.apush(payload(1), name)
            await q.abulk([payload(n) for n in range(2, 5)], name)
            await q.alater(60, payload(5), name)

    for name in names:
        q.clear(name)
    asyncio.run(push())
    for name in names:
        assert q.size(name) == 5 and q.stats(name).delayed == 1
        got = []
        while (job := q.pop(name)) is not None:
            got.append(json.loads(job.raw)["data"]["command"]["n"])
            assert job.delete()
        assert got == [1, 2, 3, 4]


def test_an_idle_wait_on_a_cluster_wakes_for_any_of_its_queues(cluster_url: str) -> None:
    """One BLPOP cannot span slots: the wait blocks on every queue's node at once, and the pops
    cut short after the first reply leave no BLPOP behind to take the next wake-up token."""
    eventbus.configure(default="c", connections={"c": {"driver": "redis", "url": cluster_url, "cluster": True,
                                                       "block_for": 5}})
    q = eventbus.connection()
    names = [f"wake-{i}" for i in range(6)]  # spread over the three nodes
    for name in names:
        q.clear(name)
    pusher = redis.RedisCluster.from_url(cluster_url)
    for name in names:
        q.wait(names, 0.01)  # every node's connection made
        timer = threading.Timer(0.3, lambda n=name: q.push(payload(1), n))
        started = time.monotonic()
        timer.start()
        q.wait(names, 5.0)
        timer.join()
        assert time.monotonic() - started < 3.0, f"a push to {name} did not wake the wait"
        assert (job := q.pop(name)) is not None and job.delete()
        blocked = [c for node in pusher.get_primaries()
                   for c in pusher.client_list(target_nodes=node) if "b" in c.get("flags", "")]
        assert blocked == []  # nothing left blocked to take the next token
    pusher.close()
