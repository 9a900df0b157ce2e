"""Chains: ``chain([A(), B(), C()]).catch(Alert()).finally_(Cleanup()).dispatch()``.

B is pushed when A has succeeded, C when B has. Each step carries the rest of the chain in its
payload, so a chain survives any worker restart. ``catch`` jobs are pushed once when a step
fails for good (the steps after it never run); ``finally_`` jobs once when the chain ends, either
way. A step's own ``queue``/``connection`` win over the chain's (Laravel's PendingChain). A step
may be a batch (``eventbus.batch([...])``): the chain goes on when the batch has finished.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eventbus.dispatching import (
    Destination,
    command_name,
    condition_holds,
    holds_until_commit,
    make_payload,
    option,
    push_after_commit,
    push_unique,
    unique,
)
from eventbus.payload import Payload
from eventbus.runtime import settings

Step = dict[str, Any]


def step_for(job: Any, queue: str | None, connection: str | None, **extra: Any) -> Step:
    """A job as a ready-made ``{"destination", "payload"}`` step, to push later."""
    destination = Destination.of(job, queue=option(job, "queue") or queue,
                                 connection=option(job, "connection") or connection)
    return {"destination": destination.to_dict(), "payload": make_payload(job, **extra).to_dict()}


class PendingChain:
    """Jobs that run one after another: each is pushed when the previous one succeeded."""

    def __init__(self, jobs: Sequence[Any]) -> None:
        if not jobs:
            raise ValueError("chain() needs at least one job")
        self.jobs = list(jobs)
        self.catch_jobs: list[Any] = []
        self.finally_jobs: list[Any] = []

    def catch(self, *jobs: Any) -> PendingChain:
        """Jobs pushed once if a step fails for good."""
        self.catch_jobs.extend(jobs)
        return self

    def finally_(self, *jobs: Any) -> PendingChain:
        """Jobs pushed once when the chain ends: after its last step, or after a step failed."""
        self.finally_jobs.extend(jobs)
        return self

    def dispatch(self, *, queue: str | None = None, connection: str | None = None,
                 after_commit: bool | None = None) -> str | None:
        """Push the first job, carrying the others. The chain's ``queue``/``connection`` apply
        only to steps that name none of their own."""
        first, payload, destination = self.first_payload(queue, connection)
        if holds_until_commit(first, after_commit):
            return push_after_commit(payload, destination, first)
        return push_unique(payload, destination, first)

    def dispatch_if(self, condition: Any, **options: Any) -> str | None:
        """:meth:`dispatch` when ``condition`` is true (a callable is called first); else None."""
        return self.dispatch(**options) if condition_holds(condition) else None

    def dispatch_unless(self, condition: Any, **options: Any) -> str | None:
        """:meth:`dispatch` unless ``condition`` is true (a callable is called first)."""
        return None if condition_holds(condition) else self.dispatch(**options)

    def first_payload(self, queue: str | None, connection: str | None,
                      **extra: Any) -> tuple[Any, Payload, Destination]:
        """The first step's payload, carrying the later steps and the callbacks."""
        catch = [step_for(job, queue, connection) for job in self.catch_jobs]
        finally_ = [step_for(job, queue, connection) for job in self.finally_jobs]
        jobs = self.steps_until_a_batch(queue, connection, catch, finally_, extra)
        rest = [step_for(job, queue, connection, chain_catch=catch,
                         chain_finally=self.finally_for(job, finally_), **extra) for job in jobs[1:]]
        first = jobs[0]
        destination = Destination.of(first, queue=option(first, "queue") or queue,
                                     connection=option(first, "connection") or connection)
        lock = unique.lock_for(first, command_name(first), destination.connection)
        payload = make_payload(first, chained=rest, unique=lock, chain_catch=catch,
                               chain_finally=self.finally_for(first, finally_), **extra)
        return first, payload, destination

    @staticmethod
    def finally_for(job: Any, finally_: list[Step]) -> list[Step]:
        """A batch step hands the chain on when its batch finishes: its own success is not the
        chain's end, so it does not carry the chain's ``finally_`` jobs."""
        return [] if getattr(job, "continues_chain", False) else finally_

    def steps_until_a_batch(self, queue: str | None, connection: str | None, catch: list[Step],
                            finally_: list[Step], extra: dict[str, Any]) -> list[Any]:
        """The jobs up to the first batch step; that batch carries the rest of the chain on.

        A batch is a chain step that finishes when all its jobs have: it becomes one job that
        dispatches the batch, and the steps after it are pushed when the batch has finished
        (not when that job has).
        """
        for index, job in enumerate(self.jobs):
            as_step = getattr(job, "as_chain_step", None)
            if callable(as_step):
                later = self.jobs[index + 1:]
                continuation = []
                if later:
                    tail = PendingChain(later)
                    tail.catch_jobs, tail.finally_jobs = self.catch_jobs, self.finally_jobs
                    _, payload, destination = tail.first_payload(queue, connection, **extra)
                    continuation = [{"destination": destination.to_dict(), "payload": payload.to_dict()}]
                return [*self.jobs[:index], as_step(continuation, catch, finally_, queue, connection)]
        return self.jobs


def chain(jobs: Sequence[Any]) -> PendingChain:
    """``chain([A(), B(), C()]).dispatch()``: B runs after A succeeds, C after B."""
    return PendingChain(jobs)


def amend_chain(payload: Payload, job: Any, *, queue: str | None, connection: str | None,
                first: bool) -> Payload:
    """``payload`` with ``job`` added to the steps still to run: first (``prepend_to_chain``)
    or last (``append_to_chain``), as Laravel's ``prependToChain``/``appendToChain``.

    The new step carries the chain's ``catch`` and ``finally_`` jobs like every other step, and
    runs on its own queue and connection, else the running job's (the chain's, as Laravel's
    ``chainQueue``). A step added to a job that was no chain makes it one: the job's
    ``finally_`` jobs now wait for the new last step. The payload is signed again (with the
    app's key), as every changed payload is.
    """
    if callable(getattr(job, "as_chain_step", None)):
        raise TypeError("a batch cannot be added to a running chain: dispatch it from the job, or "
                        "make it a step of the chain when the chain is dispatched")
    step = step_for(job, queue, connection, chain_catch=list(payload.chain_catch),
                    chain_finally=list(payload.chain_finally))
    steps = (step, *payload.chained) if first else (*payload.chained, step)
    return payload.replace(chained=steps, key=settings().key)


def remaining_steps(payload: Payload) -> list[Payload]:
    """The steps of this job's chain that have not run (after it fails, they never will)."""
    return [Payload.from_dict(step["payload"]) for step in payload.chained]


