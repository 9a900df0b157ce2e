"""The scenarios of issue 27's topologies: Redis Cluster, Sentinel, worker hosts cut off from
Redis, beanstalkd. Their code lives in a module per topology; this is their table, which
:mod:`chaos.catalogue` joins to the first one. ``fault`` is the issue's point (``27.5``)."""

from __future__ import annotations

from chaos import beanstalk_scenarios as beanstalk
from chaos import cluster_scenarios as cluster
from chaos import netns_scenarios as netns
from chaos import sentinel_scenarios as sentinel
from chaos.scenarios import Scenario

SCENARIOS: list[Scenario] = [
    Scenario("cluster-failed-store", cluster.failed_store_master_down, fault="27.5"),
    Scenario("cluster-queue-order", cluster.dead_master_queue_order, fault="27.6"),
    Scenario("cluster-seed-down", cluster.seed_down, fault="27.7"),
    Scenario("cluster-idle-wake", cluster.idle_wake, fault="27.8"),
    Scenario("cluster-replica-failover", cluster.replica_failover),
    Scenario("beanstalkd-kill9", beanstalk.kill9, fault="27.8"),
    Scenario("sentinel-failover", sentinel.failover),
    Scenario("netns-cut-long", netns.cut_long),
    Scenario("netns-cut-short", netns.cut_short),
    Scenario("netns-asymmetric", netns.asymmetric),
    Scenario("netns-slow-links", netns.slow_links),
    Scenario("netns-sentinel-partition", netns.sentinel_partition),
]
