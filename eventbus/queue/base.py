"""The driver contract. Drivers only move payload text; retries and failure belong to the worker.

A driver stores each payload byte for byte, keeps the live attempt count beside it, and hands out
reservations: a popped :class:`QueueJob` carries a token, and ``delete``/``release`` act only while
that token still holds the reservation, so a worker whose reservation expired and was taken over
cannot delete or duplicate the job it no longer owns.
"""

from __future__ import annotations

import abc
import dataclasses
import datetime as dt
import difflib
import enum
import logging
import math
import time
import uuid as uuid_module
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urlsplit

from eventbus.errors import ConfigurationError, DeserializationError, EventBusError
from eventbus.payload import Payload, parse_document, uuid_of
from eventbus.state.base import StateStore
from eventbus.urls import redact_url

if TYPE_CHECKING:  # asyncio is imported where it is used: `import eventbus` goes without it
    import asyncio

log = logging.getLogger(__name__)

Delay = float | int | dt.timedelta | dt.datetime


def delay_seconds(delay: Delay | None) -> float:
    """Normalise a delay (seconds, timedelta or aware datetime) to seconds, never negative.

    NaN and infinity are an :class:`EventBusError` (no driver can keep a job for ever, and a
    server that counts in whole seconds cannot even round them).
    """
    if delay is None:
        return 0.0
    if isinstance(delay, dt.timedelta):
        seconds = delay.total_seconds()
    elif isinstance(delay, dt.datetime):
        if delay.tzinfo is None:
            raise ValueError("delay datetime must be timezone-aware (e.g. datetime.now(timezone.utc))")
        seconds = (delay - dt.datetime.now(dt.timezone.utc)).total_seconds()
    elif isinstance(delay, (int, float)) and not isinstance(delay, bool):
        try:
            seconds = float(delay)
        except OverflowError:  # an int beyond any float
            seconds = math.inf
    else:
        raise TypeError(f"delay must be seconds, a timedelta or a datetime, not {type(delay).__name__}")
    if not math.isfinite(seconds):
        raise EventBusError(f"delay must be a finite number of seconds, not {delay!r:.40}")
    return max(seconds, 0.0)


@dataclasses.dataclass(frozen=True)
class QueueStats:
    """How many jobs one queue holds, by state, and how long the oldest ready one has waited."""

    queue: str
    ready: int
    delayed: int
    reserved: int
    oldest_ready_age_s: float | None = None

    @property
    def size(self) -> int:
        return self.ready + self.delayed + self.reserved

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "size": self.size}


class JobState(enum.Enum):
    """Where a queued job is (:meth:`Queue.find`)."""

    READY = "ready"
    DELAYED = "delayed"
    #: A worker holds it (running, or held by a worker that died, until ``retry_after``).
    RESERVED = "reserved"


@dataclasses.dataclass(frozen=True)
class QueuedJob:
    """One job found in a queue by its uuid: where it is, and its payload as stored."""

    uuid: str
    queue: str
    state: JobState
    raw: str


class Cancellation(enum.Enum):
    """What :meth:`Queue.cancel` did."""

    #: The job was ready or delayed; it is gone, with its body, and never runs.
    CANCELLED = "cancelled"
    #: A worker holds the job: nothing was changed.
    RESERVED = "reserved"
    #: No job with that uuid is queued there (it ran, failed, or never was).
    NOT_FOUND = "not found"


@dataclasses.dataclass
class Reserved:
    """What :meth:`Queue.reserve` returns: the jobs it reserved, oldest first, and the ids of the
    renewed jobs whose reservation this worker no longer holds (they belong to someone else)."""

    jobs: list[QueueJob]
    lost: set[str] = dataclasses.field(default_factory=set)


def pop_up_to(limit: int, pop: Callable[[], QueueJob | None]) -> list[QueueJob]:
    """Up to ``limit`` jobs, one ``pop()`` each, until one finds none: how a driver that cannot
    reserve many in one request reserves many."""
    jobs: list[QueueJob] = []
    while len(jobs) < limit:
        job = pop()
        if job is None:
            break
        jobs.append(job)
    return jobs


@dataclasses.dataclass
class QueueJob:
    """A reserved job as the worker sees it: the raw body, the live attempt count, the token."""

    queue: Queue
    queue_name: str
    job_id: str
    raw: str
    attempts: int
    token: str = ""
    stored_uuid: str | None = None
    #: How a former holder described the job's failure when it could not record it (its failed
    #: store was down): the job failed for good already and is to be recorded, not run again.
    failure: str | None = None
    deleted: bool = False
    released: bool = False
    failed: bool = False
    #: The delay of the last ``release`` (for the worker's report).
    release_delay_s: float | None = None
    #: When the reservation runs out, on this process's ``time.monotonic()`` clock (taken just
    #: before the request that made or renewed it, so never later than the server's deadline).
    #: 0: unknown (drivers without expiring reservations, inline jobs).
    reserved_until: float = 0.0
    #: Set by a worker that batches acknowledgements (:meth:`Queue.reserve`): ``delete`` after
    #: success hands the job to it instead of making a round trip of its own.
    defer_delete: Callable[[QueueJob], None] | None = dataclasses.field(default=None, repr=False)
    _payload: Payload | None = dataclasses.field(default=None, repr=False)
    _document: dict[str, Any] | None = dataclasses.field(default=None, repr=False)
    #: Set by whoever runs the job (the worker's processing): how ``fail()`` fails it for good.
    on_fail: Callable[[QueueJob, BaseException], None] | None = dataclasses.field(default=None, repr=False)
    #: Why the payload was refused (a bad signature, a name outside the registry), once it was:
    #: from then on :meth:`payload` raises it, so nothing reads a field of a refused envelope.
    refusal: DeserializationError | None = dataclasses.field(default=None, repr=False)
    #: The worker checked the signature and the names already (:func:`eventbus.worker.processing.screen`).
    screened: bool = dataclasses.field(default=False, repr=False)

    @property
    def connection_name(self) -> str:
        return self.queue.connection_name

    @property
    def uuid(self) -> str:
        """The payload's uuid; for a body that is not JSON, the id the driver gave it. Text
        that is not UTF-8 is escaped (:func:`~eventbus.payload.text_id`), so a store can keep it."""
        if self._document is not None:
            value = self._document.get("uuid")
            if isinstance(value, str) and value and value.isascii():
                return value
        return uuid_of(self.raw) or self.stored_uuid or self.job_id

    def document(self) -> dict[str, Any]:
        """The body parsed as a JSON object (raises DeserializationError for a bad body)."""
        if self._document is None:
            try:
                self._document = parse_document(self.raw)
            except DeserializationError as exc:
                raise DeserializationError(str(exc), job_uuid=self.stored_uuid or self.job_id,
                                           queue=self.queue_name) from exc
        return self._document

    def payload(self) -> Payload:
        """The parsed payload (raises DeserializationError for a bad body, and for a refused one)."""
        if self.refusal is not None:
            raise DeserializationError(f"the payload was refused: {self.refusal}",
                                       job_uuid=self.uuid, queue=self.queue_name)
        if self._payload is None:
            self._payload = Payload.from_dict(self.document())
        return self._payload

    def amend_payload(self, payload: Payload) -> None:
        """Let what the job set off follow ``payload`` instead of the stored one (a running job
        added steps to its chain). The stored body is not changed: a job released or retried
        runs from what was pushed, as in Laravel."""
        self._payload = payload

    def refuse(self, reason: DeserializationError) -> None:
        """Mark the payload refused: what it says is not acted on from now on (see :attr:`refusal`)."""
        if self.refusal is None:
            self.refusal = reason

    def delete(self) -> bool:
        """Remove the job for good. False if this worker no longer holds the reservation."""
        if self.deleted:
            return True
        self.deleted = self.queue.delete_reserved(self)
        return self.deleted

    def acknowledge(self) -> None:
        """Delete the job after it succeeded: now, or, for a worker that batches acknowledgements,
        with its next request to the server (the job is done either way; a worker killed in
        between leaves a reservation that expires, and the job runs again: at-least-once)."""
        if self.deleted:
            return
        if self.defer_delete is not None:
            self.deleted = True
            self.defer_delete(self)
            return
        self.delete()

    def release(self, delay: Delay | None = 0, *, counts_attempt: bool = True) -> bool:
        """Put the job back, available after ``delay``. False if the reservation was lost.

        With ``counts_attempt=False`` (a rate limit or a lock said "not now", the job never ran)
        the attempt this pop counted is given back in the same step, so it does not use up a try
        (see :meth:`Queue.release_uncounted`).
        """
        self.release_delay_s = delay_seconds(delay)
        if counts_attempt:
            self.released = self.queue.release_reserved(self, self.release_delay_s)
        else:
            self.released = self.queue.release_uncounted(self, self.release_delay_s)
        return self.released

    def touch(self) -> bool:
        """Restart the reservation's clock (a long job asking for another ``retry_after``).

        False when this worker no longer holds the reservation or the driver cannot extend one.
        """
        if self.is_done:
            return False
        return self.queue.touch_reserved(self)

    def fail(self, exc: BaseException) -> None:
        """Fail the job for good, the way the code running it does (record, delete, ``failed()``)."""
        if self.on_fail is not None:
            self.on_fail(self, exc)
        else:
            self.mark_failed()

    def mark_failed(self) -> None:
        self.failed = True

    @property
    def is_done(self) -> bool:
        return self.deleted or self.released or self.failed


class Queue(abc.ABC):
    """One connection's queues. ``queue=None`` everywhere means the connection's default queue.

    What every driver does: push, pop, delete and release with a fenced reservation, count,
    clear. What a driver may do besides (peek, cancel one job, reserve many at once, signal its
    workers, ...) it declares by naming the protocols of :mod:`eventbus.queue.capabilities`
    among its bases; this class keeps a fallback for each, so a caller needs no ``hasattr``.

    The facts about a driver live on its class, so nothing outside the driver's own file needs
    to name it: the options a connection of it accepts (with their defaults), whether it needs a
    URL, whether its reservations expire (so the worker's timeout must stay below
    ``retry_after``), whether it runs jobs inline. A driver is one file plus one line in
    :mod:`eventbus.queue.drivers`.
    """

    #: The name connections use in ``{"driver": ...}``.
    driver: ClassVar[str] = ""
    #: Options a connection accepts besides ``driver`` and ``url``, with their defaults.
    defaults: ClassVar[Mapping[str, Any]] = {"queue": "default"}
    #: A URL every connection of this driver needs (shown in the error when it is missing).
    example_url: ClassVar[str | None] = None
    #: URL schemes accepted (empty: any scheme the driver's own check accepts).
    url_schemes: ClassVar[tuple[str, ...]] = ()
    #: Reservations expire after ``retry_after``; a worker's timeout must stay below it.
    holds_reservations: ClassVar[bool] = False
    #: A push runs the job at once in the caller (the ``sync`` driver).
    runs_inline: ClassVar[bool] = False
    #: Worker processes take jobs from it, so worker signals (restart, down) apply. Set by
    #: declaring :class:`~eventbus.queue.capabilities.WorkerSignals`, as are the other flags
    #: of a capability below (``peekable``, ``reports_wait``, ``gives_back_attempts``,
    #: ``cancellable``, ``batches_reservations``): read them with
    #: :func:`~eventbus.queue.capabilities.supports`.
    has_workers: ClassVar[bool] = False
    #: Pushing a uuid that is still queued adds nothing (the contract's idempotent push). A
    #: driver whose server cannot deduplicate says False: a repeated push then stores a copy.
    idempotent_push: ClassVar[bool] = True
    #: Delays (``later``, ``release``) are rounded *up* to a multiple of this many seconds
    #: (0: kept as given). A job never runs early; it may run up to this much later.
    delay_granularity_s: ClassVar[float] = 0.0
    #: ``clear`` reaches delayed jobs too. False for a server that hides delayed jobs from every
    #: client until they are due: ``clear`` then removes the ready ones only.
    clears_delayed: ClassVar[bool] = True
    #: Ready jobs can be looked at without reserving them (:class:`~eventbus.queue.capabilities.Peekable`).
    peekable: ClassVar[bool] = False
    #: :meth:`oldest_ready_age_s` can tell how long the oldest ready job has waited. False for a
    #: driver that cannot (its server does not say, or no job ever waits): ``eventbus monitor``
    #: never raises a long-wait alert for its queues, and says so.
    reports_wait: ClassVar[bool] = False
    #: :meth:`release_uncounted` gives the attempt back (False: such a release uses up a try).
    gives_back_attempts: ClassVar[bool] = False
    #: Other processes reach the same jobs. False for a driver whose jobs live in the process
    #: that pushed them (``memory``): ``eventbus work --processes N`` refuses it.
    shared_between_processes: ClassVar[bool] = True
    #: One ready or delayed job can be found by its uuid and removed (:meth:`find`,
    #: :meth:`cancel`; ``eventbus cancel``). A driver that cannot says why in
    #: :attr:`not_cancellable_because`.
    cancellable: ClassVar[bool] = False
    #: Why :meth:`cancel` is not offered (the end of "cannot cancel one job: ...").
    not_cancellable_because: ClassVar[str] = "it cannot find one queued job by its uuid"

    def __init__(self, connection_name: str, config: Mapping[str, Any]) -> None:
        self.connection_name = connection_name
        self.config = dict(config)
        self.default_queue: str = str(config.get("queue", "default"))
        self.retry_after: float = float(config.get("retry_after", 90.0))

    # -- configuration ------------------------------------------------------------------------
    @classmethod
    def validate_config(cls, name: str, config: Mapping[str, Any]) -> dict[str, Any]:
        """The connection's options with defaults filled in; ConfigurationError naming the key."""
        known = {"driver", "url", *cls.defaults}
        for key in config:
            if key not in known:
                hint = difflib.get_close_matches(str(key), sorted(known), n=1)
                suggestion = f" (did you mean {hint[0]!r}?)" if hint else ""
                raise ConfigurationError(
                    f"connection {name!r} has unknown option {key!r}{suggestion}; the {cls.driver} "
                    f"driver takes {', '.join(sorted(known))}", connection=name)
        merged = {**cls.defaults, **config}
        if cls.example_url is not None:
            url = merged.get("url")
            if not isinstance(url, str) or "://" not in url:
                raise ConfigurationError(f"connection {name!r} needs a 'url' such as {cls.example_url}",
                                         connection=name)
            try:
                urlsplit(url).port
            except ValueError:
                raise ConfigurationError(f"connection {name!r} has a malformed URL {redact_url(url)!r} "
                                         f"(expected something like {cls.example_url})",
                                         connection=name) from None
            if cls.url_schemes and url.split("://", 1)[0] not in cls.url_schemes:
                raise ConfigurationError(
                    f"connection {name!r} has a bad {cls.driver} URL {redact_url(url)!r} "
                    f"(expected {cls.example_url})", connection=name)
        for key in ("retry_after", "block_for"):
            value = merged.get(key)
            if key in merged and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not math.isfinite(value) or value < 0):
                raise ConfigurationError(f"connection {name!r}: {key!r} must be a number of seconds >= 0",
                                         connection=name)
        return merged

    @classmethod
    def prepare_fork(cls, config: Mapping[str, Any]) -> None:
        """Load what every worker of this driver loads when it starts (modules, script sources,
        lookups that are the same in every process), without connecting to anything.

        A supervisor calls it once before it forks its children (``eventbus work --processes
        N``): each child then finds it loaded and goes straight to its first job, instead of
        every child doing the same work at the same moment on the same cores. Default: nothing.
        """

    @classmethod
    def failed_store_url(cls, config: Mapping[str, Any]) -> str | None:
        """Where this connection's failed jobs live by default (None: the embedded SQLite file)."""
        return None

    @classmethod
    def failed_scope(cls, config: Mapping[str, Any]) -> dict[str, str]:
        """What scopes the failed store of an app whose default connection this is, so apps
        sharing a server keep apart (``{"prefix": ...}`` on Redis, ``{"table": ...}`` in SQL;
        see :func:`eventbus.failed.store_for`). Default: nothing (the store's own defaults)."""
        return {}

    def queue_name(self, queue: str | None) -> str:
        return queue or self.default_queue

    # -- pushing ------------------------------------------------------------------------------
    def push(self, payload: Payload, queue: str | None = None) -> str:
        return self.push_raw(payload.to_json(), queue)

    def later(self, delay: Delay, payload: Payload, queue: str | None = None) -> str:
        return self.push_raw(payload.to_json(), queue, delay=delay_seconds(delay))

    def bulk(self, payloads: Iterable[Payload], queue: str | None = None) -> list[str]:
        return [self.push(p, queue) for p in payloads]

    @abc.abstractmethod
    def push_raw(self, payload: str, queue: str | None = None, *, delay: float = 0.0) -> str:
        """Store ``payload`` as is. Idempotent by the payload's uuid while that job exists."""

    def inline_job(self, payload: str, queue: str | None = None) -> QueueJob:
        """The job as a caller runs it at once (``runs_inline`` drivers): attempt 1, no reservation."""
        return QueueJob(queue=self, queue_name=self.queue_name(queue), job_id=id_for(payload),
                        raw=payload, attempts=1)

    # -- popping -----------------------------------------------------------------------------
    @abc.abstractmethod
    def pop(self, queue: str | None = None) -> QueueJob | None:
        """Reserve the oldest ready job (due delayed and expired reservations count as ready)."""

    def wait(self, queues: Sequence[str], timeout: float) -> None:
        """Block up to ``timeout`` seconds or until a job may be ready. Default: sleep."""
        if timeout > 0:
            time.sleep(timeout)

    @abc.abstractmethod
    def delete_reserved(self, job: QueueJob) -> bool: ...

    @abc.abstractmethod
    def release_reserved(self, job: QueueJob, delay: float) -> bool: ...

    def release_uncounted(self, job: QueueJob, delay: float) -> bool:
        """:meth:`release_reserved`, and give back the attempt the pop counted, in one step
        (a job released without running: a lock or a limit said "not now").

        One step, because in two a worker could reserve the job between them and count an
        attempt too many (a job with ``tries = 1`` would then fail without ever running). A
        driver that cannot give an attempt back keeps this default, and a release without
        running then uses up a try like any other (as it always does in Laravel); such a driver
        leaves :attr:`gives_back_attempts` False.
        """
        return self.release_reserved(job, delay)

    def hold_failure(self, job: QueueJob, description: str) -> bool:
        """Keep a job that failed for good reserved for another ``retry_after``, with
        ``description`` beside it, only while ``job``'s token holds the reservation; False when it
        does not (then nothing changed). The first step of failing a job whose failed store is
        not where the queue is: the job stays until its record is stored and it is deleted, and
        if that never happens it comes back from ``pop`` with :attr:`QueueJob.failure` set.

        Drivers that cannot keep a failure beside a job return True: their record is then
        written before the fenced delete, unfenced.
        """
        return True

    def touch_reserved(self, job: QueueJob) -> bool:
        """Extend ``job``'s reservation by another ``retry_after`` while this worker holds it.

        Default: the driver cannot, and says so with False (the reservation keeps its deadline).
        """
        return False

    # -- reserving many at once (the worker's prefetch) ----------------------------------------
    #: :meth:`reserve` takes many jobs and settles the worker's finished ones in one round trip.
    #: Only then does the worker prefetch and batch its acknowledgements (the default below is
    #: correct for every driver but saves nothing).
    batches_reservations: ClassVar[bool] = False

    def reserve(self, queue: str | None, limit: int, *, acks: Sequence[QueueJob] = (),
                renew: Sequence[QueueJob] = (), give_back: Sequence[QueueJob] = ()) -> Reserved:
        """In one request where the driver can: delete ``acks`` (jobs of ``queue`` that succeeded),
        extend the reservations of ``renew`` (held, not started yet) by ``retry_after``, put
        ``give_back`` (held, never started) back at the head of the queue without counting their
        attempt, then reserve up to ``limit`` ready jobs, each with its own token and deadline.

        Every job passed must belong to ``queue`` and still carry its token; a job whose
        reservation this worker lost is left alone (and reported in ``lost`` when renewed).
        """
        for job in acks:
            self.delete_reserved(job)
        lost = {job.job_id for job in renew if not self.touch_reserved(job)} if renew else set()
        for job in give_back:
            self.release_uncounted(job, 0.0)
        return Reserved(pop_up_to(limit, lambda: self.pop(queue)), lost)

    def abandon_wait(self) -> None:
        """A blocking wait was cut short (a signal): drop the connection it was reading from, so
        that no reply arrives on it later. Default: close everything (a later call reconnects)."""
        self.close()

    def wait_and_reserve(self, queues: Sequence[str], timeout: float, limit: int) -> Reserved | None:
        """:meth:`wait`, and on a driver that can, reserve up to ``limit`` jobs in the same request
        when the wait ends (None: it did not; the caller reserves as usual)."""
        self.wait(queues, timeout)
        return None

    # -- inspection --------------------------------------------------------------------------
    @abc.abstractmethod
    def size(self, queue: str | None = None) -> int:
        """Ready + delayed + reserved jobs."""

    def queues(self) -> list[str]:
        """The names of the queues that hold jobs on this connection, sorted."""
        return []

    def stats(self, queue: str | None = None) -> QueueStats:
        """Ready, delayed and reserved counts of one queue (drivers that keep none: all zero)."""
        return QueueStats(self.queue_name(queue), 0, 0, 0)

    def oldest_ready_age_s(self, queue: str | None = None) -> float | None:
        """Seconds the oldest ready job of ``queue`` has waited (None: no ready job, or the
        driver cannot tell, see :attr:`reports_wait`). Default: from :meth:`stats`."""
        return self.stats(queue).oldest_ready_age_s if self.reports_wait else None

    @abc.abstractmethod
    def clear(self, queue: str | None = None) -> int:
        """Remove ready and delayed jobs (not reserved ones); return how many."""

    @abc.abstractmethod
    def peek(self, queue: str | None = None, limit: int = 10) -> list[str]:
        """Raw payloads of ready jobs, oldest first, without reserving them."""

    # -- one job by its uuid (drivers that declare Cancellable) --------------------------------
    def find(self, uuid: str, queue: str | None = None) -> QueuedJob | None:
        """The job ``uuid`` of ``queue`` (ready, delayed or reserved), or None. Reserves nothing."""
        raise EventBusError(f"the {self.driver} driver cannot cancel one job: {self.not_cancellable_because}")

    def list_jobs(self, state: JobState, queue: str | None = None, limit: int = 10) -> list[QueuedJob]:
        """Up to ``limit`` jobs of ``queue`` in ``state``, without touching them: ready ones oldest
        first, delayed ones soonest due first, reserved ones soonest expiring first (for people:
        the dashboard's job listing; a job may move on between two reads)."""
        raise EventBusError(f"the {self.driver} driver cannot cancel one job: {self.not_cancellable_because}")

    def cancel(self, uuid: str, queue: str | None = None) -> Cancellation:
        """Remove the job ``uuid`` of ``queue`` in one step if it is ready or delayed: it never
        runs. A reserved job is left to its worker (:attr:`Cancellation.RESERVED`). Unique locks
        and batches are not the driver's business (see :func:`eventbus.control.cancel`)."""
        raise EventBusError(f"the {self.driver} driver cannot cancel one job: {self.not_cancellable_because}")

    # -- worker support ----------------------------------------------------------------------
    @abc.abstractmethod
    def record_exception(self, uuid: str) -> int:
        """Count one more exception for job ``uuid`` (for max_exceptions); return the count."""

    def forget_exceptions(self, uuid: str) -> None:
        """Drop the exception count of a job that has finished."""

    def ping(self) -> None:
        """Raise ConnectionUnavailableError when the server cannot be reached."""

    def startup_warnings(self) -> list[str]:
        """What a worker should warn about when it starts on this connection (e.g. a server
        that keeps its data only in memory)."""
        return []

    def close(self) -> None:
        """Release connections."""

    def state_store(self) -> StateStore:
        """A new state store for this connection (:mod:`eventbus.state`); drivers with a server
        keep it there. Default: the embedded SQLite file, beside the default failed job store."""
        from eventbus.state.database import EMBEDDED_SQLITE_URL, SqlStateStore  # SQLAlchemy: on use

        return SqlStateStore(EMBEDDED_SQLITE_URL)

    # -- worker signals (``eventbus restart``, ``down``, ``up``) --------------------------------
    def signals(self) -> dict[str, float]:
        """Signals every worker of this connection reads: ``restart`` stamp, ``down`` flag."""
        return {}

    def set_signal(self, name: str, value: float | None) -> bool:
        """Set (or with None, clear) a worker signal; False when no worker can be using this
        connection (so nothing was written)."""
        raise NotImplementedError(f"the {self.driver} driver has no workers to signal")

    # -- pushing from an event loop (``await eventbus.adispatch(...)``) -------------------------
    # The default runs the sync push on a worker thread: correct for every driver and never
    # blocks the loop, at the price of a thread hop per call. A driver with an async client
    # overrides these three (Redis: redis.asyncio, see eventbus.queue.redis.aio).
    async def apush(self, payload: Payload, queue: str | None = None) -> str:
        """:meth:`push` for a caller on an event loop: the loop keeps running meanwhile."""
        import asyncio
        return await asyncio.to_thread(self.push, payload, queue)

    async def alater(self, delay: Delay, payload: Payload, queue: str | None = None) -> str:
        """:meth:`later` for a caller on an event loop."""
        import asyncio
        return await asyncio.to_thread(self.later, delay, payload, queue)

    async def abulk(self, payloads: Iterable[Payload], queue: str | None = None) -> list[str]:
        """:meth:`bulk` for a caller on an event loop."""
        import asyncio
        return await asyncio.to_thread(self.bulk, list(payloads), queue)


#: Bad worker signal values warned about, once per process (below the runtime, which imports it).
_warned_signals: set[tuple[str, str]] = set()


def parse_signals(raw: Iterable[tuple[Any, Any]], connection: str) -> dict[str, float]:
    """Signal values as stored (text or bytes) -> seconds; a bad value is ignored with a warning.

    Anyone who can write to the queue's store can write there too: one bad value must not stop
    every worker from starting.
    """
    out: dict[str, float] = {}
    for name, value in raw:
        key = name.decode("utf-8", "replace") if isinstance(name, bytes) else str(name)
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
        try:
            number = float(text)
        except ValueError:
            number = math.nan
        if math.isfinite(number):
            out[key] = number
        elif (key, text) not in _warned_signals:
            _warned_signals.add((key, text))
            log.warning("ignoring worker signal %r on connection %r: %r is not a time", key,
                        connection, text[:40])
    return out


def id_for(raw: str) -> str:
    """A payload's own uuid when it has one; otherwise a fresh id (text that is not JSON)."""
    return uuid_of(raw) or str(uuid_module.uuid4())
