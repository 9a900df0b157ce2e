"""The Redis driver through Sentinel: a master, a replica and three sentinels started by the test
(the failover under load is the chaos scenario ``sentinel-failover``)."""

from __future__ import annotations

import asyncio
import pathlib
import shutil
from collections.abc import Iterator

import pytest
from chaos.sentinel import SentinelSet
from helpers import wait_for

import eventbus
from eventbus.errors import NotReplicatedError
from eventbus.payload import Payload

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def sentinels(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SentinelSet]:
    if not shutil.which("redis-server"):
        pytest.skip("redis-server is needed to start a master, a replica and sentinels")
    topology = SentinelSet(tmp_path_factory.mktemp("sentinel")).start()
    try:
        yield topology
    finally:
        topology.close()


def payload(n: int) -> Payload:
    return Payload(display_name="T", command_name="t.J", command={"n": n})


def use(url: str, **options: object) -> eventbus.queue.Queue:
    eventbus.configure(default="s", connections={"s": {"driver": "redis", "url": url, **options}})
    return eventbus.connection()


def test_jobs_go_through_the_master_the_sentinels_name(sentinels: SentinelSet) -> None:
    q = use(sentinels.url())
    q.clear()
    q.push(payload(1))
    master = sentinels.master().client()
    assert master.llen("queues:{default}") == 1
    job = q.pop()
    assert job is not None and job.delete() and q.size() == 0


def test_a_planned_failover_is_followed_by_the_same_connection(sentinels: SentinelSet) -> None:
    q = use(sentinels.url())
    q.clear()
    q.push(payload(1))
    old = sentinels.master()
    sentinels.sentinels[0].client().execute_command("SENTINEL", "FAILOVER", "mymaster")
    new = sentinels.wait_failover(old)
    wait_for(lambda: old.client().info("replication")["role"] == "slave")  # writes to it are refused now
    for _ in range(50):  # the old master's connections answer READONLY once: a lost connection
        try:
            q.push(payload(2))
            break
        except eventbus.ConnectionUnavailableError:
            pass
    assert new.client().llen("queues:{default}") == 2
    assert q.size() == 2


def test_wait_replicas_acknowledges_a_push_once_a_replica_has_it(sentinels: SentinelSet) -> None:
    q = use(sentinels.url(), wait_replicas=1, wait_timeout=2.0)
    q.clear()
    q.push(payload(1))
    q.bulk([payload(2), payload(3)])
    asyncio.run(q.apush(payload(4)))
    replica = next(s for s in sentinels.servers if s is not sentinels.master())
    assert replica.client().hlen("queues:{default}:bodies") == 4


def test_a_push_no_replica_acknowledged_in_time_is_not_replicated(sentinels: SentinelSet) -> None:
    q = use(sentinels.url(), wait_replicas=1, wait_timeout=0.3)
    q.clear()
    replica = next(s for s in sentinels.servers if s is not sentinels.master())
    replica.freeze()
    try:
        with pytest.raises(NotReplicatedError, match="0 of 1 replicas") as caught:
            q.push(payload(1))
        with pytest.raises(NotReplicatedError):
            asyncio.run(q.apush(payload(2)))
    finally:
        replica.thaw()
    assert caught.value.job_uuid and q.size() == 2  # queued on the master all the same


def test_wait_replicas_is_refused_where_it_cannot_work() -> None:
    with pytest.raises(eventbus.ConfigurationError, match="min-replicas-to-write"):
        use("redis+cluster://127.0.0.1:7000", wait_replicas=1)
    with pytest.raises(eventbus.ConfigurationError, match="wait_timeout"):
        use("redis://127.0.0.1:6379/0", wait_replicas=1, wait_timeout=30)


def test_the_master_and_the_sentinels_each_with_a_password(tmp_path: pathlib.Path) -> None:
    topology = SentinelSet(tmp_path, password="data-secret", sentinel_password="watch-secret").start()
    try:
        url = topology.url()
        assert "data-secret" in url and "sentinel_password=watch-secret" in url
        q = use(url)
        q.push(payload(1))
        assert topology.master().client().llen("queues:{default}") == 1
        assert asyncio.run(q.apush(payload(2))) and q.size() == 2
        assert "data-secret" not in repr(eventbus.settings()) and "watch-secret" not in repr(eventbus.settings())
        with pytest.raises(eventbus.ConnectionUnavailableError):  # the sentinels refuse a wrong password
            use(url.replace("watch-secret", "wrong")).push(payload(3))
    finally:
        topology.close()
