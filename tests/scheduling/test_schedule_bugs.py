"""Issue 26's scheduler bugs and issue 25's hostile cursor, each with real `schedule run`
processes, a real worker and the real stores (Redis, SQLite).

- a scheduled unique job takes the job's unique lock like a dispatch (bug 2);
- the first `schedule run` on a fresh state store pushes what is due that minute (bug 5);
- identical entries are separate entries, as in Laravel (bug 8);
- an expression that never fires is refused when defined; a cursor that is not a time is
  treated as absent, never a crash (issue 25, point 15).
"""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

import eventbus
from eventbus import runtime
from eventbus.scheduling import Schedule
from test_toolbox import Backend
from test_toolbox import backend as backend  # noqa: F401 - the parametrized fixture

pytestmark = pytest.mark.integration
ON_TWO = pytest.mark.parametrize("backend", ["redis", "sqlite"], indirect=True)


def schedule_run(backend: Backend, case: str, now: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "eventbus", "schedule", "run", "--app", "apps.schedule_cases",
                           "--now", now, *args], env={**backend.env, "SCHEDULE_CASE": case},
                          capture_output=True, text=True, timeout=60)


def drain(backend: Backend) -> None:
    backend.start_workers(1, "--stop-when-empty")
    assert backend.workers[-1].wait(timeout=60) == 0


@ON_TWO
def test_a_scheduled_unique_job_takes_its_lock_like_a_dispatch(backend: Backend) -> None:
    from apps.toolbox import Reindex

    first = schedule_run(backend, "unique", "2026-11-23T10:00:05")
    second = schedule_run(backend, "unique", "2026-11-23T10:01:05")
    assert first.returncode == second.returncode == 0, first.stderr + second.stderr
    assert eventbus.connection().size() == 1  # the 10:01 copy was not pushed: 10:00's is pending
    assert "reindex: duplicate" in second.stdout
    assert Reindex(7).dispatch() is None  # the scheduled one holds the job's own lock
    drain(backend)
    assert len(backend.lines("reindex-end")) == 1
    assert Reindex(7).dispatch() is not None  # its run released the lock


@ON_TWO
def test_the_first_run_on_a_fresh_store_pushes_what_is_due_that_minute(backend: Backend) -> None:
    ran = schedule_run(backend, "fresh", "2026-11-23T10:00:20")
    assert ran.returncode == 0, ran.stderr
    drain(backend)
    assert sorted(t[0] for t in backend.lines("tick")) == ["at-ten", "every-minute"]


@ON_TWO
def test_identical_entries_each_push_their_own_job(backend: Backend) -> None:
    schedule_run(backend, "identical", "2026-11-23T10:00:05")
    before = eventbus.connection().size()
    ran = schedule_run(backend, "identical", "2026-11-23T10:01:05")
    assert ran.returncode == 0, ran.stderr
    assert eventbus.connection().size() - before == 4  # Laravel runs each of the four
    drain(backend)
    ticks = backend.lines("tick")
    assert len({t[1] for t in ticks}) == len(ticks) == before + 4  # each job once, none twice


def test_an_expression_that_never_fires_is_refused_when_defined() -> None:
    from apps.schedule_cases import Tick

    with pytest.raises(eventbus.ConfigurationError, match="never fires"):
        Schedule().job(Tick("x")).cron("0 0 30 2 *")
    Schedule().job(Tick("x")).cron("0 0 29 2 *")  # once in four years is fine


@pytest.mark.parametrize("garbage", ["nan", "1e999", "x", "-inf", "1e15"])
@pytest.mark.parametrize("backend", ["redis"], indirect=True)
def test_a_cursor_that_is_not_a_time_is_treated_as_absent(backend: Backend, garbage: str) -> None:
    runtime.state().put(f"schedule:{socket.gethostname()}:reindex:cursor", garbage)
    ran = schedule_run(backend, "unique", "2026-11-23T10:00:05")
    assert ran.returncode == 0, ran.stderr
    assert "Traceback" not in ran.stderr
    assert "not a time" in ran.stderr  # logged
    assert eventbus.connection().size() == 1  # and the entry fired as on a fresh store


def test_an_expression_that_never_fires_does_not_crash_the_loop_or_the_listing() -> None:
    """Should one slip past cron() (set directly), nothing fires and nothing raises."""
    from apps.schedule_cases import Tick
    from eventbus.scheduling import Scheduler

    schedule = Schedule()
    entry = schedule.job(Tick("x"))
    entry.expression = "0 0 30 2 *"
    scheduler = Scheduler(schedule, clock=lambda: 1795428000.0)
    assert entry.next_instants(1795428000.0) == []
    assert 0 < scheduler.seconds_to_next() <= 60
    assert scheduler.due_instants(entry, 1795428000.0 - 3600, 1795428000.0) == []
