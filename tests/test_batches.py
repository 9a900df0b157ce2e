"""Batches and chain callbacks, run by two real worker processes on Redis, SQLite and PostgreSQL."""

from __future__ import annotations

import time

import pytest

import eventbus
from batch_backend import Backend
from batch_backend import backend as backend  # noqa: F401 - the parametrized fixture
from helpers import wait_for

pytestmark = pytest.mark.integration


def callbacks(backend: Backend) -> dict[str, list[str]]:
    return backend.callbacks()


def ran(backend: Backend) -> list[str]:
    return backend.ran()


def test_a_batch_runs_on_two_workers_and_its_callbacks_run_once(backend: Backend) -> None:
    from apps.batching import N, Report, report_listener

    batch = (eventbus.batch([N(f"s{n}", seconds=0.05) for n in range(10)] + [[N("c1"), N("c2")]])
             .name("import").then(Report("then"), report_listener).catch(Report("catch"))
             .finally_(Report("finally")).dispatch())
    assert (batch.total, batch.pending, batch.failed, batch.name) == (12, 12, 0, "import")
    backend.start_workers(2)
    wait_for(lambda: len(backend.lines("callback")) == 3, timeout=60)
    time.sleep(1.0)  # nothing more may come
    assert callbacks(backend) == {"then": ["12/0/0"], "finally": ["12/0/0"], "listener": ["12/0/0"]}
    assert ran(backend) == sorted([f"s{n}" for n in range(10)] + ["c1", "c2"])
    done = batch.fresh()
    assert done.finished and not done.cancelled and done.progress == 100.0


def test_a_failure_cancels_the_batch_catch_and_finally_run_once(backend: Backend) -> None:
    from apps.batching import N, Report

    batch = (eventbus.batch([N("bad", fail=True)] + [N(f"s{n}", seconds=0.3) for n in range(4)]
                            + [[N("chain-bad", fail=True), N("never")]])
             .then(Report("then")).catch(Report("catch")).finally_(Report("finally")).dispatch())
    backend.start_workers(2)
    wait_for(lambda: "finally" in callbacks(backend), timeout=60)
    time.sleep(1.0)
    assert {kind: len(seen) for kind, seen in callbacks(backend).items()} == {"catch": 1, "finally": 1}
    final = batch.fresh()
    assert final.cancelled and final.failed >= 1 and final.pending >= 1  # the rest saw the cancel
    assert "never" not in ran(backend)


def test_a_failed_chain_step_settles_the_steps_that_will_never_run(backend: Backend) -> None:
    from apps.batching import N, Report

    batch = (eventbus.batch([[N("chain-bad", fail=True), N("never-1"), N("never-2")], N("ok")])
             .allow_failures().finally_(Report("finally")).dispatch())
    backend.start_workers(1)
    wait_for(lambda: "finally" in callbacks(backend), timeout=60)  # Laravel's would wait forever
    final = batch.fresh()
    assert (final.total, final.failed, final.pending) == (4, 3, 3) and final.finished
    assert ran(backend) == ["chain-bad", "ok"]


def test_allow_failures_keeps_the_batch_going(backend: Backend) -> None:
    from apps.batching import N, Report

    batch = (eventbus.batch([N("bad", fail=True), N("good")]).allow_failures()
             .then(Report("then")).catch(Report("catch")).finally_(Report("finally")).dispatch())
    backend.start_workers(1)
    wait_for(lambda: "finally" in callbacks(backend), timeout=60)
    assert set(callbacks(backend)) == {"catch", "finally"}  # then: not every job succeeded
    assert not batch.fresh().cancelled and ran(backend) == ["bad", "good"]


def test_jobs_may_add_jobs_to_their_batch(backend: Backend) -> None:
    from apps.batching import Grow, Report

    eventbus.batch([Grow("g")]).then(Report("then")).dispatch()
    backend.start_workers(2)
    wait_for(lambda: "then" in callbacks(backend), timeout=60)
    assert ran(backend) == ["g", "g-child-1", "g-child-2"]
    assert callbacks(backend)["then"] == ["3/0/0"]


def test_a_batch_can_be_a_chain_step_and_an_empty_batch_finishes_at_once(backend: Backend) -> None:
    from apps.batching import N, Report

    eventbus.chain([N("before"), eventbus.batch([N("b1"), N("b2")]).then(Report("inner-then")),
                    N("after"), eventbus.batch([]).then(Report("empty-then")), N("last")]) \
        .finally_(Report("chain-finally")).dispatch()
    backend.start_workers(2)
    # The inner batch's then callback and the chain's next step are pushed together, and two
    # workers may run them in either order: the callback can come after the chain's end (a CI run
    # looked when chain-finally was in but inner-then not yet).
    wait_for(lambda: set(callbacks(backend)) == {"inner-then", "empty-then", "chain-finally"}, timeout=60)
    order = backend.order()
    assert order[0] == "before" and set(order[1:3]) == {"b1", "b2"} and order[3:] == ["after", "last"]


def test_chain_catch_and_finally(backend: Backend) -> None:
    from apps.batching import N, Report

    eventbus.chain([N("one"), N("two", fail=True), N("three")]) \
        .catch(Report("catch")).finally_(Report("finally")).dispatch()
    eventbus.chain([N("x"), N("y")]).catch(Report("ok-catch")).finally_(Report("ok-finally")).dispatch()
    backend.start_workers(2)
    wait_for(lambda: {"finally", "ok-finally"} <= set(callbacks(backend)), timeout=60)
    time.sleep(0.5)
    assert sorted(callbacks(backend)) == ["catch", "finally", "ok-finally"]
    assert "three" not in ran(backend)


def test_the_cli_lists_shows_and_prunes_batches(backend: Backend) -> None:
    from click.testing import CliRunner

    from apps.batching import N
    from eventbus.cli import main

    batch = eventbus.batch([N("a")]).name("nightly").dispatch()
    backend.start_workers(1)
    wait_for(lambda: batch.fresh().finished, timeout=60)
    listing = CliRunner().invoke(main, ["batches"])
    assert listing.exit_code == 0 and batch.id in listing.output and "nightly" in listing.output
    assert "finished" in listing.output
    shown = CliRunner().invoke(main, ["batches", batch.id, "--json"])
    assert '"total": 1' in shown.output and '"pending": 0' in shown.output
    assert "Removed 0 batches." in CliRunner().invoke(main, ["prune-batches", "--hours", "1"]).output
    assert "Removed 1 batches." in CliRunner().invoke(main, ["prune-batches", "--hours", "0"]).output
    assert eventbus.find_batch(batch.id) is None


def test_a_batch_nested_four_levels_deep_in_a_chain_dispatches_and_runs(backend: Backend) -> None:
    """Issue 26, bug 6: this raised ``SerializationError: PendingBatch``. The outer batch's chain
    step that is a batch counts as done when that inner batch has finished (so "after" waits)."""
    from apps.batching import N, Report

    eventbus.chain([eventbus.batch([[N("a"), eventbus.batch([N("b")]).then(Report("inner"))]])
                    .then(Report("outer")), N("after")]).dispatch()
    backend.start_workers(2)
    # "after" and the outer batch's ``then`` are pushed when that batch finishes, as two jobs that
    # two workers may run in either order: wait for both callbacks too before looking
    wait_for(lambda: "after" in backend.ran() and len(backend.callbacks()) >= 2, timeout=60)
    assert backend.order() == ["a", "b", "after"]
    assert set(backend.callbacks()) == {"inner", "outer"}


def test_a_failure_recorded_when_its_failed_store_came_back_settles_batch_and_chain_once(
        backend: Backend) -> None:
    """The first worker cannot reach its failed store: it settles the batch and the chain, calls
    failed(), and leaves each job held with its failure. The second records them when they come
    back; their batch hears of them again (a no-op) and their chain's catch is not pushed again."""
    from apps.batching import N, Report

    backend.env.update({"BATCHES_RETRY_AFTER": "3", "EVENTBUS_TIMEOUT_GRACE": "1"})  # 1 s + 1 s < 3 s
    eventbus.configure(default="batches", connections={"batches": {
        "driver": "database" if backend.driver == "database" else "redis", "url": backend.url, "retry_after": 3}})
    batch = (eventbus.batch([[N("x", fail=True), N("never")], N("ok")])
             .catch(Report("batch-catch")).finally_(Report("batch-finally")).dispatch())
    eventbus.chain([N("y", fail=True)]).catch(Report("chain-catch")).dispatch()
    backend.start_workers(1, "--timeout", "1", env={"EVENTBUS_FAILED_URL": "redis://127.0.0.1:1/0"})
    wait_for(lambda: len(backend.callbacks()) == 3, timeout=60)
    assert eventbus.failed_store().all() == []  # nothing recorded yet
    backend.start_workers(1, "--timeout", "1")
    wait_for(lambda: len(eventbus.failed_store().all()) == 2, timeout=60)
    time.sleep(1.0)
    assert {kind: len(seen) for kind, seen in backend.callbacks().items()} == {
        "batch-catch": 1, "batch-finally": 1, "chain-catch": 1}
    assert {r.summary for r in eventbus.failed_store().all()} == {"RuntimeError: x failed", "RuntimeError: y failed"}
    final = batch.fresh()
    assert (final.failed, final.pending, final.finished) == (2, 2, True)


def test_a_callback_job_that_ran_is_not_run_again_when_its_acknowledgement_was_lost(
        backend: Backend) -> None:
    """A callback job ran and noted so in its batch, but its acknowledgement never reached its
    queue (a worker killed in between, a Redis master lost before it replicated the delete): its
    reservation runs out and it comes back. The worker that gets it acknowledges it without
    running it again, so each callback runs once whenever its batch's store kept the note."""
    from apps.batching import N, Report
    from eventbus.batching import outcomes
    from eventbus.dispatching import after_success, dispatch_next_in_chain, push_steps
    from eventbus.queue.base import JobState
    from eventbus.worker.processing import ProcessOptions, process

    eventbus.configure(default="batches", connections={"batches": {
        "driver": backend.driver, "url": backend.url, "retry_after": 3}})
    eventbus.batch([N("a")]).then(Report("then")).dispatch()
    queue = eventbus.connection()
    member = queue.pop()
    assert member is not None
    process(member, ProcessOptions(timeout=1.0), failed=None, continue_chain=dispatch_next_in_chain,
            after_success=after_success)
    callback = queue.pop()  # the then callback, reserved: its run is over, its delete is lost
    assert callback is not None and callback.payload().display_name.endswith("Report")
    outcomes.record_success(callback.payload(), push_steps)  # what its worker noted after handle()
    backend.start_workers(1, "--timeout", "1", env={"EVENTBUS_TIMEOUT_GRACE": "1", "BATCHES_RETRY_AFTER": "3"})
    wait_for(lambda: not queue.list_jobs(JobState.RESERVED) and not queue.list_jobs(JobState.READY), timeout=30)
    time.sleep(0.5)
    assert callbacks(backend) == {}
    assert ran(backend) == ["a"]
    assert eventbus.failed_store().all() == []  # acknowledged, not failed as a job out of tries
