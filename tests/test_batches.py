"""Batches and chain callbacks, run by two real worker processes on Redis, SQLite and PostgreSQL."""

from __future__ import annotations

import collections
import time

import pytest

import eventbus
from helpers import wait_for
from test_toolbox import Backend
from test_toolbox import backend as backend  # noqa: F401 - the parametrized fixture

pytestmark = pytest.mark.integration


def callbacks(backend: Backend) -> dict[str, list[str]]:
    found: dict[str, list[str]] = collections.defaultdict(list)
    for fields in backend.lines("callback"):
        found[fields[0]].append(fields[1])
    return dict(found)


def ran(backend: Backend) -> list[str]:
    return sorted(fields[0] for fields in backend.lines("ran"))


def test_a_batch_runs_on_two_workers_and_its_callbacks_run_once(backend: Backend) -> None:
    from apps.toolbox import Report, Step, report_listener

    batch = (eventbus.batch([Step(f"s{n}", seconds=0.05) for n in range(10)] + [[Step("c1"), Step("c2")]])
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
    from apps.toolbox import Report, Step

    batch = (eventbus.batch([Step("bad", fail=True)] + [Step(f"s{n}", seconds=0.3) for n in range(4)]
                            + [[Step("chain-bad", fail=True), Step("never")]])
             .then(Report("then")).catch(Report("catch")).finally_(Report("finally")).dispatch())
    backend.start_workers(2)
    wait_for(lambda: "finally" in callbacks(backend), timeout=60)
    time.sleep(1.0)
    assert {kind: len(seen) for kind, seen in callbacks(backend).items()} == {"catch": 1, "finally": 1}
    final = batch.fresh()
    assert final.cancelled and final.failed >= 1 and final.pending >= 1  # the rest saw the cancel
    assert "never" not in ran(backend)


def test_a_failed_chain_step_settles_the_steps_that_will_never_run(backend: Backend) -> None:
    from apps.toolbox import Report, Step

    batch = (eventbus.batch([[Step("chain-bad", fail=True), Step("never-1"), Step("never-2")], Step("ok")])
             .allow_failures().finally_(Report("finally")).dispatch())
    backend.start_workers(1)
    wait_for(lambda: "finally" in callbacks(backend), timeout=60)  # Laravel's would wait forever
    final = batch.fresh()
    assert (final.total, final.failed, final.pending) == (4, 3, 3) and final.finished
    assert ran(backend) == ["chain-bad", "ok"]


def test_allow_failures_keeps_the_batch_going(backend: Backend) -> None:
    from apps.toolbox import Report, Step

    batch = (eventbus.batch([Step("bad", fail=True), Step("good")]).allow_failures()
             .then(Report("then")).catch(Report("catch")).finally_(Report("finally")).dispatch())
    backend.start_workers(1)
    wait_for(lambda: "finally" in callbacks(backend), timeout=60)
    assert set(callbacks(backend)) == {"catch", "finally"}  # then: not every job succeeded
    assert not batch.fresh().cancelled and ran(backend) == ["bad", "good"]


def test_jobs_may_add_jobs_to_their_batch(backend: Backend) -> None:
    from apps.toolbox import Grow, Report

    eventbus.batch([Grow("g")]).then(Report("then")).dispatch()
    backend.start_workers(2)
    wait_for(lambda: "then" in callbacks(backend), timeout=60)
    assert ran(backend) == ["g", "g-child-1", "g-child-2"]
    assert callbacks(backend)["then"] == ["3/0/0"]


def test_a_batch_can_be_a_chain_step_and_an_empty_batch_finishes_at_once(backend: Backend) -> None:
    from apps.toolbox import Report, Step

    eventbus.chain([Step("before"), eventbus.batch([Step("b1"), Step("b2")]).then(Report("inner-then")),
                    Step("after"), eventbus.batch([]).then(Report("empty-then")), Step("last")]) \
        .finally_(Report("chain-finally")).dispatch()
    backend.start_workers(2)
    wait_for(lambda: "chain-finally" in callbacks(backend), timeout=60)
    order = [f[0] for f in sorted(backend.lines("ran"), key=lambda f: float(f[-1]))]
    assert order[0] == "before" and set(order[1:3]) == {"b1", "b2"} and order[3:] == ["after", "last"]
    assert set(callbacks(backend)) == {"inner-then", "empty-then", "chain-finally"}


def test_chain_catch_and_finally(backend: Backend) -> None:
    from apps.toolbox import Report, Step

    eventbus.chain([Step("one"), Step("two", fail=True), Step("three")]) \
        .catch(Report("catch")).finally_(Report("finally")).dispatch()
    eventbus.chain([Step("x"), Step("y")]).catch(Report("ok-catch")).finally_(Report("ok-finally")).dispatch()
    backend.start_workers(2)
    wait_for(lambda: {"finally", "ok-finally"} <= set(callbacks(backend)), timeout=60)
    time.sleep(0.5)
    assert sorted(callbacks(backend)) == ["catch", "finally", "ok-finally"]
    assert "three" not in ran(backend)


def test_the_cli_lists_shows_and_prunes_batches(backend: Backend) -> None:
    from click.testing import CliRunner

    from apps.toolbox import Step
    from eventbus.cli import main

    batch = eventbus.batch([Step("a")]).name("nightly").dispatch()
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
