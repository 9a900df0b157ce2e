"""The cluster a failover scenario kills a master of must have replicated that master's data first.

``cluster-replica-failover`` lost a batch (its ``then`` and ``finally`` never ran) because the
replica promoted had never synchronised: Redis delays a diskless full sync by
``repl-diskless-sync-delay`` (5 s by default), the scenario killed the master about 3 s after the
cluster reported ``cluster_state:ok``, and the replica took over empty. Every key in the dead
master's slots was gone, a batch's among them: its remaining outcomes found no batch and no
callback came due. No client can survive a failover that loses acknowledged writes, so the
cluster helper waits for every replica to be in sync before a scenario uses the cluster."""

from __future__ import annotations

import pathlib
import time

import pytest
from redis.cluster import ClusterNode as ClusterNodeAddress
from redis.cluster import RedisCluster
from redis.crc import key_slot

from chaos.cluster import Cluster, ClusterNode
from eventbus.batching.redis import RedisBatchRepository

pytestmark = [pytest.mark.chaos, pytest.mark.integration, pytest.mark.timeout(120)]


def test_a_batch_survives_its_master_killed_right_after_the_cluster_started(tmp_path: pathlib.Path) -> None:
    with Cluster(tmp_path / "cluster", replicas=1, full_coverage=True) as cluster:
        client = RedisCluster(startup_nodes=[ClusterNodeAddress("127.0.0.1", n.port) for n in cluster.nodes],
                              socket_timeout=2)
        try:
            batches = RedisBatchRepository(client, "test:")
            batch_id = "b-failover"
            head = batches.keys(batch_id)[0]
            assert batches.create(batch_id, {"name": "failover"}, 2, owner="dispatcher") == []
            assert batches.record(batch_id, "job-1", True) == []
            victim = cluster.master_of_key(head)
            caught_up(cluster, victim, within=1.0)
            victim.kill()
            promoted = cluster.wait_promoted(victim, key_slot(head.encode()))
            assert promoted.client().exists(head), (
                f"{promoted.address} took over from {victim.address} without the batch: its replica had "
                f"not synchronised yet")
            found = batches.find(batch_id)
            assert found is not None and found.pending == 1
        finally:
            client.close()


def caught_up(cluster: Cluster, master: ClusterNode, within: float) -> bool:
    """Give ``master``'s replicas up to ``within`` seconds to apply what it has written so far
    (a replica that is streaming does so in milliseconds; one still waiting for its first sync
    does not)."""
    wanted = int(master.client().info("replication")["master_repl_offset"])
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        offsets = [int(info.get("slave_repl_offset", 0)) for info in
                   (n.client().info("replication") for n in cluster.live() if n is not master)
                   if info.get("role") == "slave" and int(info.get("master_port", 0)) == master.port]
        if offsets and min(offsets) >= wanted:
            return True
        time.sleep(0.02)
    return False
