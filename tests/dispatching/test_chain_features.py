"""Laravel's chain features beyond ``chain([...])``, run by real workers on Redis, SQLite and
PostgreSQL: ``prepend_to_chain``/``append_to_chain`` from inside a running job (the added step
carries the chain's ``catch`` and ``finally_`` jobs) and ``dispatch_if``/``dispatch_unless``."""

from __future__ import annotations

import pytest
from batch_backend import Backend
from batch_backend import backend as backend  # noqa: F401 - the parametrized fixture

import eventbus

pytestmark = pytest.mark.integration


def test_a_running_step_prepends_and_appends_to_its_chain(backend: Backend) -> None:
    from apps.batching import Amend, N, Report

    eventbus.chain([Amend("a", first=["next"], last=["last"]), N("b")]).finally_(Report("finally")).dispatch()
    backend.drain()
    assert backend.order() == ["a", "next", "b", "last"]
    assert backend.callbacks() == {"finally": ["-"]}  # once, after the appended last step


def test_a_job_that_was_no_chain_becomes_one_and_its_finally_waits(backend: Backend) -> None:
    from apps.batching import Amend, Report

    eventbus.chain([Amend("solo", last=["after"])]).finally_(Report("finally")).dispatch()
    backend.drain()
    assert backend.order() == ["solo", "after"]
    assert backend.callbacks() == {"finally": ["-"]}


def test_an_added_step_that_fails_runs_the_chains_catch_and_finally(backend: Backend) -> None:
    from apps.batching import Amend, N, Report

    (eventbus.chain([Amend("a", first=["bad"]), N("never")])
     .catch(Report("catch")).finally_(Report("finally")).dispatch())
    backend.drain()
    assert backend.order() == ["a", "bad"]
    assert backend.callbacks() == {"catch": ["-"], "finally": ["-"]}
    assert len(eventbus.failed_store().all()) == 1


def test_chain_dispatch_if_and_unless(backend: Backend) -> None:
    from apps.batching import N

    assert eventbus.chain([N("skipped")]).dispatch_if(False) is None
    assert eventbus.chain([N("skipped")]).dispatch_unless(lambda: True) is None
    assert eventbus.chain([N("x"), N("y")]).dispatch_if(lambda: True) is not None
    assert eventbus.chain([N("z")]).dispatch_unless(False, queue="default") is not None
    backend.drain()
    assert sorted(backend.ran()) == ["x", "y", "z"]


def test_adding_to_a_chain_outside_a_worker_is_an_error_not_a_lost_job() -> None:
    from apps.batching import N

    with pytest.raises(RuntimeError, match="not running on a queue"):
        N("a").append_to_chain(N("b"))
    with pytest.raises(TypeError, match="batch cannot be added"):
        from eventbus.dispatching import make_payload
        from eventbus.dispatching.chains import amend_chain

        amend_chain(make_payload(N("a")), eventbus.batch([N("b")]), queue=None, connection=None, first=True)
