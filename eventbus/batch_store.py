"""Where batches keep their counts: the state store of the batch's connection.

Each batch is a few keys under ``batch:<id>``: its description (name, options, callbacks, when
it was created), counters (total, pending = not yet succeeded, failed, outstanding = not yet
finished either way) and one flag per job outcome. Every transition that fires a callback is
decided by an atomic counter or an ``add`` (set-if-absent) claim, so each callback fires exactly
once however many workers finish jobs at the same moment, and a job that runs twice (its worker
died before the acknowledgement) is counted once. Keys expire ``KEEP_S`` after their last change
(``eventbus prune-batches`` removes finished batches sooner).

Unlike Laravel, a failed step of a chain inside a batch also settles the steps after it (they
will never run), so ``finally`` still fires.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Sequence
from typing import Any

from eventbus import runtime
from eventbus.state import StateStore

KEEP_S = 7 * 24 * 3600.0


@dataclasses.dataclass(frozen=True)
class Counts:
    total: int
    pending: int
    failed: int
    outstanding: int


@dataclasses.dataclass(frozen=True)
class Transitions:
    """What one recorded outcome made happen (each is seen by exactly one caller)."""

    first_failure: bool = False
    all_succeeded: bool = False
    all_finished: bool = False


CALLBACK_MARK = "#callback"


def split_id(batch_ref: str) -> tuple[str, str | None]:
    """``"<id>@<connection>"`` (optionally with ``#callback``) -> (id, connection)."""
    batch_id, _, connection = batch_ref.removesuffix(CALLBACK_MARK).partition("@")
    return batch_id, connection or None


def is_member(batch_ref: str) -> bool:
    """A job of the batch, counted in it; a callback job only sees its batch."""
    return not batch_ref.endswith(CALLBACK_MARK)


class BatchStore:
    """The keys of one connection's batches."""

    def __init__(self, state: StateStore) -> None:
        self.state = state

    @classmethod
    def of(cls, connection: str | None) -> BatchStore:
        return cls(runtime.state(connection))

    @staticmethod
    def key(batch_id: str, *parts: str) -> str:
        return ":".join(("batch", batch_id, *parts))

    # -- creating -----------------------------------------------------------------------------
    def create(self, batch_id: str, description: dict[str, Any]) -> None:
        self.state.put(self.key(batch_id), json.dumps(description), ttl_s=KEEP_S)

    def add_jobs(self, batch_id: str, count: int) -> None:
        """Count ``count`` more jobs before they are pushed (so none can finish the batch early)."""
        for name in ("total", "pending", "outstanding"):
            self.state.incr(self.key(batch_id, name), count, ttl_s=KEEP_S)

    # -- reading ------------------------------------------------------------------------------
    def description(self, batch_id: str) -> dict[str, Any] | None:
        text = self.state.get(self.key(batch_id))
        return json.loads(text) if text else None

    def counts(self, batch_id: str) -> Counts:
        def number(name: str) -> int:
            return int(float(self.state.get(self.key(batch_id, name)) or 0))

        return Counts(number("total"), number("pending"), number("failed"), number("outstanding"))

    def stamp(self, batch_id: str, name: str) -> float | None:
        value = self.state.get(self.key(batch_id, name))
        return float(value) if value else None

    def ids(self) -> list[str]:
        """Every batch this store knows, newest first."""
        found = []
        for key, value in self.state.scan("batch:").items():
            if key.count(":") == 1:
                created = json.loads(value).get("created_at", 0.0)
                found.append((created, key.split(":", 1)[1]))
        return [batch_id for _, batch_id in sorted(found, reverse=True)]

    # -- recording outcomes -------------------------------------------------------------------
    def record_success(self, batch_id: str, job_uuid: str) -> Transitions:
        if not self.state.add(self.key(batch_id, "ok", job_uuid), "1", ttl_s=KEEP_S):
            return Transitions()  # this job's success was recorded already (it ran twice)
        pending = self.state.incr(self.key(batch_id, "pending"), -1)
        finished = self._settle(batch_id, job_uuid)
        return Transitions(all_succeeded=pending <= 0 and self._claim(batch_id, "then"),
                           all_finished=finished)

    def record_failure(self, batch_id: str, job_uuid: str, unrun: Sequence[str] = ()) -> Transitions:
        first = False
        for uuid in (job_uuid, *unrun):
            if self.state.add(self.key(batch_id, "fail", uuid), "1", ttl_s=KEEP_S):
                failed = self.state.incr(self.key(batch_id, "failed"), 1, ttl_s=KEEP_S)
                first = first or (failed == 1 and self._claim(batch_id, "catch"))
        finished = False
        for uuid in (job_uuid, *unrun):
            finished = self._settle(batch_id, uuid) or finished
        return Transitions(first_failure=first, all_finished=finished)

    def _settle(self, batch_id: str, job_uuid: str) -> bool:
        """This job reached its first outcome; True when it was the batch's last (claimed once)."""
        if not self.state.add(self.key(batch_id, "done", job_uuid), "1", ttl_s=KEEP_S):
            return False
        left = self.state.incr(self.key(batch_id, "outstanding"), -1)
        if left > 0:
            return False
        self.state.add(self.key(batch_id, "finished_at"), repr(time.time()), ttl_s=KEEP_S)
        return self._claim(batch_id, "finally")

    def _claim(self, batch_id: str, callback: str) -> bool:
        return self.state.add(self.key(batch_id, "fired", callback), "1", ttl_s=KEEP_S)

    def cancel(self, batch_id: str) -> bool:
        """Mark the batch cancelled; False when it already was."""
        return self.state.add(self.key(batch_id, "cancelled_at"), repr(time.time()), ttl_s=KEEP_S)

    def forget(self, batch_id: str) -> int:
        """Remove every key of the batch; how many."""
        keys = self.state.scan(self.key(batch_id) + ":")
        removed = sum(self.state.delete(k) for k in keys)
        return removed + int(self.state.delete(self.key(batch_id)))
