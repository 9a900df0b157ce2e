"""Laravel's job middleware options with real workers: ThrottlesExceptions (``delete_when``,
``fail_when``, ``report``, ``backoff`` as a function, ``by``), WithoutOverlapping (``shared``,
``with_prefix``) and rate limiters that give each job its own limits."""

from __future__ import annotations

import time

import pytest
from helpers import wait_for
from toolbox_backend import Backend, redis_backend  # noqa: F401  (the fixture)

import eventbus
from eventbus import RateLimited
from eventbus.errors import ConfigurationError

pytestmark = pytest.mark.integration


def test_throttled_exceptions_are_deleted_failed_reported_or_backed_off(redis_backend: Backend) -> None:
    from apps.toolbox import Charge

    eventbus.dispatch_many([Charge(1, "expired"), Charge(2, "fraud"), Charge(3, "down"), Charge(4, "")])
    redis_backend.start_workers(1)
    wait_for(lambda: eventbus.connection().size() == 0, timeout=60)
    runs = redis_backend.lines("charge")
    attempts = {n: [int(f[-3]) for f in runs if f[0] == n] for n in ("1", "2", "3", "4")}
    assert attempts == {"1": [1], "2": [1], "3": [1, 2, 3], "4": [1]}
    [failed] = eventbus.failed_store().all()  # the fraud only: the expired card was deleted
    assert "Fraud: charge 2 looks like fraud" in failed.exception
    down = [float(f[-1]) for f in runs if f[0] == "3"]
    assert down[1] - down[0] >= 1.0 and down[2] - down[1] >= 1.0  # the backoff the function chose
    output = redis_backend.worker_output()
    assert output.count("reported by ThrottlesExceptions") == 2  # the two GatewayDown, not the others
    assert "GatewayDown: gateway down for charge 3" in output and "Traceback" in output


def test_by_shares_one_circuit_between_job_classes(redis_backend: Backend) -> None:
    """``by(key)``: an exception in one class opens the circuit for every class naming the key."""
    from apps.toolbox import CallService, PingService

    CallService("stripe", fails=True).dispatch()
    redis_backend.start_workers(1)
    wait_for(lambda: redis_backend.lines("call") != [], timeout=30)
    opened = float(redis_backend.lines("call")[0][-1])
    PingService("stripe", fails=False).dispatch()
    PingService("mailgun", fails=False).dispatch()
    wait_for(lambda: len(redis_backend.lines("call")) == 3, timeout=30)
    first, *later = redis_backend.lines("call")
    assert [f[0] for f in later] == ["mailgun", "stripe"]
    assert float(later[1][-1]) >= opened + 2.5  # stripe's ping waited for the circuit to close
    [failed] = eventbus.failed_store().all()
    assert failed.display_name.endswith("CallService")


def test_a_shared_overlap_lock_keeps_two_job_classes_apart(redis_backend: Backend) -> None:
    from apps.toolbox import Export, Import

    eventbus.dispatch_many([Export("acct-1"), Import("acct-1")] * 3)
    redis_backend.start_workers(2)
    wait_for(lambda: len(redis_backend.lines("end")) == 6, timeout=60)
    events = sorted([(float(f[-1]), 1) for f in redis_backend.lines("start")] +
                    [(float(f[-1]), -1) for f in redis_backend.lines("end")])
    running = peak = 0
    for _, step in events:
        running += step
        peak = max(peak, running)
    assert peak == 1
    assert eventbus.failed_store().all() == []


def test_an_overlap_lock_under_its_own_prefix(redis_backend: Backend) -> None:
    from apps.toolbox import TenantTask

    from eventbus import WithoutOverlapping
    key = WithoutOverlapping("acct-9").with_prefix("tenant-a:").lock_key(TenantTask("acct-9"))
    assert key.startswith("tenant-a:apps.toolbox.TenantTask:")
    store = eventbus.runtime.state()
    assert store.add(key, "someone else", ttl_s=60)  # another app of the tenant holds it
    TenantTask("acct-9").dispatch()
    redis_backend.start_workers(1)
    time.sleep(1.5)
    assert redis_backend.lines("tenant-task") == []  # released (no try used) while the lock is held
    store.delete(key)
    wait_for(lambda: redis_backend.lines("tenant-task") != [], timeout=30)
    assert eventbus.failed_store().all() == []


def test_a_limiter_gives_each_job_its_own_limits_or_none(redis_backend: Backend) -> None:
    from apps.toolbox import PlanJob

    eventbus.dispatch_many([PlanJob("vip", n, vip=True) for n in range(3)] +
                           [PlanJob("a", 1), PlanJob("a", 2), PlanJob("b", 1)])
    redis_backend.start_workers(1)
    wait_for(lambda: len(redis_backend.lines("plan")) == 5, timeout=60)
    time.sleep(1.0)
    ran = sorted((f[0], int(f[1])) for f in redis_backend.lines("plan"))
    assert ran == [("a", 1), ("b", 1), ("vip", 0), ("vip", 1), ("vip", 2)]  # a's second waits a day
    stats = eventbus.connection().stats()
    assert stats.delayed == 1 and eventbus.failed_store().all() == []  # released without a try


def test_a_limiter_that_returns_something_else_or_is_undefined_is_a_clear_error() -> None:
    """An undefined limiter is an error here (Laravel runs the job without a limit): a misspelt
    name must not lift a limit silently."""
    from apps.toolbox import PlanJob

    eventbus.rate_limit("broken", lambda job: "ten a minute")
    job = PlanJob("a", 1)
    with pytest.raises(ConfigurationError, match="returned 'ten a minute'; a limiter returns a Limit"):
        RateLimited("broken").handle(job, lambda j: None)
    with pytest.raises(ConfigurationError, match="unknown rate limit 'nope'"):
        RateLimited("nope").handle(job, lambda j: None)


def test_a_limiter_is_windows_or_a_function_and_every_limit_allows_one_job() -> None:
    from eventbus import Limit
    with pytest.raises(ConfigurationError, match="needs per_second, per_minute, per_hour or per_day"):
        eventbus.rate_limit("empty")
    with pytest.raises(ConfigurationError, match="must allow at least one job"):
        eventbus.rate_limit("zero", per_minute=0)
    with pytest.raises(ConfigurationError, match="must allow at least one job"):
        Limit.per_minute(0)
    with pytest.raises(ConfigurationError, match="either a function of the job or windows"):
        eventbus.rate_limit("both", lambda job: None, per_minute=1)
    assert Limit.per_hour(5).by(42) == Limit(5, 3600.0, "42") and Limit.none() == ()
