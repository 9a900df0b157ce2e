"""Rate limits, overlap locks, exception throttling and unique jobs, with two real workers
contending, on Redis, SQLite and PostgreSQL (their locks and counters in the state store)."""

from __future__ import annotations

import collections
import pathlib
import subprocess
import sys
import time

import pytest

import eventbus
from eventbus.state.keys import user_key
from helpers import REDIS_URL, wait_for
from toolbox_backend import Backend, backend  # noqa: F401  (the fixture)

pytestmark = pytest.mark.integration


def test_a_rate_limit_holds_across_two_workers_and_costs_no_tries(backend: Backend) -> None:
    from apps.toolbox import Limited

    eventbus.dispatch_many([Limited(n) for n in range(8)])
    backend.start_workers(2)
    wait_for(lambda: len(backend.lines("limited")) == 8, timeout=60)
    starts = sorted(float(fields[-1]) for fields in backend.lines("limited"))
    per_second = collections.Counter(int(t) for t in starts)
    assert max(per_second.values()) <= 2, per_second  # never more than the limit in one window
    assert eventbus.failed_store().all() == []  # tries = 1, yet limit releases failed nothing
    assert {int(f[1]) for f in backend.lines("limited")} == {1}  # every run was attempt 1


def test_without_overlapping_never_runs_two_at_once_across_workers(backend: Backend) -> None:
    from apps.toolbox import Exclusive

    eventbus.dispatch_many([Exclusive(n, "account-7") for n in range(4)])
    backend.start_workers(2)
    wait_for(lambda: len(backend.lines("end")) == 4, timeout=60)
    events = sorted([(float(f[-1]), "start") for f in backend.lines("start")] +
                    [(float(f[-1]), "end") for f in backend.lines("end")])
    running = peak = 0
    for _, kind in events:
        running += 1 if kind == "start" else -1
        peak = max(peak, running)
    assert peak == 1
    assert eventbus.failed_store().all() == []


def test_throttled_exceptions_open_the_circuit(backend: Backend) -> None:
    from apps.toolbox import Unstable

    broken = pathlib.Path(str(backend.log) + ".broken")
    broken.touch()
    eventbus.dispatch_many([Unstable(n) for n in range(6)])
    backend.start_workers(2)
    wait_for(lambda: len(backend.lines("unstable")) >= 3, timeout=30)
    time.sleep(1.0)
    assert len(backend.lines("unstable")) <= 4  # the circuit opened after 3 exceptions
    broken.unlink()
    wait_for(lambda: eventbus.connection().size() == 0, timeout=60)
    assert eventbus.failed_store().all() == []


def test_a_unique_job_is_queued_once_while_it_waits_or_runs(backend: Backend) -> None:
    from apps.toolbox import Reindex

    dropped: list[eventbus.JobNotQueuedAsDuplicate] = []
    eventbus.listen(eventbus.JobNotQueuedAsDuplicate, dropped.append)
    first = Reindex(7, seconds=1.0).dispatch()
    assert first is not None
    assert Reindex(7).dispatch() is None  # waiting: dropped
    assert Reindex(8).dispatch() is not None  # another shop: its own lock
    assert dropped[0].unique_key == user_key("unique", f"{Reindex.__module__}.Reindex", "7")
    assert dropped[0].held_by == first
    backend.start_workers(2)
    wait_for(lambda: any(f[0] == "7" for f in backend.lines("reindex-start")), timeout=30)
    assert Reindex(7).dispatch() is None  # running: still dropped
    wait_for(lambda: any(f[0] == "7" for f in backend.lines("reindex-end")), timeout=30)
    wait_for(lambda: Reindex(7).dispatch() is not None, timeout=10)  # done: the lock is gone


def test_two_processes_dispatching_the_same_unique_job_queue_it_once(backend: Backend) -> None:
    script = ("import sys, eventbus, apps.toolbox as t; "
              "print(t.Reindex(9).dispatch() is not None)")
    runs = [subprocess.Popen([sys.executable, "-c", script], env=backend.env, stdout=subprocess.PIPE,
                             text=True) for _ in range(4)]
    outcomes = [r.communicate(timeout=60)[0].strip() for r in runs]
    assert sorted(outcomes) == ["False", "False", "False", "True"]
    assert eventbus.connection().size() == 1


def test_unique_until_processing_frees_the_lock_when_the_job_starts(backend: Backend) -> None:
    from apps.toolbox import ReindexUntilProcessing

    assert ReindexUntilProcessing(3, seconds=1.0).dispatch() is not None
    assert ReindexUntilProcessing(3).dispatch() is None
    backend.start_workers(1)
    wait_for(lambda: backend.lines("reindex-start") != [], timeout=30)
    assert ReindexUntilProcessing(3).dispatch() is not None  # running: another may wait behind it


def test_a_notification_channel_keeps_to_its_rate_limit(redis_client: object, tmp_path: pathlib.Path) -> None:
    from typing import Any

    from eventbus import Worker, WorkerOptions
    from notifications import Notifiable, Notification, channels

    @eventbus.serializable
    class Customer(Notifiable):
        def __init__(self, id: int) -> None:
            self.id = id

    sent: list[float] = []

    class Recorder:
        def send(self, notifiable: Any, notification: Any) -> None:
            sent.append(time.time())

    class Promo(Notification):
        queued = True
        rate_limits = {"recorder": "promos"}

        def via(self, notifiable: Any) -> list[str]:
            return ["recorder"]

    eventbus.configure(default="redis", connections={"redis": {"driver": "redis", "url": REDIS_URL}})
    eventbus.rate_limit("promos", per_second=3)
    channels.register_channel("recorder", Recorder())
    from notifications import notify

    notify([Customer(n) for n in range(7)], Promo())
    deadline = time.monotonic() + 20
    while len(sent) < 7 and time.monotonic() < deadline:
        Worker.for_connection(options=WorkerOptions(stop_when_empty=True, sleep_s=0, memory_mb=0)).run()
        time.sleep(0.1)
    assert len(sent) == 7
    per_second = collections.Counter(int(t) for t in sent)
    assert max(per_second.values()) <= 3, per_second
