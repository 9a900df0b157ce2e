"""The rules of a batch's transitions, as one function over its state (Laravel's
``Batch::recordSuccessfulJob`` / ``recordFailedJob``, made idempotent).

A store runs :func:`record` inside whatever makes it atomic (a lock in memory, one transaction in
SQL); the Redis store runs the same rules as one Lua script (``lua/record.lua``), and one contract
suite holds every store to them:

- each job's first final outcome counts, once: a job that runs twice (its worker died before
  the acknowledgement) changes nothing the second time. A success is final; a failure may
  still turn into a success (the job was retried, ``eventbus retry-batch``): ``pending`` and
  ``failed`` go down by one, and the job leaves ``failed_job_ids``;
- ``pending`` counts the jobs that have not succeeded, ``outstanding`` those without any final
  outcome; a failed step of a chain settles the steps after it too (``unrun``: they will never
  run), so the batch still finishes;
- a success makes ``progress`` due for that job; a failure makes ``failure`` (the
  ``allow_failures`` callbacks) and ``progress`` due when the batch allows failures, and the
  first failure makes ``catch`` due and, unless the batch allows failures, cancels it;
- the last outcome stamps ``finished_at`` and makes ``finally`` (and a chain's continuation)
  due; ``then`` is due once every job has succeeded and the batch was not cancelled.

Each callback kind is made due at most once per batch (per job for the per-job kinds), by
whichever outcome gets there first; the caller that made it due pushes it, then marks it done.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping, Sequence

from eventbus.batching.records import Due


@dataclasses.dataclass
class Tally:
    """The counters and stamps of one batch, changed in place by :func:`record`."""

    total: int
    pending: int
    failed: int
    outstanding: int
    cancelled_at: float | None = None
    finished_at: float | None = None


@dataclasses.dataclass
class Effects:
    """What one recorded outcome changes besides the tally."""

    outcomes: dict[str, str] = dataclasses.field(default_factory=dict)  # uuid -> "ok" / "fail"
    failed_added: list[str] = dataclasses.field(default_factory=list)
    failed_removed: list[str] = dataclasses.field(default_factory=list)
    due: list[Due] = dataclasses.field(default_factory=list)  # new outbox entries, in order


def record(tally: Tally, flags: Collection[str], allow_failures: bool, known: Mapping[str, str],
           job_uuid: str, succeeded: bool, *, unrun: Sequence[str] = (), failure: str = "",
           now: float, existing: Collection[str] = ()) -> Effects:
    """Apply one job's outcome; ``known`` holds the earlier outcomes of ``job_uuid`` and
    ``unrun``, ``existing`` the keys already in the batch's outbox (done ones included)."""
    effects = Effects()

    def make_due(key: str, why: str = "") -> None:
        if key not in existing and all(d.key != key for d in effects.due):
            effects.due.append(Due(key, why))

    newly_failed = False
    if succeeded:
        before = known.get(job_uuid)
        if before != "ok":
            effects.outcomes[job_uuid] = "ok"
            tally.pending -= 1
            if before == "fail":
                tally.failed -= 1
                effects.failed_removed.append(job_uuid)
            else:
                tally.outstanding -= 1
            if "progress" in flags:
                make_due(f"progress:{job_uuid}:ok")
    else:
        for uuid in (job_uuid, *unrun):
            if known.get(uuid) is not None or uuid in effects.outcomes:
                continue
            effects.outcomes[uuid] = "fail"
            effects.failed_added.append(uuid)
            tally.failed += 1
            tally.outstanding -= 1
            newly_failed = True
            if uuid == job_uuid and allow_failures:
                if "failure" in flags:
                    make_due(f"failure:{job_uuid}", failure)
                if "progress" in flags:
                    make_due(f"progress:{job_uuid}:fail", failure)
    if newly_failed:
        if not allow_failures and tally.cancelled_at is None:
            tally.cancelled_at = now
        if "catch" in flags:
            make_due("catch", failure)
    if tally.outstanding <= 0 and tally.finished_at is None:
        tally.finished_at = now
        if "finally" in flags:
            make_due("finally", failure if newly_failed else "")
        if "chain" in flags:
            make_due("chain")
    if tally.pending <= 0 and tally.cancelled_at is None and "then" in flags:
        make_due("then")
    return effects


def settle_empty(tally: Tally, flags: Collection[str], now: float) -> list[Due]:
    """A batch created without jobs is finished at once: ``then``, ``finally`` and the chain's
    continuation are due."""
    tally.finished_at = now
    return [Due(kind) for kind in ("then", "finally", "chain") if kind in flags]
