"""``Observers``: several worker observers as one, where a broken one never stops the others;
and what the monitor, the observer every worker has, records of each finished job."""

from __future__ import annotations

import logging
import time
from types import SimpleNamespace
from typing import Any

import pytest

from eventbus.monitoring.monitor import FOLD_AT, WorkerMonitor
from eventbus.monitoring.observer import Observers, WorkerObserver
from eventbus.monitoring.registry import FinishedJob, WorkerInfo
from eventbus.payload import Payload
from eventbus.queue.base import QueueJob
from eventbus.state.base import MemoryStateStore
from eventbus.worker.processing import Outcome

#: Stand-ins: an observer hands these on without looking at them.
WORKER: Any = "worker"
JOB: Any = "job-1"


class Recording(WorkerObserver):
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def job_started(self, worker: Any, job: Any) -> None:
        self.calls.append(("started", job))

    def job_finished(self, worker: Any, job: Any, outcome: Outcome, runtime_s: float,
                     exc: BaseException | None) -> None:
        self.calls.append(("finished", (job, outcome, runtime_s, exc)))


class Broken(WorkerObserver):
    def job_started(self, worker: Any, job: Any) -> None:
        raise RuntimeError("started broke")

    def job_finished(self, *args: Any) -> None:
        raise RuntimeError("finished broke")


class OnlyStarts(WorkerObserver):
    """Overrides one per-job hook; the other stays the base no-op."""

    def __init__(self) -> None:
        self.started = 0

    def job_started(self, worker: Any, job: Any) -> None:
        self.started += 1


def test_a_raising_observer_is_logged_and_the_next_one_still_hears_of_the_job(
        caplog: pytest.LogCaptureFixture) -> None:
    recording = Recording()
    observers = Observers([Broken(), recording])
    error = ValueError("the job's own")
    with caplog.at_level(logging.ERROR, logger="eventbus.monitoring.observer"):
        observers.job_started(WORKER, JOB)
        observers.job_finished(WORKER, JOB, Outcome.FAIL, 0.5, error)
    assert recording.calls == [("started", "job-1"), ("finished", ("job-1", Outcome.FAIL, 0.5, error))]
    assert [r.getMessage() for r in caplog.records] == [
        "worker observer Broken failed in job_started", "worker observer Broken failed in job_finished"]


def test_observers_that_keep_a_hook_as_it_is_are_not_called_for_it() -> None:
    only_starts, recording = OnlyStarts(), Recording()
    observers = Observers([WorkerObserver(), only_starts, recording])
    observers.job_started(WORKER, JOB)
    observers.job_finished(WORKER, JOB, Outcome.DONE, 0.1, None)
    assert only_starts.started == 1
    assert recording.calls == [("started", "job-1"), ("finished", ("job-1", Outcome.DONE, 0.1, None))]
    assert observers._job_finished == [(recording, recording.job_finished)]  # the others cost nothing per job


def _finished(monitor: WorkerMonitor, job: QueueJob, outcome: Outcome) -> FinishedJob:
    worker = SimpleNamespace(options=SimpleNamespace(name="w-1"), paused=False, queues=("mail",),
                             paused_queues=frozenset())
    monitor.job_started(worker, job)  # type: ignore[arg-type]
    monitor.job_finished(worker, job, outcome, 0.25, None)  # type: ignore[arg-type]
    _, recent, _ = monitor.snapshot(worker)  # type: ignore[arg-type]
    assert recent is not None
    return recent[0]


def _monitor() -> WorkerMonitor:
    monitor = WorkerMonitor(MemoryStateStore(), "conn")
    monitor.info = WorkerInfo(name="w-1", host="h", pid=1, connection="conn", queues=("mail",),
                              started_at=time.time())
    return monitor


def test_the_monitor_describes_a_finished_job_from_its_payload() -> None:
    payload = Payload(display_name="app.SendMail", command_name="app.SendMail", command={},
                      uuid="u-1", pushed_at=time.time() - 2.0)
    job = QueueJob(queue=None, queue_name="mail", job_id="7", raw=payload.to_json(), attempts=1)  # type: ignore[arg-type]
    entry = _finished(_monitor(), job, Outcome.DONE)
    assert (entry.uuid, entry.name, entry.queue, entry.status, entry.attempt) == ("u-1", "app.SendMail", "mail", "done", 1)
    assert entry.runtime_s == 0.25 and entry.wait_s is not None and 1.5 < entry.wait_s < 10
    assert (entry.worker, entry.connection) == ("w-1", "conn")


def test_the_monitor_names_an_unreadable_payload_and_its_stored_id() -> None:
    job = QueueJob(queue=None, queue_name="mail", job_id="7", raw="{not json", attempts=2,  # type: ignore[arg-type]
                   stored_uuid="stored-9")
    entry = _finished(_monitor(), job, Outcome.FAIL)
    assert (entry.uuid, entry.name, entry.status, entry.attempt, entry.wait_s) == (
        "stored-9", "(unreadable payload)", "failed", 2, None)


def _job(n: int, queue: str = "mail") -> QueueJob:
    payload = Payload(display_name="app.SendMail", command_name="app.SendMail", command={},
                      uuid=f"u-{n}", pushed_at=time.time() - 1.0)
    return QueueJob(queue=None, queue_name=queue, job_id=str(n), raw=payload.to_json(), attempts=1)  # type: ignore[arg-type]


def test_the_monitor_counts_noted_attempts_when_it_folds_them() -> None:
    monitor = _monitor()
    worker = SimpleNamespace(options=SimpleNamespace(name="w-1"), paused=False, queues=("mail",),
                             paused_queues=frozenset())
    outcomes = [Outcome.DONE, Outcome.FAIL, Outcome.RELEASED] * 30
    for n, outcome in enumerate(outcomes):
        monitor.job_started(worker, _job(n))  # type: ignore[arg-type]
        monitor.job_finished(worker, _job(n), outcome, 0.01, None)  # type: ignore[arg-type]
    assert monitor.recorder.pending() == 0  # noted only: the job's thread did no counting
    info, recent, _ = monitor.snapshot(worker)  # type: ignore[arg-type]
    assert info is not None and recent is not None
    assert (info.processed, info.failed) == (60, 30)  # released attempts are not processed
    assert [entry.uuid for entry in recent] == [f"u-{n}" for n in range(89, 39, -1)]  # newest first, 50
    tally = next(iter(monitor.recorder._pending.values()))
    assert (tally.done, tally.failed, tally.released, tally.waited) == (30, 30, 30, 90)


def test_a_worker_whose_monitor_thread_is_late_counts_its_own_backlog() -> None:
    monitor = _monitor()
    worker = SimpleNamespace(options=SimpleNamespace(name="w-1"))
    job = _job(1)
    for _ in range(FOLD_AT):
        monitor.job_finished(worker, job, Outcome.DONE, 0.01, None)  # type: ignore[arg-type]
    assert len(monitor._finished) == 0 and monitor.recorder.pending() == 1


def test_made_up_job_names_cannot_grow_the_metrics_without_bound(caplog: pytest.LogCaptureFixture) -> None:
    """A payload names itself: past ``MAX_JOB_NAMES`` names, the new ones count as one."""
    from eventbus.monitoring.monitor import MAX_JOB_NAMES, OTHER_JOBS

    monitor = _monitor()
    with caplog.at_level(logging.WARNING, logger="eventbus.monitoring.monitor"):
        for n in range(MAX_JOB_NAMES + 100):
            job = _job(n)
            job.raw = job.raw.replace("app.SendMail", f"Made.Up{n}", 1)
            _finished(monitor, job, Outcome.DONE)
    monitor.fold()
    names = {job for _, _, job in monitor.recorder._pending}
    assert len(names) == MAX_JOB_NAMES + 1 and OTHER_JOBS in names and "Made.Up0" in names
    assert [r.getMessage() for r in caplog.records if "job names" in r.getMessage()] == [
        f"metrics: more than {MAX_JOB_NAMES} job names seen; jobs with a name not seen before are "
        f"counted as {OTHER_JOBS}"]
