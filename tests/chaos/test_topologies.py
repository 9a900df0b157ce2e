"""Issue 27's topologies: each defect reproduced by a scenario that failed until it was fixed
(marked with :func:`fault` while open), and the new ground (Sentinel, cut-off worker hosts,
a cluster master failover) held to the standard checks."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from chaos.conftest import assert_checks
from chaos.scene import Result

#: A scenario runs inside the first test that judges it: a few of these take a minute on a busy machine.
pytestmark = [pytest.mark.chaos, pytest.mark.integration, pytest.mark.timeout(300)]

Run = Callable[[str], Result]


def fault(points: str, why: str) -> pytest.MarkDecorator:
    return pytest.mark.xfail(strict=True, raises=AssertionError, reason=f"issue 27 point {points}: {why}")


def test_defect5_failures_are_recorded_while_another_master_is_down(scenario: Run) -> None:
    assert_checks(scenario("cluster-failed-store"))


def test_defect6_a_dead_master_does_not_block_the_other_queues(scenario: Run) -> None:
    assert_checks(scenario("cluster-queue-order"))


def test_defect7_several_seeds_and_cluster_down_as_a_lost_connection(scenario: Run) -> None:
    assert_checks(scenario("cluster-seed-down"))


def test_defect8_an_idle_worker_wakes_for_every_queue_of_a_cluster(scenario: Run) -> None:
    assert_checks(scenario("cluster-idle-wake"))


def test_defect8_a_worker_warns_when_beanstalkd_keeps_no_binlog(scenario: Run) -> None:
    assert_checks(scenario("beanstalkd-kill9"))


def test_sentinel_failover_is_followed_and_loses_no_acknowledged_job(scenario: Run) -> None:
    assert_checks(scenario("sentinel-failover"))


def test_wait_replicas_loses_no_acknowledged_push_to_a_partitioned_master(scenario: Run) -> None:
    assert_checks(scenario("netns-sentinel-partition"))


def test_a_worker_host_cut_off_past_retry_after_cannot_undo_the_takeover(scenario: Run) -> None:
    assert_checks(scenario("netns-cut-long"))


def test_a_worker_host_cut_off_briefly_runs_its_job_once(scenario: Run) -> None:
    assert_checks(scenario("netns-cut-short"))


def test_a_worker_host_that_hears_nothing_back_loses_nothing(scenario: Run) -> None:
    assert_checks(scenario("netns-asymmetric"))


def test_slow_and_lossy_links_drain_within_half_the_clean_rate(scenario: Run) -> None:
    assert_checks(scenario("netns-slow-links"))


def test_a_cluster_master_fails_over_during_a_drain_with_batches_and_unique_jobs(scenario: Run) -> None:
    assert_checks(scenario("cluster-replica-failover"))
