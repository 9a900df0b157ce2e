"""Running one entry once: take its lock, claim its instant, call its hooks, push or call.

The order is what makes a crash cheap. The lock comes first, then the instant's marker, then
the push: a scheduler killed after taking the lock fires the same instant again when it comes
back and finds the lock its own (:mod:`eventbus.scheduling.locks`); one killed after claiming
the marker skips that instant rather than pushing it twice, and the lock it left expires
after the entry's ``without_overlapping(expires_after=...)``.

A job entry's lock travels with the job (the worker releases it when the job ends); a call
entry's lock is released when the call returns. A push (or a lock, or a marker) that cannot
reach its server propagates, the instant given back, and the caller fires it again when the
server answers; any other error of a push, and anything a call raises, is this run's failure:
logged, the ``on_failure`` hooks called, the outcome ``failed``.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Any

from eventbus import aio, runtime
from eventbus.dispatching import Destination, command_name, make_payload, push_payload
from eventbus.dispatching.unique import lock_for
from eventbus.errors import ConnectionUnavailableError
from eventbus.payload import Payload
from eventbus.scheduling import locks
from eventbus.scheduling.schedule import ScheduledCall, ScheduledEvent, ScheduledJob

log = logging.getLogger(__name__)

MARKER_KEEP_S = 7 * 24 * 3600.0


@dataclasses.dataclass(frozen=True)
class Fired:
    """What a tick did with one instant of one entry.

    ``outcome`` is one of: ``pushed`` (a job entry), ``ran`` (a call entry), ``already-pushed``
    or ``already-ran`` (another scheduler fired this instant), ``skipped`` (its conditions said no),
    ``environment``, ``maintenance``, ``overlapping`` (the previous run holds the lock),
    ``duplicate`` (a unique job's lock is held), ``failed``.
    """

    entry: str
    instant: float
    outcome: str
    error: str | None = None


@dataclasses.dataclass(frozen=True)
class Run:
    """One run of one entry: its uuid, its instant, and the marker that claims the instant (None
    for ``schedule test``, which runs an entry outside its schedule)."""

    entry: ScheduledEvent
    instant: float
    uuid: str
    marker: str | None
    scope: str
    #: Lock holders this scheduler already reported at WARNING.
    reported: set[str] = dataclasses.field(default_factory=set)

    @property
    def connection(self) -> str:
        return self.entry.target_connection()


def fire(run: Run) -> Fired:
    """Run ``run.entry`` once (see the module docstring for the order and the failures)."""
    entry = run.entry
    if isinstance(entry, ScheduledJob):
        return _fire_job(run, entry)
    if isinstance(entry, ScheduledCall):
        return _fire_call(run, entry)
    raise TypeError(f"not a schedule entry: {entry!r}")


def _fire_job(run: Run, entry: ScheduledJob) -> Fired:
    destination = Destination.of(entry.job, queue=entry.queue, connection=entry.connection)
    payload = job_payload(run, entry, destination.connection)
    lock = payload.unique
    outcome = "duplicate" if _is_unique(entry) else "overlapping"
    took = _take(entry, lock, payload)
    if lock is not None and took == locks.HELD:
        return _held(run, lock, outcome)
    if not claim(run, destination.connection):
        _give_back(took, lock, payload.uuid)
        return _outcome(run, "already-pushed")

    def push() -> bool:
        push_payload(payload, destination, entry.job)
        return True

    def undo() -> None:
        withdraw(run, destination.connection)
        locks.release(lock, payload.uuid)

    return _run_with_hooks(run, push, "pushed", undo, lost_connection_propagates=True)


def _fire_call(run: Run, entry: ScheduledCall) -> Fired:
    lock = lock_of(entry, run.scope, run.connection)
    took = None if lock is None else locks.take_overlap(lock, run.uuid, _overlap_ttl(entry))
    if lock is not None and took == locks.HELD:
        return _held(run, lock, "overlapping")
    if not claim(run, run.connection):
        _give_back(took, lock, run.uuid)
        return _outcome(run, "already-ran")
    try:
        return _run_with_hooks(run, lambda: aio.resolve(entry.fn()) is not False, "ran", lambda: None)
    finally:
        locks.release(lock, run.uuid)


def _take(entry: ScheduledJob, lock: locks.Lock | None, payload: Payload) -> str | None:
    if lock is None:
        return None
    if _is_unique(entry):
        return locks.take_unique(entry.job, payload)
    return locks.take_overlap(lock, payload.uuid, _overlap_ttl(entry))


def _give_back(took: str | None, lock: locks.Lock | None, owner: str) -> None:
    """The instant was claimed before: a lock this run found free means that instant's run
    already ended (another scheduler was quicker), so it is left free again. A lock that was
    already this run's belongs to whoever claimed the instant, and stays."""
    if took == locks.TAKEN:
        locks.release(lock, owner)


def _run_with_hooks(run: Run, action: Any, done: str, undo: Any, *,
                    lost_connection_propagates: bool = False) -> Fired:
    """``before`` hooks, the action, then ``after`` and ``on_success`` / ``on_failure``.

    A push that finds its server unreachable propagates (``undo`` gave the instant back, and
    the caller fires it again later); anything a call raises is that call's failure.
    """
    entry = run.entry
    try:
        _call_hooks(run, "before", swallow=False)
        ok = action()
    except Exception as exc:
        undo()
        if lost_connection_propagates and isinstance(exc, ConnectionUnavailableError):
            raise
        log.exception("schedule %s at %s: failed", entry.description, _when(run.instant))
        _call_hooks(run, "after")
        _call_hooks(run, "failure")
        return Fired(entry.description, run.instant, "failed", f"{type(exc).__name__}: {exc}")
    _call_hooks(run, "after")
    _call_hooks(run, "success" if ok else "failure")
    if not ok:
        return _outcome(run, "failed", "returned False")
    return _outcome(run, done)


def _call_hooks(run: Run, moment: str, *, swallow: bool = True) -> None:
    for hook in run.entry.hooks[moment]:
        try:
            aio.resolve(hook())
        except Exception:
            if not swallow:
                raise
            log.exception("schedule %s: a %s hook raised", run.entry.description, moment)


def job_payload(run: Run, entry: ScheduledJob, connection: str) -> Payload:
    """The job's payload, its uuid the run's, with the lock it must hold: the job's own unique
    lock when the job is unique (which also keeps it from overlapping), else the entry's
    overlap lock when it has one."""
    name = command_name(entry.job)
    payload = make_payload(entry.job, unique=lock_of(entry, run.scope, connection), name=name)
    return payload.replace(uuid=run.uuid, key=runtime.settings().key)


def lock_of(entry: ScheduledEvent, scope: str, connection: str) -> locks.Lock | None:
    """The lock a run of ``entry`` takes, if any: a unique job's own, else the overlap lock of a
    ``without_overlapping`` entry."""
    if isinstance(entry, ScheduledJob):
        found = lock_for(entry.job, command_name(entry.job), connection)
        if found is not None:
            return found
    if entry.overlap_expires_s is not None:
        return locks.overlap_lock(scope, connection)
    return None


def claim(run: Run, connection: str) -> bool:
    """Claim the run's instant; False when another scheduler (or an earlier life of this one)
    claimed it first. A run without a marker (``schedule test``) always may."""
    if run.marker is None:
        return True
    return runtime.state(connection).add(f"schedule-marker:{run.marker}", run.uuid, ttl_s=MARKER_KEEP_S)


def withdraw(run: Run, connection: str) -> None:
    """Give the instant back after a push that failed, so it can be fired again."""
    if run.marker is not None:
        runtime.state(connection).delete_if(f"schedule-marker:{run.marker}", run.uuid)


def _is_unique(entry: ScheduledJob) -> bool:
    return bool(getattr(entry.job, "unique", False))


def _overlap_ttl(entry: ScheduledEvent) -> float:
    assert entry.overlap_expires_s is not None
    return entry.overlap_expires_s


def _held(run: Run, lock: locks.Lock, outcome: str) -> Fired:
    """Skip the instant: its lock is held. A holder is reported at WARNING the first time this
    scheduler meets it (a stuck lock is told once), at INFO after that."""
    found = locks.held(lock)
    level = logging.INFO
    if found is not None and found.holder not in run.reported:
        if len(run.reported) > 10_000:
            run.reported.clear()
        run.reported.add(found.holder)
        level = logging.WARNING
    why = ("the previous run still holds its lock" if outcome == "overlapping"
           else "the job's unique lock is held")
    log.log(level, "schedule %s at %s: skipped, %s (%s)", run.entry.description, _when(run.instant),
            why, found.describe() if found else "held")
    return Fired(run.entry.description, run.instant, outcome)


def _outcome(run: Run, outcome: str, error: str | None = None) -> Fired:
    log.info("schedule %s at %s: %s", run.entry.description, _when(run.instant), outcome)
    return Fired(run.entry.description, run.instant, outcome, error)


def _when(instant: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(instant))
