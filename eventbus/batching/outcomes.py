"""What a batch does when one of its jobs finishes: Laravel's ``Batch::recordSuccessfulJob`` and
``recordFailedJob``, the one place a batch's transitions are made.

Whoever runs a job reports its final outcome here: :func:`record_success` once it succeeded
(before its queue entry is deleted), :func:`record_failure` once it failed for good (before its
failed record is written and its entry deleted). Each report is two steps:

1. the outcome is recorded in one atomic step of the batch's store
   (:meth:`~eventbus.batching.repository.BatchRepository.record`), which also decides, once for
   the whole batch, which callbacks it makes due;
2. the caller pushes the callbacks it made due, then marks them pushed.

A worker that dies anywhere in between has not deleted the job yet: the job comes back, its
report is made again, step 1 changes nothing the second time but hands back the callbacks still
due, and step 2 finishes. A callback is pushed under the same uuid each time (a second push of a
job still queued is a no-op), and a callback job that already ran is not pushed again (callback
jobs note that they ran), so each callback is pushed once.

Both reports are safe to repeat and to retry: that is all a caller that could not reach the
store needs to know.
"""

from __future__ import annotations

import uuid as uuid_module
from collections.abc import Callable, Sequence
from typing import Any

from eventbus import serializer
from eventbus.batching.records import CALLS_FUNCTION, HANDS_ON, Due, is_member, split_id
from eventbus.batching.repository import BatchRepository
from eventbus.batching.stores import repository
from eventbus.payload import Payload
from eventbus.runtime import settings

Step = dict[str, Any]
#: Pushes ready-made ``{"destination", "payload"}`` steps (``eventbus.dispatching.push_steps``).
Pusher = Callable[[Sequence[Step]], None]

#: Per-job callbacks get a uuid of their own for each job, made from the callback's and the key.
_PER_JOB = uuid_module.UUID("5b0c1a6e-7f47-4b83-9a57-2e3c6f1f4a2d")


def record_success(payload: Payload, push: Pusher) -> None:
    """The job succeeded: count it in its batch and push the callbacks it made due.

    A callback job of a batch (not counted in it) notes instead that it ran."""
    if not payload.batch_id:
        return
    batch_id, connection = split_id(payload.batch_id)
    store = repository(connection)
    if not is_member(payload.batch_id):
        store.callback_ran(batch_id, payload.uuid)
        return
    if payload.command_name == HANDS_ON:
        return  # it dispatched a batch: its outcome here is that batch's (see report_to_parent)
    due = store.record(batch_id, payload.uuid, True)
    complete(store, batch_id, due or [], push)


def ran_already(payload: Payload) -> bool:
    """A batch's callback job that comes back after it ran (its worker noted that it ran, then
    its acknowledgement was lost: the worker was killed in between, or the Redis master that held
    its queue failed over before it replicated the delete): True when its batch kept the note,
    and the job is acknowledged without running again. Members of a batch are not asked: a
    member's outcome is recorded idempotently, its run is the job's own at-least-once."""
    if not payload.batch_id or is_member(payload.batch_id):
        return False
    batch_id, connection = split_id(payload.batch_id)
    return payload.uuid in repository(connection).callbacks_ran(batch_id, [payload.uuid])


def record_failure(payload: Payload, failure: str, push: Pusher) -> None:
    """The job failed for good (``failure``: its ``Type: message`` line): count it, and the steps
    of its chain that will now never run, in its batch; push the callbacks it made due."""
    if not payload.batch_id or not is_member(payload.batch_id):
        return
    batch_id, connection = split_id(payload.batch_id)
    store = repository(connection)
    unrun = unrun_steps(payload.to_dict())
    due = store.record(batch_id, payload.uuid, False, unrun=unrun, failure=failure.split("\n", 1)[0])
    complete(store, batch_id, due or [], push)


def complete(store: BatchRepository, batch_id: str, due: Sequence[Due], push: Pusher) -> None:
    """Push the callbacks ``due`` (skipping callback jobs that ran already), then mark them."""
    if not due:
        return
    description = store.description(batch_id) or {}
    cancelled = False
    if any(entry.kind == "chain" for entry in due):  # the chain goes on, or ends if it was cancelled
        found = store.find(batch_id)
        cancelled = found is not None and found.cancelled_at is not None
    batches = [(entry, steps_for(description, entry, cancelled)) for entry in due]
    ran = store.callbacks_ran(batch_id, [s["payload"]["uuid"] for _, steps in batches for s in steps])
    for entry, steps in batches:
        push([s for s in steps if s["payload"]["uuid"] not in ran])
        if entry.kind == "chain" and description.get("parent"):
            report_to_parent(description, cancelled, push)
        store.mark_pushed(batch_id, [entry.key])


def report_to_parent(description: dict[str, Any], cancelled: bool, push: Pusher) -> None:
    """A batch that was a step of a chain inside an outer batch has finished: record that step
    in the outer batch (a success; when it was cancelled, a failure that also settles the rest
    of the chain, which will never run)."""
    parent = description["parent"]
    batch_id, connection = split_id(parent["ref"])
    store = repository(connection)
    if cancelled:
        unrun = [u for step in description.get("continue_chain") or [] for u in uuids_in(step["payload"])]
        due = store.record(batch_id, parent["uuid"], False, unrun=unrun,
                           failure=f"eventbus.errors.EventBusError: batch {description.get('id')} was cancelled")
    else:
        due = store.record(batch_id, parent["uuid"], True)
    complete(store, batch_id, due or [], push)


def unrun_steps(payload: dict[str, Any]) -> list[str]:
    """The uuids of the steps of a chain that will never run once this step failed for good:
    the rest of its chain, and the rest of the chain a batch step hands on (at any depth)."""
    return [u for step in chained_steps(payload) for u in uuids_in(step["payload"])]


def uuids_in(payload: dict[str, Any]) -> list[str]:
    """A step's uuid and the uuids of the steps that would follow it."""
    return [str(payload.get("uuid")), *unrun_steps(payload)]


def chained_steps(payload: dict[str, Any]) -> list[dict[str, Any]]:
    data = payload.get("data") or {}
    steps = list(data.get("chained") or [])
    if data.get("commandName") == HANDS_ON:
        plan = serializer.decode((data.get("command") or {}).get("plan") or {})
        steps += plan.get("description", {}).get("continue_chain") or []
    return steps


def steps_for(description: dict[str, Any], entry: Due, cancelled: bool) -> list[Step]:
    """The ready-made jobs of one due callback, as they are to be pushed."""
    if entry.kind == "chain":
        if not cancelled:
            return list(description.get("continue_chain") or [])
        return [*description.get("chain_catch", []), *description.get("chain_finally", [])]
    steps = description.get("callbacks", {}).get(entry.kind, [])
    return [for_entry(step, entry) for step in steps]


def for_entry(step: Step, entry: Due) -> Step:
    """A callback step made for this entry: a function callback learns the failure that made it
    due; a per-job callback gets a uuid of its own for that job."""
    changes: dict[str, Any] = {}
    payload = step["payload"]
    if entry.per_job:
        changes["uuid"] = str(uuid_module.uuid5(_PER_JOB, f"{payload['uuid']}:{entry.key}"))
    data = payload.get("data", {})
    if entry.failure and data.get("commandName") == CALLS_FUNCTION:
        changes["command"] = {**data["command"], "failure": entry.failure}
    if not changes:
        return step
    made = Payload.from_dict(payload).replace(key=settings().key, **changes)
    return {**step, "payload": made.to_dict()}
