"""The scheduler's Laravel features, each through real `eventbus schedule ...` processes (with
`--now` to pick the moment) and, where jobs are pushed, a real worker that runs them:
frequencies on their days, time windows, sub-minute frequencies, plain function calls, hooks,
environments, maintenance mode, `schedule test`, `schedule interrupt` and `schedule list --next`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest

import eventbus
from helpers import wait_for
from test_toolbox import Backend
from test_toolbox import backend as backend  # noqa: F401 - the parametrized fixture

pytestmark = pytest.mark.integration
ON_REDIS = pytest.mark.parametrize("backend", ["redis"], indirect=True)
ON_TWO = pytest.mark.parametrize("backend", ["redis", "sqlite"], indirect=True)
APP = "apps.schedule_cases"


def eventbus_cli(backend: Backend, case: str, *args: str, env: dict[str, str] | None = None,
                 timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "eventbus", *args, "--app", APP],
                          env={**backend.env, "SCHEDULE_CASE": case, **(env or {})},
                          capture_output=True, text=True, timeout=timeout)


def schedule_run(backend: Backend, case: str, now: str, *args: str,
                 env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return eventbus_cli(backend, case, "schedule", "run", "--now", now, *args, env=env)


def outcomes(ran: subprocess.CompletedProcess[str]) -> dict[str, str]:
    """``name: outcome`` lines of `schedule run` (the last outcome of each name)."""
    return dict(line.split(": ", 1) for line in ran.stdout.splitlines() if ": " in line)


def pushed(ran: subprocess.CompletedProcess[str]) -> set[str]:
    assert "Traceback" not in ran.stderr, ran.stderr
    return {name for name, outcome in outcomes(ran).items() if outcome == "pushed"}


def scheduler(backend: Backend, case: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "eventbus", "schedule", "work", "--app", APP, *args],
                            env={**backend.env, "SCHEDULE_CASE": case}, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def drain(backend: Backend) -> Counter[str]:
    backend.start_workers(1, "--stop-when-empty")
    assert backend.workers[-1].wait(timeout=60) == 0
    return Counter(t[0] for t in backend.lines("tick"))


@ON_REDIS
def test_frequency_helpers_fire_on_their_days(backend: Backend) -> None:
    expected = {
        "2026-11-27T10:00:05": {"weekdays", "twice-daily", "weekly-on", "monthly-on", "every-two-hours",
                                "every-fifteen-minutes"},                        # a Friday, the 27th
        "2026-11-28T10:00:05": {"weekends", "days", "twice-daily", "twice-monthly", "every-two-hours",
                                "every-fifteen-minutes"},                        # a Saturday, the 28th
        "2026-11-29T00:00:05": {"weekly", "every-two-hours", "every-fifteen-minutes"},  # Sunday midnight
        "2026-11-29T22:00:05": {"twice-daily", "every-two-hours", "every-fifteen-minutes"},
        "2026-11-30T10:00:05": {"weekdays", "mondays", "twice-daily", "last-day", "every-two-hours",
                                "every-fifteen-minutes"},                        # the last of November
        "2027-01-01T00:00:05": {"quarterly", "yearly", "every-two-hours", "every-fifteen-minutes"},
    }
    for now, names in expected.items():
        assert pushed(schedule_run(backend, "calendar", now)) == names, now
    ran = drain(backend)
    assert ran == Counter(name for names in expected.values() for name in names)


@ON_REDIS
def test_between_and_unless_between_read_the_instant_in_its_timezone(backend: Backend) -> None:
    expected = {"08:59": {"outside"}, "09:00": {"inside"}, "17:00": {"inside"}, "17:01": {"outside"},
                "23:30": {"outside", "overnight"}, "05:59": {"outside", "overnight"}}
    day = 23
    for hh_mm, names in expected.items():
        ran = schedule_run(backend, "window", f"2026-11-{day}T{hh_mm}:05")
        assert pushed(ran) == names, hh_mm
        assert {n for n, o in outcomes(ran).items() if o == "skipped"} == {"inside", "outside", "overnight"} - names
        day += hh_mm == "23:30"  # 05:59 is the next morning
    assert sum(drain(backend).values()) == 8


@ON_REDIS
def test_every_ten_seconds_with_schedule_work(backend: Backend) -> None:
    proc = scheduler(backend, "subminute", "--now", "2026-11-23T10:00:08")
    try:
        wait_for(lambda: eventbus.connection().size() >= 3, timeout=40)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    fired = [line.split(" at ")[1].split(":", 1)[1][:5] for line in err.splitlines() if "schedule ten at" in line]
    assert fired[:3] == ["00:00", "00:10", "00:20"]  # :00 due when it started, then every ten seconds
    assert drain(backend)["ten"] == len(fired)


@ON_REDIS
def test_schedule_run_repeats_sub_minute_entries_until_the_minute_ends(backend: Backend) -> None:
    started = time.monotonic()
    ran = schedule_run(backend, "subminute", "2026-11-23T10:00:47")
    took = time.monotonic() - started
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines() == ["ten: pushed", "ten: pushed"]  # :40 (due), then :50
    assert 10 < took < 45  # it stayed for :50, and left when the minute ended
    assert drain(backend)["ten"] == 2


@ON_TWO
def test_call_runs_a_plain_function_with_its_hooks(backend: Backend) -> None:
    ran = schedule_run(backend, "call", "2026-11-23T10:00:05")
    assert ran.returncode == 1  # an entry failed; the others still ran
    assert outcomes(ran) == {"ping": "ran", "broken": "failed (RuntimeError: the call failed)"}
    assert [c[0] for c in backend.lines("call")] == ["ping", "broken"]
    hooks = [(h[0], h[1]) for h in backend.lines("hook")]
    assert hooks == [("ping", "before"), ("ping", "after"), ("ping", "success"),
                     ("broken", "before"), ("broken", "after"), ("broken", "failure")]
    assert "RuntimeError: the call failed" in ran.stderr  # logged, with its traceback


@ON_REDIS
def test_hooks_of_a_job_entry_and_a_refused_push(backend: Backend) -> None:
    ran = schedule_run(backend, "hooks", "2026-11-23T10:00:05")
    assert ran.returncode == 1
    assert outcomes(ran)["hooked"] == "pushed"
    assert outcomes(ran)["refused"].startswith("failed (ConfigurationError: ")
    hooks = [(h[0], h[1]) for h in backend.lines("hook")]
    assert hooks == [("hooked", "before"), ("hooked", "after"), ("hooked", "success"),
                     ("refused", "before"), ("refused", "after"), ("refused", "failure")]
    assert drain(backend) == Counter({"hooked": 1})


@ON_REDIS
def test_environments_limit_where_an_entry_fires(backend: Backend) -> None:
    assert pushed(schedule_run(backend, "env", "2026-11-23T10:00:05")) == {"anywhere"}  # production
    assert pushed(schedule_run(backend, "env", "2026-11-23T10:01:05", "--env", "qa")) == \
        {"anywhere", "staging-only"}
    ran = schedule_run(backend, "env", "2026-11-23T10:02:05", env={"EVENTBUS_ENV": "staging"})
    assert pushed(ran) == {"anywhere", "staging-only"}
    assert drain(backend) == Counter({"anywhere": 3, "staging-only": 2})


@ON_TWO
def test_maintenance_mode_holds_entries_unless_they_say_so(backend: Backend) -> None:
    assert eventbus_cli(backend, "maintenance", "migrate").returncode == 0  # as a deployed app has
    assert eventbus_cli(backend, "maintenance", "down").returncode == 0
    ran = schedule_run(backend, "maintenance", "2026-11-23T10:00:05")
    assert outcomes(ran) == {"normal": "maintenance", "always": "pushed", "apps.schedule_cases.ping": "maintenance"}
    assert backend.lines("call") == []
    assert eventbus_cli(backend, "maintenance", "up").returncode == 0
    ran = schedule_run(backend, "maintenance", "2026-11-23T10:01:05")
    assert outcomes(ran) == {"normal": "pushed", "always": "pushed", "apps.schedule_cases.ping": "ran"}
    assert drain(backend) == Counter({"normal": 1, "always": 2})


@ON_REDIS
def test_schedule_test_runs_one_entry_now(backend: Backend) -> None:
    ran = eventbus_cli(backend, "named", "schedule", "test", "nightly")  # due at 02:00 only
    assert ran.returncode == 0 and ran.stdout.strip() == "nightly: pushed", ran.stderr
    assert [h[1] for h in backend.lines("hook")] == ["before", "after", "success"]
    assert eventbus_cli(backend, "named", "schedule", "test", "ping").stdout.strip() == "ping: ran"
    assert [c[0] for c in backend.lines("call")] == ["ping"]
    assert eventbus_cli(backend, "named", "schedule", "test", "reindex").stdout.strip() == "reindex: pushed"
    again = eventbus_cli(backend, "named", "schedule", "test", "reindex")
    assert again.stdout.strip() == "reindex: duplicate"  # its lock applies: the first still waits
    for name, message in (("nope", "no scheduled entry named 'nope' (entries: nightly, ping, reindex, twin)"),
                          ("twin", "2 entries are named 'twin'")):
        wrong = eventbus_cli(backend, "named", "schedule", "test", name)
        assert wrong.returncode == 1 and len(wrong.stderr.strip().splitlines()) == 1, wrong.stderr
        assert message in wrong.stderr
    assert drain(backend) == Counter({"nightly": 1})
    assert len(backend.lines("reindex-end")) == 1


@ON_REDIS
def test_schedule_interrupt_stops_the_running_schedulers(backend: Backend) -> None:
    running = scheduler(backend, "subminute")
    assert running.stdout is not None
    assert "Scheduler running" in running.stdout.readline()
    ran = eventbus_cli(backend, "subminute", "schedule", "interrupt")
    assert ran.returncode == 0, ran.stderr
    out, err = running.communicate(timeout=15)  # it checks once a second
    assert running.returncode == 0, err
    assert "Interrupted by `eventbus schedule interrupt`" in out
    later = scheduler(backend, "subminute")  # started after the interrupt: not concerned
    assert later.stdout is not None
    assert "Scheduler running" in later.stdout.readline()
    time.sleep(2.5)  # it looked for an interrupt twice
    assert later.poll() is None
    os.killpg(later.pid, signal.SIGTERM)
    later.communicate(timeout=30)
    assert later.returncode == 0


@ON_REDIS
def test_schedule_list_next_sorts_by_the_next_run_and_shows_a_held_lock(backend: Backend) -> None:
    listed = eventbus_cli(backend, "listing", "schedule", "list", "--next")
    assert listed.returncode == 0, listed.stderr
    rows = listed.stdout.splitlines()
    assert rows[0].split()[:3] == ["NAME", "KIND", "CRON"]
    assert [r.split()[0] for r in rows[1:]] == ["soon", "hourly", "yearly"]
    assert all(r.split()[-1] == "-" for r in rows[1:])  # no lock held
    assert eventbus_cli(backend, "listing", "schedule", "list").stdout.splitlines()[1].startswith("yearly")
    assert schedule_run(backend, "listing", time.strftime("%Y-%m-%dT%H:%M:%S")).returncode == 0
    held = {json.loads(line)["name"]: json.loads(line) for line in
            eventbus_cli(backend, "listing", "schedule", "list", "--json").stdout.splitlines()}
    assert held["soon"]["lock"]["holder"] and 0 < held["soon"]["lock"]["expires_at"] - time.time() <= 300
    assert held["hourly"]["lock"] is None and held["hourly"]["environments"] == ["production"]
    assert "held by" in eventbus_cli(backend, "listing", "schedule", "list").stdout
    drain(backend)
    assert "held by" not in eventbus_cli(backend, "listing", "schedule", "list").stdout  # released by the job
