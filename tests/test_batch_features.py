"""Laravel's batch features, each run by real worker processes on Redis, SQLite and PostgreSQL:
``progress``, ``before``, the exception passed to
``catch``, ``BatchDispatched``, ``failed_job_ids``, ``cancel()`` and ``delete()`` from outside a
job, ``dispatch_if``/``dispatch_unless``, ``allow_failures`` with a callback, ``retry-batch`` and
``prune-batches --unfinished/--cancelled``."""

from __future__ import annotations

import pathlib

import pytest
from click.testing import CliRunner

import eventbus
import eventbus.batches
from batch_backend import Backend
from batch_backend import backend as backend  # noqa: F401 - the parametrized fixture
from eventbus.cli import main
from eventbus.testing import fake_events
from helpers import wait_for

pytestmark = pytest.mark.integration


# -- callbacks: before, progress, catch with its exception, allow_failures(callback) ----------------

def test_before_progress_and_the_failure_each_failure_callback_receives(backend: Backend) -> None:
    from apps.batching import N, Report, on_catch, on_failure, on_progress

    with fake_events(eventbus.BatchDispatched) as events:
        batch = (eventbus.batch([N("ok1"), N("bad", fail=True), N("ok2")]).name("import")
                 .before(Report("before")).progress(on_progress).then(Report("then"))
                 .catch(on_catch, Report("catch")).finally_(Report("finally")).allow_failures(on_failure)
                 .dispatch())
    events.assert_emitted(eventbus.BatchDispatched, lambda e: e.batch.id == batch.id and e.batch.total == 3)
    assert backend.callbacks() == {"before": ["3/3/0"]}  # ran at dispatch, in this process
    backend.drain()
    assert sorted(backend.callbacks()) == ["before", "catch", "finally"]  # no then: one failed
    assert backend.lines("catch-fn") == [["3/1/1", "RuntimeError", "bad_failed"]]
    assert backend.lines("failure-fn") == [["3/1/1", "RuntimeError", "bad_failed"]]
    assert len(backend.lines("progress-fn")) == 3  # two successes and the allowed failure
    final = batch.fresh()
    assert (final.total, final.pending, final.failed, final.finished, final.cancelled) == (3, 1, 1, True, False)
    [failed_id] = final.failed_job_ids
    record = eventbus.failed_store().find(failed_id)
    assert record is not None and record.summary == "RuntimeError: bad failed"


def test_without_allow_failures_progress_counts_successes_only(backend: Backend) -> None:
    from apps.batching import N, on_progress

    eventbus.batch([N("bad", fail=True), N("ok")]).progress(on_progress).dispatch()
    backend.drain()
    assert len(backend.lines("progress-fn")) == 1


# -- from outside a job: cancel, delete, dispatch_if/unless -------------------------------------------

def test_cancel_from_outside_a_job_stops_the_rest_and_then_never_runs(backend: Backend) -> None:
    from apps.batching import N, Report

    batch = (eventbus.batch([N(f"n{i}", seconds=0.3) for i in range(6)])
             .then(Report("then")).finally_(Report("finally")).dispatch())
    backend.start_workers(1)
    wait_for(lambda: backend.ran(), timeout=60)
    eventbus.find_batch(batch.id).cancel()  # type: ignore[union-attr]  # from this process
    wait_for(lambda: "finally" in backend.callbacks(), timeout=60)
    final = batch.fresh()
    assert final.cancelled and final.finished and "then" not in backend.callbacks()
    assert backend.lines("skipped") and len(backend.ran()) < 6


def test_a_deleted_batch_is_gone_and_its_jobs_run_on_their_own(backend: Backend) -> None:
    from apps.batching import N, Report

    batch = eventbus.batch([N("x"), N("y")]).then(Report("then")).dispatch()
    batch.delete()
    assert eventbus.find_batch(batch.id) is None
    with pytest.raises(eventbus.EventBusError, match="is gone"):
        batch.fresh()
    backend.drain()
    assert backend.ran() == ["x", "y"] and backend.callbacks() == {}


def test_dispatch_if_and_unless(backend: Backend) -> None:
    from apps.batching import N

    assert eventbus.batch([N("a")]).dispatch_if(False) is None
    assert eventbus.batch([N("a")]).dispatch_unless(lambda: True) is None
    assert eventbus.batches.all_batches() == []
    made = eventbus.batch([N("b")]).dispatch_if(lambda: True)
    other = eventbus.batch([N("c")]).dispatch_unless(False)
    assert made is not None and other is not None
    assert {b.id for b in eventbus.batches.all_batches()} == {made.id, other.id}


# -- the CLI: retry-batch, prune-batches --unfinished/--cancelled ------------------------------------

def test_retry_batch_pushes_the_failed_jobs_back_and_then_runs(backend: Backend, tmp_path: pathlib.Path) -> None:
    from apps.batching import Flaky, N, Report

    flag = tmp_path / "fixed"
    batch = (eventbus.batch([N("ok"), Flaky("flaky-1", str(flag)), [Flaky("flaky-2", str(flag)), N("after-2")]])
             .allow_failures().then(Report("then")).finally_(Report("finally")).dispatch())
    backend.drain()
    failed = batch.fresh()
    assert (failed.failed, failed.finished, len(failed.failed_job_ids)) == (3, True, 3)  # after-2 never ran
    assert sorted(backend.callbacks()) == ["finally"]
    flag.touch()
    result = CliRunner().invoke(main, ["retry-batch", batch.id])
    assert result.exit_code == 0, result.output
    assert result.output.count("Pushed ") == 2  # the two with failed records; after-2 runs with its chain
    backend.drain()
    done = batch.fresh()
    assert (done.pending, done.failed, done.failed_job_ids) == (0, 0, ())
    assert sorted(backend.callbacks()) == ["finally", "then"]
    assert backend.ran().count("after-2") == 1
    missing = CliRunner().invoke(main, ["retry-batch", "no-such-batch"])
    assert missing.exit_code == 1 and "no batch no-such-batch" in missing.output


def test_prune_batches_by_state(backend: Backend) -> None:
    from apps.batching import N

    finished = eventbus.batch([]).dispatch()  # an empty batch is finished at once
    unfinished = eventbus.batch([N("never")]).dispatch()
    cancelled = eventbus.batch([N("never")]).dispatch()
    cancelled.cancel()

    def prune(*args: str) -> str:
        result = CliRunner().invoke(main, ["prune-batches", *args])
        assert result.exit_code == 0, result.output
        return result.output.strip()

    def left() -> set[str]:
        return {b.id for b in eventbus.batches.all_batches()}

    assert prune("--hours", "1", "--unfinished", "1", "--cancelled", "1") == "Removed 0 batches."
    assert prune("--hours", "1", "--cancelled", "0") == "Removed 1 batches."
    assert left() == {finished.id, unfinished.id}
    assert prune("--hours", "1", "--unfinished", "0") == "Removed 1 batches."
    assert prune("--hours", "0") == "Removed 1 batches."
    assert left() == set()
