"""The beanstalkd driver: one tube per queue, over greenstalk (``pip install 'eventbus[beanstalkd]'``).

Connection: ``{"driver": "beanstalkd", "url": "beanstalk://127.0.0.1:11300"}``. The protocol does
the work (Laravel's ``BeanstalkdQueue``, with the traps the protocol sets):

- **push**: ``use <queue>`` then ``put`` with the connection's ``priority`` (1024, Laravel's), the
  delay and TTR = ``retry_after``. Delays, TTR and waits are whole seconds on the wire: a delay is
  rounded *up*, so a job never runs early (it may run up to a second late).
- **pop**: ``watch`` that tube alone, then ``reserve-with-timeout 0``. The worker's idle wait is
  one blocking ``reserve-with-timeout`` over all its tubes (no polling); the job it reserves is
  handed to the next pop, before any other queue is tried (it is the job that arrived first).
- **attempts** = the payload's count + the job's ``reserves`` (``stats-job``), as Laravel's
  ``BeanstalkdJob::attempts()`` does. Not ``releases``: a reservation that ended because its TTR
  ran out or its worker died (``kill -9``) is an attempt too, and only ``reserves`` counts it; a
  job that kills its worker would otherwise come back forever. A release that gives its attempt
  back (a lock or a limit said "not now") puts a copy whose body counts one attempt fewer, then
  deletes the original (the server cannot forget a reserve).
- **reservations are bound to the TCP connection** that reserved the job: ``release``, ``touch``
  and ``delete`` of a reserved job from any other connection get ``NOT_FOUND``, and when that
  connection closes (a worker killed with ``-9``) the server makes its jobs ready at once. That is
  the fence against a stale worker in another process. Inside one process the reservation token
  of :class:`~eventbus.queue.base.QueueJob` is the fence. One hole remains: ``delete`` works from
  any connection on a *ready* job, so a worker whose TTR ran out could delete the job after it went
  back to ready; a delete that comes later than ``retry_after`` minus a second therefore first
  asks ``stats-job`` whether the job is still reserved.
- **TTR expiry is unreliable in beanstalkd 1.12** (the Debian package): a connection can drop out
  of the server's timer heap (upstream pull request #334), and its expired reservations are then
  handed back only when that connection next sends a command or closes. So a job comes back at
  once when its worker dies (the connection closes), but a worker that is frozen with its
  connection open keeps its job until it dies; run workers with a ``--timeout`` (the worker exits
  when a job will not stop) under a supervisor. Before a late delete, and before a pop while it
  holds a reservation that may have expired, the driver sends one harmless command
  (``list-tube-used``) so that the server looks at its own expired reservations first.
- **persistence**: the server holds its jobs in memory; only with a binlog (``beanstalkd -b
  <dir>``) does a restart or ``kill -9`` keep them (without one, a kill lost every queued job in
  the chaos suite). A worker warns at start when the server keeps no binlog.
- **failed** jobs are deleted and recorded in the failed store like everywhere else; nothing is
  ever buried (``size`` ignores buried jobs someone else made).
- **size** and **stats** come from ``stats-tube`` (ready + delayed + reserved; a tube the server
  does not know holds nothing). **clear** deletes the ready and delayed jobs it can peek at;
  a job a worker reserves meanwhile is skipped. **peek** walks job ids upward from the first
  ready job (``peek-ready`` shows only one), so ``limit`` is best effort (the walk is bounded).
- **not idempotent by uuid**: beanstalkd keeps no index by anything but its own ids, so pushing
  the same payload twice stores two jobs.
- **size limit**: a job body may not exceed the server's ``max-job-size`` (``beanstalkd -z``,
  65,535 bytes by default); a bigger push raises :class:`EventBusError` naming both sizes.
- **queue names** are tube names: at most 200 bytes of ``A-Z a-z 0-9 - + / ; . $ _ ( )``, not
  starting with ``-`` (no ``:``). Names starting with ``eventbus.`` are this driver's own: worker
  signals (``eventbus.signals.<default queue>``, one ready job holding them as JSON) and the
  ``max_exceptions`` counters (``eventbus.exceptions.<hash of the uuid>``, one job per exception;
  removed when the job fails or, for a job that declares ``max_exceptions``, is deleted).

One connection pushes and inspects, another reserves; each is used by one thread at a time. A
call interrupted half-way (a job's timeout firing inside it) closes its connection, since the
replies are then out of step; for the reserving connection that hands its jobs back to the server.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import re
import socket
import threading
import time
import uuid as uuid_module
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from eventbus.errors import (
    ConfigurationError,
    ConnectionUnavailableError,
    DeserializationError,
    EventBusError,
    MissingDependencyError,
)
from eventbus.payload import Payload, attempts_of, parse_document, pushed_at_of, uuid_of, with_attempts
from eventbus.queue.base import Delay, Queue, QueueJob, QueueStats, delay_seconds, parse_signals
from eventbus.queue.capabilities import GivesBackAttempts, Peekable, ReportsWait, WorkerSignals
from eventbus.urls import redact_url

try:  # one small module; the driver class must import without it (the driver table imports it)
    import greenstalk
except ImportError:  # pragma: no cover - exercised by monkeypatching in the tests
    greenstalk = None  # type: ignore[assignment]

DEFAULT_PORT = 11300
MAX_TUBE_BYTES = 200
TUBE_NAME = re.compile(r"[A-Za-z0-9+/;.$_()][A-Za-z0-9\-+/;.$_()]{0,199}")
OWN_PREFIX = "eventbus."
#: The last second of a TTR, in which the server answers DEADLINE_SOON (its SAFETY_MARGIN).
SAFETY_MARGIN_S = 1.0
#: ``peek`` looks at no more job ids than this per call (50 per wanted job, at least 500).
PEEK_PROBES_PER_JOB = 50
CONNECT_TIMEOUT_S = 5.0
IO_TIMEOUT_S = 10.0
SIGNALS_FIRST_PRIORITY = 2**31
#: The longest delay the protocol carries (an unsigned 32-bit number of seconds, 136 years).
MAX_DELAY_S = 2**32 - 1


def whole_seconds(seconds: float) -> int:
    """beanstalkd counts in whole seconds: round up (a job must not run early), never below 0."""
    return max(math.ceil(round(seconds, 6)), 0)


def _count(value: Any, default: int) -> int:
    """A whole number the server reported (``stats-job``), or ``default`` when it is not one."""
    text = str(value)
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 10 else default


def check_tube(name: str, connection: str) -> str:
    """``name`` if beanstalkd accepts it as a tube; ConfigurationError saying why not."""
    problem = None
    if not isinstance(name, str) or not name.isascii() or not TUBE_NAME.fullmatch(name):
        problem = (f"a tube name is 1 to {MAX_TUBE_BYTES} characters of A-Z a-z 0-9 - + / ; . $ _ ( ), "
                   "not starting with '-'")
    elif name.startswith(OWN_PREFIX):
        problem = f"names starting with {OWN_PREFIX!r} are kept for the driver's signals and counters"
    if problem:
        raise ConfigurationError(f"queue {name!r} cannot be used on beanstalkd connection "
                                 f"{connection!r}: {problem}", queue=str(name), connection=connection)
    return name


def _own_tube(kind: str, name: str) -> str:
    tube = f"{OWN_PREFIX}{kind}.{name}"
    if len(tube) > MAX_TUBE_BYTES:
        tube = f"{OWN_PREFIX}{kind}.{hashlib.sha256(name.encode()).hexdigest()[:40]}"
    return tube


@dataclasses.dataclass
class _Reservation:
    """What this process knows of a job it reserved: its token and when the TTR clock started."""

    token: str
    since: float
    job: QueueJob


class _Link:
    """One TCP connection to beanstalkd, for one thread at a time; reopened after a failure.

    It remembers the tube it uses and the tubes it watches, so a pop costs no extra round trip
    when the worker's queues have not changed.
    """

    def __init__(self, queue: BeanstalkdQueue, io_timeout_s: float,
                 on_drop: Callable[[], None] = lambda: None) -> None:
        self.queue = queue
        self.io_timeout_s = io_timeout_s
        self.on_drop = on_drop
        self.client: greenstalk.Client[bytes] | None = None
        self.using = "default"
        self.watching: set[str] = {"default"}
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def session(self, action: str) -> Iterator[greenstalk.Client[bytes]]:
        """The connected client; a lost connection becomes ConnectionUnavailableError."""
        if not self._lock.acquire(timeout=self.io_timeout_s + 5):
            raise self.queue.unavailable(action, "the connection stayed busy")
        try:
            try:
                yield self.client or self._connect()
            except (greenstalk.UnknownResponseError, greenstalk.BadFormatError,
                    greenstalk.UnknownCommandError, greenstalk.ExpectedCrlfError):
                # the server did not take the command as sent: it may read what followed it (a
                # job's body) as commands of their own, whose answers would be taken for the
                # answers of the next ones
                self.drop()
                raise
            except greenstalk.Error:
                raise  # an answer of the protocol: the stream is still in step
            except OSError as exc:  # refused, reset, timed out (TimeoutError is an OSError)
                self.drop()
                raise self.queue.unavailable(action, exc) from exc
            except BaseException:  # interrupted between a command and its reply
                self.drop()
                raise
        finally:
            self._lock.release()

    def _connect(self) -> greenstalk.Client[bytes]:
        sock = socket.create_connection(self.queue.address, timeout=CONNECT_TIMEOUT_S)
        try:
            sock.settimeout(self.io_timeout_s)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
            self.client = greenstalk.Client(sock, encoding=None)
        except BaseException:
            sock.close()
            raise
        self.using, self.watching = "default", {"default"}
        return self.client

    def use(self, client: greenstalk.Client[bytes], tube: str) -> None:
        if self.using != tube:
            client.use(tube)
            self.using = tube

    def watch_only(self, client: greenstalk.Client[bytes], tubes: Iterable[str]) -> None:
        wanted = set(tubes)
        for tube in sorted(wanted - self.watching):  # watch first: the last tube cannot be ignored
            client.watch(tube)
            self.watching.add(tube)
        for tube in sorted(self.watching - wanted):
            client.ignore(tube)
            self.watching.discard(tube)

    def drop(self) -> None:
        """Close the connection (the server hands back the jobs it had reserved)."""
        client, self.client = self.client, None
        if client is not None:
            with contextlib.suppress(OSError):
                client.close()
        self.on_drop()


class BeanstalkdQueue(Queue, Peekable, ReportsWait, GivesBackAttempts, WorkerSignals):
    driver = "beanstalkd"
    not_cancellable_because = ("beanstalkd finds a job only by its own numeric id and keeps no "
                               "index by uuid; finding one would mean walking every job id")
    defaults = {"queue": "default", "retry_after": 90.0, "block_for": 5.0, "priority": 1024}
    example_url = "beanstalk://127.0.0.1:11300"
    url_schemes = ("beanstalk",)
    holds_reservations = True
    idempotent_push = False
    delay_granularity_s = 1.0

    @classmethod
    def validate_config(cls, name: str, config: Mapping[str, Any]) -> dict[str, Any]:
        merged = super().validate_config(name, config)
        priority = merged["priority"]
        if isinstance(priority, bool) or not isinstance(priority, int) or not 0 <= priority < 2**32:
            raise ConfigurationError(f"connection {name!r}: 'priority' must be an integer from 0 "
                                     "(most urgent) to 4294967295", connection=name)
        check_tube(str(merged["queue"]), name)
        return merged

    def __init__(self, connection_name: str, config: Mapping[str, Any]) -> None:
        super().__init__(connection_name, config)
        if greenstalk is None:
            raise MissingDependencyError(
                f"connection {connection_name!r} uses the beanstalkd driver, which needs greenstalk: "
                "pip install 'eventbus[beanstalkd]'", connection=connection_name)
        self.url: str = config["url"]
        parts = urlsplit(self.url)
        self.address = (parts.hostname or "127.0.0.1", parts.port or DEFAULT_PORT)
        self.ttr = max(whole_seconds(self.retry_after), 1)
        self.block_for = float(config.get("block_for", 5.0) or 0.0)
        self.priority = int(config.get("priority", 1024))
        self._held: dict[int, _Reservation] = {}
        self._stash: QueueJob | None = None
        self._tubes: set[str] = set()
        self.producer = _Link(self, IO_TIMEOUT_S)
        self.consumer = _Link(self, max(self.block_for, 1.0) + IO_TIMEOUT_S,
                              on_drop=self._reservations_lost)

    def unavailable(self, action: str, why: object) -> ConnectionUnavailableError:
        return ConnectionUnavailableError(
            f"cannot reach beanstalkd at {redact_url(self.url)} for connection "
            f"{self.connection_name!r} ({action}): {why}", connection=self.connection_name)

    def _tube(self, queue: str | None) -> str:
        name = self.queue_name(queue)
        if name not in self._tubes:
            self._tubes.add(check_tube(name, self.connection_name))
        return name

    def _fresh_uuid(self, tube: str, job_id: int) -> str:
        """The id of a body that has no uuid of its own: the same for every pop of that job."""
        return str(uuid_module.uuid5(uuid_module.NAMESPACE_URL,
                                     f"{redact_url(self.url)}/{tube}/{job_id}"))

    # -- pushing ------------------------------------------------------------------------------
    def push(self, payload: Payload, queue: str | None = None) -> str:
        self._put([payload.to_json()], queue, 0.0, payload.uuid)
        return payload.uuid

    def later(self, delay: Delay, payload: Payload, queue: str | None = None) -> str:
        self._put([payload.to_json()], queue, delay_seconds(delay), payload.uuid)
        return payload.uuid

    def push_raw(self, payload: str, queue: str | None = None, *, delay: float = 0.0) -> str:
        own = uuid_of(payload)
        [job_id] = self._put([payload], queue, delay, own)
        return own or self._fresh_uuid(self._tube(queue), job_id)

    def bulk(self, payloads: Iterable[Payload], queue: str | None = None) -> list[str]:
        """One ``put`` per job on one connection (the protocol has no batch command)."""
        items = list(payloads)
        for start in range(0, len(items), 500):
            chunk = items[start:start + 500]
            self._put([p.to_json() for p in chunk], queue, 0.0, None)
        return [p.uuid for p in items]

    def _put(self, bodies: list[str], queue: str | None, delay: float, uuid: str | None) -> list[int]:
        tube = self._tube(queue)
        seconds = whole_seconds(delay_seconds(delay))
        if seconds > MAX_DELAY_S:
            raise EventBusError(f"beanstalkd delays a job by at most {MAX_DELAY_S} seconds; this job "
                                f"asked for {delay:g}s", job_uuid=uuid, queue=tube,
                                connection=self.connection_name)
        ids = []
        with self.producer.session("push") as client:
            self.producer.use(client, tube)
            for text in bodies:
                body = text.encode("utf-8", "surrogateescape")
                try:
                    ids.append(client.put(body, self.priority, seconds, self.ttr))
                except greenstalk.JobTooBigError:
                    limit = client.stats()["max-job-size"]
                    raise EventBusError(
                        f"job {uuid_of(text) or uuid or '(no uuid)'} is {len(body)} bytes; beanstalkd "
                        f"at {redact_url(self.url)} accepts at most {limit} bytes per job (its -z "
                        "option): keep large data elsewhere and queue a reference to it",
                        job_uuid=uuid_of(text), queue=tube, connection=self.connection_name) from None
        return ids

    # -- popping ------------------------------------------------------------------------------
    def pop(self, queue: str | None = None) -> QueueJob | None:
        name = self._tube(queue)
        handled, stashed = self._take_stash(name)
        if handled:
            return stashed
        with self.consumer.session("pop") as client:
            if any(self._may_have_expired(held) for held in self._held.values()):
                client.using()  # let the server hand back what expired (see the module docstring)
            self.consumer.watch_only(client, [name])
            since = time.monotonic()
            try:
                job = client.reserve(0)
            except (greenstalk.TimedOutError, greenstalk.DeadlineSoonError):
                return None
            reserves = client.stats_job(job.id)["reserves"]
        return self._reserved(name, job, reserves, since)

    def _take_stash(self, name: str) -> tuple[bool, QueueJob | None]:
        """What ``pop(name)`` answers from the job the idle wait reserved: ``(True, job)`` for its
        queue, ``(True, None)`` for the worker's other queues (the stashed job arrived first, so it
        goes first), ``(False, None)`` when there is none (or its TTR ran out: the server has it)."""
        stash = self._stash
        if stash is None:
            return False, None
        held = self._held.get(int(stash.job_id))
        if held is None or held.job is not stash or self._may_have_expired(held):
            self._stash = None
            return False, None
        if stash.queue_name != name:
            return True, None
        self._stash = None
        return True, stash

    def _reserved(self, tube: str, job: greenstalk.Job[bytes], reserves: int, since: float) -> QueueJob:
        raw = job.body.decode("utf-8", "surrogateescape")
        token = uuid_module.uuid4().hex
        queue_job = QueueJob(queue=self, queue_name=tube, job_id=str(job.id), raw=raw,
                             attempts=attempts_of(raw) + _count(reserves, 1), token=token,
                             stored_uuid=self._fresh_uuid(tube, job.id))
        now = time.monotonic()  # forget reservations the server has surely taken back
        for stale in [i for i, held in self._held.items() if now - held.since > self.ttr]:
            del self._held[stale]
        self._held[job.id] = _Reservation(token, since, queue_job)
        return queue_job

    def wait(self, queues: Sequence[str], timeout: float) -> None:
        """Block in ``reserve-with-timeout`` over every queue until a job is ready or ``timeout``
        (at most ``block_for``; whole seconds). The job it reserves goes to the next pop."""
        if timeout <= 0 or self._stash is not None:
            return
        if self.block_for <= 0:
            time.sleep(timeout)
            return
        tubes = [self._tube(q) for q in queues]
        with self.consumer.session("wait") as client:
            self.consumer.watch_only(client, tubes)
            since = time.monotonic()
            try:
                job = client.reserve(max(whole_seconds(min(timeout, self.block_for)), 1))
            except greenstalk.TimedOutError:
                return
            except greenstalk.DeadlineSoonError:  # this connection holds a job about to expire
                time.sleep(min(timeout, SAFETY_MARGIN_S))
                return
            stats = client.stats_job(job.id)
        self._stash = self._reserved(str(stats["tube"]), job, stats["reserves"], since)

    # -- finishing a reserved job -------------------------------------------------------------
    def _holding(self, job: QueueJob) -> _Reservation | None:
        held = self._held.get(int(job.job_id))
        return held if held is not None and held.token == job.token else None

    def _let_go(self, job: QueueJob) -> None:
        self._held.pop(int(job.job_id), None)
        if self._stash is job:
            self._stash = None

    def _may_have_expired(self, held: _Reservation) -> bool:
        return time.monotonic() - held.since >= self.ttr - SAFETY_MARGIN_S

    def delete_reserved(self, job: QueueJob) -> bool:
        if not self._delete_held(job):
            return False
        self._forget_counter_of(job)
        return True

    def _delete_held(self, job: QueueJob) -> bool:
        """Delete ``job`` while this worker still holds it (its exception counter stays)."""
        held = self._holding(job)
        if held is None:
            return False
        job_id = int(job.job_id)
        with self.consumer.session("delete") as client:
            try:
                if self._may_have_expired(held):
                    client.using()  # first let the server hand back what expired, then look
                    if client.stats_job(job_id)["state"] != "reserved":
                        self._let_go(job)
                        return False  # back in ready or delayed: no longer this worker's to delete
                client.delete(job_id)
            except greenstalk.NotFoundError:  # reserved by another connection, or gone
                self._let_go(job)
                return False
        self._let_go(job)
        return True

    def release_reserved(self, job: QueueJob, delay: float) -> bool:
        if self._holding(job) is None:
            return False
        with self.consumer.session("release") as client:
            try:
                client.release(greenstalk.Job(int(job.job_id), b""), self.priority,
                               min(whole_seconds(delay), MAX_DELAY_S))
            except greenstalk.NotFoundError:
                self._let_go(job)
                return False
        self._let_go(job)
        return True

    def release_uncounted(self, job: QueueJob, delay: float) -> bool:
        """Put the job back as a copy whose body counts one attempt fewer, then delete the
        original: beanstalkd counts reserves itself and can neither forget one nor change a
        job's body. The copy is complete when it appears, so no worker can reserve the job with
        an attempt too many; it goes to the back of its tube. A worker killed between the two
        steps leaves both (the job may run twice, never zero times); a reservation lost
        meanwhile deletes the copy again where it still can.
        """
        if self._holding(job) is None:
            return False
        try:
            body = with_attempts(job.raw, max(job.attempts - 1, 0))
        except ValueError:  # not a JSON object: nothing to count in, release it as it is
            return self.release_reserved(job, delay)
        [copy] = self._put([body], job.queue_name, delay, job.uuid)
        if self._delete_held(job):
            return True
        with self.producer.session("release") as client, contextlib.suppress(greenstalk.NotFoundError):
            client.delete(copy)  # reserved by someone already: the job runs twice, at worst
        return False

    def touch_reserved(self, job: QueueJob) -> bool:
        """``touch``: the TTR starts again, so a long job keeps its reservation."""
        held = self._holding(job)
        if held is None:
            return False
        with self.consumer.session("touch") as client:
            since = time.monotonic()
            try:
                client.touch(greenstalk.Job(int(job.job_id), b""))
            except greenstalk.NotFoundError:
                self._let_go(job)
                return False
        held.since = since
        return True

    def _reservations_lost(self) -> None:
        """The reserving connection closed: the server took every reservation back."""
        self._held.clear()
        self._stash = None

    # -- inspection ---------------------------------------------------------------------------
    def _tube_stats(self, client: greenstalk.Client[bytes], tube: str) -> Mapping[str, Any] | None:
        try:
            return client.stats_tube(tube)
        except greenstalk.NotFoundError:  # the server forgets an empty tube nobody uses
            return None

    def size(self, queue: str | None = None) -> int:
        return self.stats(queue).size

    def stats(self, queue: str | None = None) -> QueueStats:
        name = self._tube(queue)
        with self.producer.session("stats") as client:
            found = self._tube_stats(client, name)
            if found is None:
                return QueueStats(name, 0, 0, 0)
            body = None
            if found["current-jobs-ready"]:
                self.producer.use(client, name)
                with contextlib.suppress(greenstalk.NotFoundError):
                    body = client.peek_ready().body
        pushed = pushed_at_of(body.decode("utf-8", "replace")) if body else None
        return QueueStats(name, int(found["current-jobs-ready"]), int(found["current-jobs-delayed"]),
                          int(found["current-jobs-reserved"]),
                          max(time.time() - pushed, 0.0) if pushed else None)

    def queues(self) -> list[str]:
        """Every tube that holds ready, delayed or reserved jobs (the driver's own excepted)."""
        found = []
        with self.producer.session("list queues") as client:
            for tube in client.tubes():
                stats = None if tube.startswith(OWN_PREFIX) else self._tube_stats(client, tube)
                if stats and sum(stats[f"current-jobs-{s}"] for s in ("ready", "delayed", "reserved")):
                    found.append(tube)
        return sorted(found)

    def clear(self, queue: str | None = None) -> int:
        name = self._tube(queue)
        with self.producer.session("clear") as client:
            stats = self._tube_stats(client, name)
            if stats is None:
                return 0
            self.producer.use(client, name)
            budget = stats["current-jobs-ready"] + stats["current-jobs-delayed"] + 100
            return self._delete_peeked(client, (client.peek_ready, client.peek_delayed), budget)

    @staticmethod
    def _delete_peeked(client: greenstalk.Client[bytes],
                       peekers: Iterable[Callable[[], greenstalk.Job[bytes]]], budget: int) -> int:
        """Delete what each peek shows until it shows nothing (or ``budget`` peeks were made)."""
        deleted = 0
        for peek in peekers:
            while budget > 0:
                budget -= 1
                try:
                    job = peek()
                except greenstalk.NotFoundError:
                    break
                try:
                    client.delete(job.id)
                    deleted += 1
                except greenstalk.NotFoundError:  # a worker reserved it in between: not ours
                    continue
        return deleted

    def peek(self, queue: str | None = None, limit: int = 10) -> list[str]:
        """Ready jobs in the order workers get them. ``peek-ready`` shows the first; the others
        are found by walking job ids upward (``stats-job``), at most 50 ids per wanted job."""
        name = self._tube(queue)
        if limit <= 0:
            return []
        with self.producer.session("peek") as client:
            self.producer.use(client, name)
            try:
                first = client.peek_ready()
            except greenstalk.NotFoundError:
                return []
            stats = self._tube_stats(client, name)
            wanted = min(limit, int(stats["current-jobs-ready"]) if stats else 1)
            found = [(0, first.id, first.body)]
            job_id = first.id
            for _ in range(max(500, PEEK_PROBES_PER_JOB * wanted)):
                if len(found) >= wanted:
                    break
                job_id += 1
                try:
                    job_stats = client.stats_job(job_id)
                    if job_stats["tube"] == name and job_stats["state"] == "ready":
                        found.append((job_stats["pri"], job_id, client.peek(job_id).body))
                except greenstalk.NotFoundError:
                    continue
        found[1:] = sorted(found[1:])
        return [body.decode("utf-8", "surrogateescape") for _, _, body in found]

    # -- worker support: max_exceptions counters and signals, kept in beanstalkd itself --------
    def _counter_tube(self, uuid: str) -> str:
        return f"{OWN_PREFIX}exceptions.{hashlib.sha256(uuid.encode()).hexdigest()[:40]}"

    def record_exception(self, uuid: str) -> int:
        """One more ready job in the job's counter tube; the count is that tube's ready jobs."""
        tube = self._counter_tube(uuid)
        with self.producer.session("record exception") as client:
            self.producer.use(client, tube)
            client.put(b"1", 0, 0, 1)
            return int(client.stats_tube(tube)["current-jobs-ready"])

    def forget_exceptions(self, uuid: str) -> None:
        with self.producer.session("forget exceptions") as client:
            self.producer.use(client, self._counter_tube(uuid))
            self._delete_peeked(client, [client.peek_ready], 10_000)

    def _forget_counter_of(self, job: QueueJob) -> None:
        """A deleted job that counts its exceptions leaves no counter behind."""
        try:
            counts = job.payload().max_exceptions is not None
        except EventBusError:
            return
        if counts:
            self.forget_exceptions(job.uuid)

    @property
    def signal_tube(self) -> str:
        """Signals are kept per default queue: apps sharing a server with their own default
        queue neither see nor send each other's."""
        return _own_tube("signals", self.default_queue)

    def _read_signals(self, client: greenstalk.Client[bytes]) -> tuple[dict[str, Any], Any]:
        self.producer.use(client, self.signal_tube)
        try:
            job = client.peek_ready()
        except greenstalk.NotFoundError:
            return {}, None
        try:  # anyone who can put a job here can put anything: a bad document is no signals
            doc: Any = parse_document(job.body)
        except DeserializationError:
            doc = {}
        return doc, job

    def signals(self) -> dict[str, float]:
        with self.producer.session("signal check") as client:
            doc, _ = self._read_signals(client)
        return parse_signals(doc.items(), self.connection_name)

    def set_signal(self, name: str, value: float | None) -> bool:
        """Put the new signal document ahead of the old one (a lower priority number), then
        delete the old one, so a worker reading in between sees one or the other."""
        with self.producer.session("signal") as client:
            doc, old = self._read_signals(client)
            priority = SIGNALS_FIRST_PRIORITY
            if old is not None:
                priority = max(_count(client.stats_job(old.id).get("pri"), SIGNALS_FIRST_PRIORITY) - 1, 0)
            doc.pop(name, None)
            if value is not None:
                doc[name] = value
            if doc:
                client.put(json.dumps(doc).encode(), priority, 0, 1)
            if old is not None:
                with contextlib.suppress(greenstalk.NotFoundError):
                    client.delete(old.id)
        return True

    def ping(self) -> None:
        with self.consumer.session("connect"):
            pass

    def startup_warnings(self) -> list[str]:
        """A warning when the server keeps no binlog (``beanstalkd -b``): it holds its jobs in
        memory only, and a restart or a crash of the server loses every one of them."""
        try:
            with self.producer.session("persistence check") as client:
                binlog = int(client.stats().get("binlog-current-index", 0))
        except (ConnectionUnavailableError, greenstalk.Error, ValueError):
            return []
        if binlog > 0:
            return []
        return [f"beanstalkd at {redact_url(self.url)} (connection {self.connection_name!r}) runs without a "
                "binlog (no -b): a restart of the server loses every queued job. Start it with -b <dir> "
                "(and -f <ms> to bound what a power cut takes)."]

    def close(self) -> None:
        self.producer.drop()
        self.consumer.drop()
