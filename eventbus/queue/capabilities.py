"""What a driver may do beyond the contract every driver keeps: one small protocol per capability.

Every driver pushes, pops, deletes and releases (:class:`~eventbus.queue.base.Queue`). The rest is
optional, and a driver *declares* what it offers by naming the protocols among its bases::

    class MyQueue(Queue, Peekable, Cancellable):
        def peek(self, queue=None, limit=10): ...
        def find(self, uuid, queue=None): ...
        def list_jobs(self, state, queue=None, limit=10): ...
        def cancel(self, uuid, queue=None): ...

and the code that needs one asks ``supports(conn, Cancellable)`` (``eventbus cancel``, the
dashboard's job listing, the worker's prefetch, the monitor's long-wait alert). A declaration,
not a guess from the methods: :class:`~eventbus.queue.base.Queue` keeps a fallback for each
(a ``cancel`` that says why it cannot, a ``reserve`` that pops one job at a time, a thread hop
for ``apush``), so every driver *has* the methods and only its declaration says they do the job.
The contract suite holds each driver to what it declares.

The class flags of earlier releases (``cancellable``, ``peekable``, ``reports_wait``,
``batches_reservations``, ``gives_back_attempts``, ``has_workers``) still read true for a driver
that declares the protocol, and a driver that sets one instead of declaring is still believed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

from eventbus.payload import Payload
from eventbus.queue.base import Cancellation, Delay, JobState, Queue, QueuedJob, QueueJob, Reserved


@runtime_checkable
class Capability(Protocol):
    """The base of the capability protocols: declaring one sets the class flag that said it in
    earlier releases (:data:`FLAGS`), so code that reads ``type(conn).cancellable`` still works.

    The flag is what :func:`supports` reads, so a subclass can still take back what its driver
    declares, as before (``reports_wait = False`` on a subclass of the memory driver)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("_is_protocol", False):
            return
        for capability in cls.__bases__:  # declared here; a subclass inherits the flag as it is
            flag = FLAGS.get(capability)
            if flag is not None and flag not in cls.__dict__:
                setattr(cls, flag, True)


@runtime_checkable
class Peekable(Capability, Protocol):
    """Ready jobs can be looked at without reserving them (``eventbus peek``). Not SQS: a look
    there is a receive, and counts as an attempt."""

    def peek(self, queue: str | None = None, limit: int = 10) -> list[str]:
        """Raw payloads of ready jobs, oldest first, without reserving them."""
        ...


@runtime_checkable
class ReportsWait(Capability, Protocol):
    """The driver can tell how long the oldest ready job has waited: ``eventbus monitor`` raises
    its long-wait alert only for the queues of such a driver, and says so for the others."""

    def oldest_ready_age_s(self, queue: str | None = None) -> float | None:
        """Seconds the oldest ready job of ``queue`` has waited (None: no ready job)."""
        ...


@runtime_checkable
class Cancellable(Capability, Protocol):
    """One queued job can be found by its uuid, listed by state, and removed before it runs
    (``eventbus cancel``, ``eventbus job show``, the dashboard's job listing). A driver that
    cannot says why in :attr:`~eventbus.queue.base.Queue.not_cancellable_because`."""

    def find(self, uuid: str, queue: str | None = None) -> QueuedJob | None:
        """The job ``uuid`` of ``queue`` (ready, delayed or reserved), or None. Reserves nothing."""
        ...

    def list_jobs(self, state: JobState, queue: str | None = None, limit: int = 10) -> list[QueuedJob]:
        """Up to ``limit`` jobs of ``queue`` in ``state``, without touching them."""
        ...

    def cancel(self, uuid: str, queue: str | None = None) -> Cancellation:
        """Remove the job ``uuid`` in one step if it is ready or delayed; a reserved one is left
        to its worker."""
        ...


@runtime_checkable
class BatchesReservations(Capability, Protocol):
    """:meth:`reserve` takes many jobs and settles the worker's finished ones in one round trip:
    only then does the worker prefetch and batch its acknowledgements."""

    def reserve(self, queue: str | None, limit: int, *, acks: Sequence[QueueJob] = (),
                renew: Sequence[QueueJob] = (), give_back: Sequence[QueueJob] = ()) -> Reserved:
        """Delete ``acks``, renew ``renew``, give back ``give_back``, then reserve up to ``limit``."""
        ...


@runtime_checkable
class GivesBackAttempts(Capability, Protocol):
    """A release without running (a lock or a limit said "not now") gives the attempt back in
    the same step, so it does not use up a try."""

    def release_uncounted(self, job: QueueJob, delay: float) -> bool:
        """Release ``job`` and give back the attempt its pop counted, in one step."""
        ...


@runtime_checkable
class WorkerSignals(Capability, Protocol):
    """Worker processes take jobs from the driver and read its signals (``eventbus restart``,
    ``down``, ``up``)."""

    def signals(self) -> dict[str, float]:
        """The signals every worker of this connection reads."""
        ...

    def set_signal(self, name: str, value: float | None) -> bool:
        """Set (or with None, clear) a worker signal."""
        ...


@runtime_checkable
class AsyncPush(Capability, Protocol):
    """Pushes from an event loop go through an async client of the driver's own, without the
    thread hop of the fallback (``await eventbus.adispatch(...)``)."""

    async def apush(self, payload: Payload, queue: str | None = None) -> str: ...

    async def alater(self, delay: Delay, payload: Payload, queue: str | None = None) -> str: ...

    async def abulk(self, payloads: Iterable[Payload], queue: str | None = None) -> list[str]: ...


#: Each capability and the class flag that said it before the protocols (None: none did).
FLAGS: dict[type, str] = {
    Peekable: "peekable",
    ReportsWait: "reports_wait",
    Cancellable: "cancellable",
    BatchesReservations: "batches_reservations",
    GivesBackAttempts: "gives_back_attempts",
    WorkerSignals: "has_workers",
}

#: Every capability, in the order ``declared`` lists them.
CAPABILITIES: tuple[type, ...] = (Peekable, ReportsWait, Cancellable, BatchesReservations,
                                  GivesBackAttempts, WorkerSignals, AsyncPush)


def _class_of(driver: Queue | type[Queue]) -> type[Queue]:
    return driver if isinstance(driver, type) else type(driver)


def supports(driver: Queue | type[Queue], capability: type) -> bool:
    """Whether ``driver`` (a connection or a driver class) declares ``capability``: among its
    bases (which sets the capability's class flag), or, for a driver written before the
    protocols, with the flag itself."""
    cls = _class_of(driver)
    flag = FLAGS.get(capability)
    if flag is None:
        return capability in cls.__mro__
    return getattr(cls, flag, False) is True


def declared(driver: Queue | type[Queue]) -> list[type]:
    """The capabilities ``driver`` declares (for ``eventbus`` output and the contract suite)."""
    return [capability for capability in CAPABILITIES if supports(driver, capability)]


__all__ = ["AsyncPush", "BatchesReservations", "CAPABILITIES", "Cancellable", "Capability", "FLAGS",
           "GivesBackAttempts", "Peekable", "ReportsWait", "WorkerSignals", "declared", "supports"]
