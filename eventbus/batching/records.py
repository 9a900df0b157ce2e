"""What a batch store holds and hands back: the batch as read, and the callbacks an outcome made due.

A batch reference travels in each member's payload as ``"<id>@<connection>"``; a callback job
carries the same reference with ``#callback`` after it, so it can read its batch without being
counted in it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

#: Batch state expires this long after its last change where the store expires keys (Redis);
#: ``eventbus prune-batches`` removes finished batches sooner, and SQL rows only that way.
KEEP_S = 7 * 24 * 3600.0

CALLBACK_MARK = "#callback"

#: Callback kinds, in the order their jobs are pushed when one outcome makes several due.
#: ``chain`` is what a batch that is a step of a chain hands on: the rest of the chain, or the
#: chain's ``catch``/``finally_`` jobs when the batch was cancelled.
KINDS = ("progress", "failure", "catch", "then", "finally", "chain")

#: The registered name of the job that dispatches a batch as a step of a chain
#: (``eventbus.batches.ChainedBatch``). In an outer batch its outcome is the inner batch's: it
#: is recorded when the inner batch finishes, not when the job returns.
HANDS_ON = "eventbus.batches.ChainedBatch"
#: The registered name of the job that calls a function callback
#: (``eventbus.batching.callbacks.CallBatchCallback``): it is told the failure that made it due.
CALLS_FUNCTION = "eventbus.batching.callbacks.CallBatchCallback"


def split_id(batch_ref: str) -> tuple[str, str | None]:
    """``"<id>@<connection>"`` (optionally with ``#callback``) -> (id, connection)."""
    batch_id, _, connection = batch_ref.removesuffix(CALLBACK_MARK).partition("@")
    return batch_id, connection or None


def is_member(batch_ref: str) -> bool:
    """A job of the batch, counted in it; a callback job only sees its batch."""
    return not batch_ref.endswith(CALLBACK_MARK)


@dataclasses.dataclass(frozen=True)
class BatchRecord:
    """A batch as its store has it now."""

    id: str
    name: str
    total: int
    pending: int
    failed: int
    created_at: float
    cancelled_at: float | None = None
    finished_at: float | None = None
    failed_job_ids: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Due:
    """A callback an outcome made due and that is not pushed yet.

    ``key`` is its kind (``then``, ``catch``, ``finally``, ``chain``) or, for the callbacks due
    once per job, ``progress:<job uuid>:<ok|fail>`` and ``failure:<job uuid>``. ``failure`` is the
    ``Type: message`` line of the failure that made it due, if one did.
    """

    key: str
    failure: str = ""

    @property
    def kind(self) -> str:
        return self.key.split(":", 1)[0]

    @property
    def per_job(self) -> bool:
        return ":" in self.key


def in_push_order(entries: list[Due]) -> list[Due]:
    return sorted(entries, key=lambda d: (KINDS.index(d.kind), d.key))


def flags_of(description: dict[str, Any]) -> list[str]:
    """The callback kinds a batch has (its store keeps these beside the counters, so that
    recording an outcome never reads the callbacks themselves)."""
    callbacks = description.get("callbacks", {})
    kinds = [kind for kind in KINDS[:-1] if callbacks.get(kind)]
    if any(description.get(k) for k in ("continue_chain", "chain_catch", "chain_finally", "parent")):
        kinds.append("chain")
    return kinds
