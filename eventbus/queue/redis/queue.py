"""The Redis driver: Laravel's design with the fixes the field learned the hard way.

Keys of one queue share the hash tag ``{name}`` so they live in one cluster slot::

    queues:{default}            list of ready job ids (push appends, pop takes the head)
    queues:{default}:delayed    sorted set id -> due time
    queues:{default}:reserved   sorted set id -> reservation expiry
    queues:{default}:notify     list of wake-up tokens for blocking pops
    queues:{default}:bodies     hash id -> payload, packed (redis.bodies; never decoded inside Lua)
    queues:{default}:attempts   hash id -> live attempt count
    queues:{default}:tokens     hash id -> token of the current reservation
    queues:{default}:failing    hash id -> failure kept while its record could not be written
    queues:{default}:failed     failed job records of this queue (hash uuid -> record JSON) and
    queues:{default}:failed:index   their failure times, when the failed store is this Redis

Every score comes from the server clock (``TIME`` inside the scripts). The client never retries a
script on its own: push is idempotent by id and retried here; a lost pop reply leaves a reservation
that expires and comes back (at-least-once), to the head of the ready list.

Two clients: commands (pop, acknowledgements, pushes) time out after ``COMMAND_TIMEOUT_S``, so a
stalled server cannot hold a worker for long; only the blocking wait (``BLPOP``) uses a socket
timeout longer than ``block_for``.

The driver keeps every acknowledged job only as long as the server does: without the
append-only file (``appendonly yes``) a restart loses them all, and a worker says so when it
starts (:meth:`RedisQueue.startup_warnings`).
"""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from importlib import resources
from typing import Any, TypeVar

import redis

from eventbus.errors import ConfigurationError, ConnectionUnavailableError, NotReplicatedError
from eventbus.payload import Payload, attempts_of, pushed_at_of
from eventbus.queue.base import (
    Cancellation,
    JobState,
    Queue,
    QueuedJob,
    QueueJob,
    QueueStats,
    Reserved,
    delay_seconds,
    id_for,
    parse_signals,
)
from eventbus.queue.capabilities import (
    AsyncPush,
    BatchesReservations,
    Cancellable,
    GivesBackAttempts,
    Peekable,
    ReportsWait,
    WorkerSignals,
)
from eventbus.queue.redis import bodies as redis_bodies
from eventbus.queue.redis import cluster_wait as redis_cluster_wait
from eventbus.queue.redis import replication as redis_replication
from eventbus.queue.redis import topology as redis_topology
from eventbus.queue.redis import wire as redis_wire
from eventbus.queue.redis.aio import AsyncPusher
from eventbus.queue.redis.errors import LOST_CONNECTION, unavailable
from eventbus.state.redis import RedisStateStore
from eventbus.urls import redact_url

T = TypeVar("T")
BULK_CHUNK = 500
#: Jobs per ``push_many`` call when a bulk push is streamed over the hot path (see ``_stream_bulk``).
STREAM_CHUNK = 100
#: Socket timeout of every command but the blocking wait: Redis answers in milliseconds, and an
#: acknowledgement must give up on a stalled server long before a reservation expires.
COMMAND_TIMEOUT_S = 5.0
#: How long the "next due" of an empty reserve stands in for asking again before a wait.
DUE_HINT_S = 0.05


#: The queue's scripts (``eventbus/queue/lua``; the failed store's are there too).
QUEUE_SCRIPTS = ("push", "push_many", "reserve", "delete", "release", "clear", "peek",
                 "count_exception", "hold_failure", "fail", "find", "cancel", "list_jobs")


@functools.cache
def script_source(name: str) -> str:
    """A script's source, read once per process (and inherited by forked workers: see
    :meth:`RedisQueue.prepare_fork`)."""
    return resources.files("eventbus.queue").joinpath(f"lua/{name}.lua").read_text()


def client_for(url: str, *, socket_timeout: float | None = COMMAND_TIMEOUT_S, name: str = "eventbus",
               cluster: bool = False) -> Any:
    """A client for the server, cluster or Sentinel-watched master of ``url`` (see
    :mod:`eventbus.queue.redis.topology`) that never retries on its own (a blind retry of a
    script is not safe).

    Its connections carry ``name`` (``CLIENT LIST`` shows which belong to eventbus). ``cluster``
    makes a plain ``redis://`` URL a cluster's seed. On a cluster every script touches the keys
    of one queue only, and they share a hash slot. Building a cluster's client asks its seeds for
    the layout: when none answers this raises one of ``LOST_CONNECTION``.
    """
    return redis_topology.sync_client(redis_topology.parse(url, cluster=cluster),
                                      socket_timeout=socket_timeout, name=name)


def _glob_escape(text: str) -> str:
    return "".join(f"\\{c}" if c in "*?[]\\" else c for c in text)


def _age_of(body: bytes | None) -> float | None:
    """Seconds since a stored payload was pushed (its ``pushedAt``), when it says."""
    if not body:
        return None
    pushed = pushed_at_of(_text(body))
    return max(time.time() - pushed, 0.0) if pushed else None


def _text(body: bytes) -> str:
    """The payload text of a stored body (:mod:`eventbus.queue.redis.bodies`)."""
    return redis_bodies.unpack(body.decode("utf-8", "surrogateescape"))


def load_script(client: Any, name: str) -> Any:
    return client.register_script(script_source(name))


class RedisQueue(Queue, Peekable, ReportsWait, Cancellable, BatchesReservations, GivesBackAttempts,
                 WorkerSignals, AsyncPush):
    driver = "redis"
    defaults = {"queue": "default", "retry_after": 90.0, "block_for": 5.0, "prefix": "queues:",
                "migration_batch_size": 100, "cluster": False, "wait_replicas": 0, "wait_timeout": 1.0,
                "compact_bodies": True}
    example_url = "redis://127.0.0.1:6379/0"
    url_schemes = tuple(redis_topology.SCHEMES)
    holds_reservations = True

    @classmethod
    def validate_config(cls, name: str, config: Mapping[str, Any]) -> dict[str, Any]:
        """Besides the common checks: the URL names a server, a cluster's seeds, or sentinels and
        a service (:mod:`eventbus.queue.redis.topology`), said in one sentence when it does not."""
        url = config.get("url")
        if not isinstance(url, str) or "://" not in url:
            return super().validate_config(name, config)
        try:
            topology = redis_topology.parse(url, cluster=bool(config.get("cluster")))
        except ValueError as exc:
            raise ConfigurationError(f"connection {name!r} has a bad {cls.driver} URL {redact_url(url)!r}: {exc}",
                                     connection=name) from None
        # the common checks read one host and port: they get the first one, the URL stays as given
        merged = super().validate_config(name, {**config, "url": topology.url})
        merged["url"] = url
        if not isinstance(merged["compact_bodies"], bool):
            raise ConfigurationError(f"connection {name!r}: 'compact_bodies' must be true or false, not "
                                     f"{merged['compact_bodies']!r}", connection=name)
        redis_replication.check_options(name, merged, topology, socket_timeout_s=COMMAND_TIMEOUT_S)
        return merged

    @classmethod
    def failed_store_url(cls, config: Mapping[str, Any]) -> str | None:
        """Failed jobs live in the same Redis (on a cluster: beside each queue, see failed.redis)."""
        url = str(config["url"])
        if config.get("cluster") and redis_topology.parse(url).kind == redis_topology.SERVER:
            return f"{url}{'&' if '?' in url else '?'}cluster=1"
        return url

    @classmethod
    def failed_scope(cls, config: Mapping[str, Any]) -> dict[str, str]:
        """Failed jobs of this app live under its prefix, as its queues, state and signals do."""
        return {"prefix": str(config.get("prefix") or "queues:")}

    def __init__(self, connection_name: str, config: Mapping[str, Any]) -> None:
        super().__init__(connection_name, config)
        self.url: str = config["url"]
        self.prefix: str = config.get("prefix", "queues:")
        self.block_for: float = float(config.get("block_for", 5.0) or 0.0)
        self.batch: int = int(config.get("migration_batch_size", 100))
        self.topology = redis_topology.parse(self.url, cluster=bool(config.get("cluster", False)))
        self.cluster = self.topology.cluster
        #: After each push, WAIT for this many replicas (0: don't), at most wait_timeout seconds.
        self.wait_replicas = int(config.get("wait_replicas", 0) or 0)
        self.wait_timeout_ms = int(float(config.get("wait_timeout", 1.0)) * 1000)
        #: Bodies stored packed (``bodies.pack``, half the memory) or as the payload's JSON.
        self.compact_bodies = bool(config.get("compact_bodies", True))
        self._body: Callable[[Payload], str] = redis_bodies.pack if self.compact_bodies else Payload.to_json
        self.redis = self._client(COMMAND_TIMEOUT_S)
        self._blocking_client: Any = None
        self._retry_after_arg = f"{self.retry_after:.6f}"
        client_name = f"eventbus:{connection_name}"
        #: The hot path (push, reserve) straight over a socket, where the URL allows (redis_wire).
        self._wire = (redis_wire.Wire(self.url, timeout=COMMAND_TIMEOUT_S, name=client_name,
                                      pool=self.redis.connection_pool)
                      if redis_wire.supports(self.url, self.cluster) else None)
        self._blocking_wire: redis_wire.Wire | None = None
        self._wire_scripts = {name: redis_wire.Script(script_source(name))
                              for name in ("push", "push_many", "reserve")}
        #: Per queue: (monotonic time, seconds until something is due) from the last empty reserve.
        self._due_hint: dict[str, tuple[float, float]] = {}
        self._push_keys: dict[str | None, list[str]] = {}
        #: Queues whose wake-up token the last blocking wait took (see :meth:`wait`).
        self._woken: set[str] = set()
        #: A cluster's idle wait on every queue at once, over plain sockets (not TLS).
        self._cluster_wait = (redis_cluster_wait.ClusterWait(
            redis.connection.parse_url(self.topology.url), name=client_name,  # type: ignore[no-untyped-call]
            margin_s=10.0, timeout_s=redis_cluster_wait.TIMEOUT_S)
            if self.cluster and redis_cluster_wait.supports(self.topology.url) else None)
        self._scripts = {name: load_script(self.redis, name) for name in QUEUE_SCRIPTS}

    @classmethod
    def prepare_fork(cls, config: Mapping[str, Any]) -> None:
        """Every script's source (the queue's and its state store's) and the codec a host
        name's lookup loads: what each forked worker would otherwise load for itself before its
        first job (the failed store is the runtime's: ``eventbus.failed.prepare_fork``)."""
        from eventbus.state import redis as state_redis

        for name in QUEUE_SCRIPTS:
            script_source(name)
        state_redis.prepare_fork()
        "localhost".encode("idna")  # socket.getaddrinfo() imports this codec on its first name

    @property
    def _blocking(self) -> Any:
        """The client for ``BLPOP`` and long scripts: its socket timeout outlasts ``block_for``.
        Built on first use (a process that only pushes never needs it)."""
        if self._blocking_client is None:
            self._blocking_client = self._client(self.block_for + 10.0)
        return self._blocking_client

    def _client(self, socket_timeout: float) -> Any:
        """A new client of this connection; a cluster none of whose seeds answers is a lost
        connection (building that client asks them for the cluster's layout)."""
        return self._call("connect", lambda: redis_topology.sync_client(
            self.topology, socket_timeout=socket_timeout, name=f"eventbus:{self.connection_name}"))

    # -- keys ---------------------------------------------------------------------------------
    def key(self, queue: str | None, suffix: str = "") -> str:
        base = f"{self.prefix}{{{self.queue_name(queue)}}}"
        return f"{base}:{suffix}" if suffix else base

    def _keys(self, queue: str | None, *suffixes: str) -> list[str]:
        return [self.key(queue, s) for s in suffixes]

    def _call(self, action: str, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except LOST_CONNECTION as exc:
            raise unavailable(self.url, self.connection_name, action, exc) from exc

    def _idempotent(self, action: str, fn: Callable[[], T], attempts: int = 3) -> T:
        """Retry an idempotent call a few times across a lost connection (not a push that was
        not replicated in time: a second push of it would find it queued and prove nothing)."""
        for attempt in range(attempts):
            try:
                return self._call(action, fn)
            except NotReplicatedError:
                raise
            except ConnectionUnavailableError:
                if attempt == attempts - 1:
                    raise
                time.sleep(0.1 * 2**attempt)
        raise AssertionError("unreachable")

    # -- pushing ------------------------------------------------------------------------------
    def _push_args(self, raw: str, queue: str | None, delay: float,
                   payload: Payload | None = None) -> tuple[list[str], list[Any]]:
        """The push script's keys and arguments; ``raw`` is the body to store, or, without a
        ``payload``, text given as is."""
        keys = self._push_keys.get(queue)
        if keys is None:
            keys = self._keys(queue, "", "notify", "bodies", "attempts", "delayed")
            keys[0] = self.key(queue)
            self._push_keys[queue] = keys
        if payload is not None:  # known already: spare parsing the text again
            return keys, [payload.uuid, raw, payload.attempts, f"{delay:.6f}"]
        stored = redis_bodies.store_raw(raw, compact=self.compact_bodies)
        text = redis_bodies.unpack(stored)  # what a worker will read (a packed body: its payload)
        return keys, [id_for(text), stored, attempts_of(text), f"{delay:.6f}"]

    def push(self, payload: Payload, queue: str | None = None) -> str:
        return self._push(self._body(payload), queue, 0.0, payload)

    def push_raw(self, payload: str, queue: str | None = None, *, delay: float = 0.0) -> str:
        return self._push(payload, queue, delay)

    def _push(self, raw: str, queue: str | None, delay: float, payload: Payload | None = None) -> str:
        keys, args = self._push_args(raw, queue, delay, payload)
        self._idempotent("push", lambda: self._run_push("push", keys, args))
        return str(args[0])

    def _run(self, name: str, keys: Sequence[Any], args: Sequence[Any]) -> Any:
        """A hot script: over the wire where there is one, else through redis-py."""
        if self._wire is not None:
            return self._wire.run(self._wire_scripts[name], keys, args)
        return self._scripts[name](keys=keys, args=args)

    def _run_push(self, name: str, keys: Sequence[Any], args: Sequence[Any]) -> Any:
        """A push script; with ``wait_replicas``, followed on the same connection by ``WAIT``
        (:mod:`eventbus.queue.redis.replication`)."""
        if not self.wait_replicas:
            return self._run(name, keys, args)
        wait = redis_replication.wait_command(self.wait_replicas, self.wait_timeout_ms)
        if self._wire is not None:
            script = self._wire_scripts[name]
            reply, acked = self._wire.pipeline([("EVALSHA", script.sha, len(keys), *keys, *args), wait])
            if redis_wire.no_script(reply):
                reply, acked = self._wire.pipeline([("EVAL", script.source, len(keys), *keys, *args), wait])
        else:
            pipe = self.redis.pipeline(transaction=False)
            self._scripts[name](keys=keys, args=args, client=pipe)
            pipe.execute_command(*wait)
            reply, acked = pipe.execute(raise_on_error=False)
        if isinstance(reply, Exception):
            raise reply
        redis_replication.judge(acked, self.wait_replicas, self.wait_timeout_ms, str(args[0]), self.connection_name)
        return reply

    def bulk(self, payloads: Iterable[Payload], queue: str | None = None) -> list[str]:
        """Push many jobs with one script call per 500, or per :data:`STREAM_CHUNK` streamed
        over the hot path (idempotent, so safe to retry)."""
        keys = [self.key(queue), self.key(queue, "notify"), self.key(queue, "bodies"),
                self.key(queue, "attempts")]
        if self._wire is not None and not self.wait_replicas:
            jobs = list(payloads)
            if not jobs:
                return []
            for start in range(0, len(jobs), BULK_CHUNK):  # a lost connection sends 500 again, at most
                self._idempotent("bulk push", functools.partial(self._stream_bulk, keys, jobs[start:start + BULK_CHUNK]))
            return [p.uuid for p in jobs]
        items = [(p.uuid, self._body(p), p.attempts) for p in payloads]
        for start in range(0, len(items), BULK_CHUNK):
            args = [value for item in items[start:start + BULK_CHUNK] for value in item]

            def push_chunk(chunk: list[Any] = args) -> Any:
                return self._run_push("push_many", keys, chunk)

            self._idempotent("bulk push", push_chunk)
        return [uuid for uuid, _, _ in items]

    def _stream_bulk(self, keys: list[str], payloads: Sequence[Payload]) -> None:
        """One ``push_many`` call per :data:`STREAM_CHUNK` jobs, each written as soon as its
        payloads are encoded: the server stores one chunk while the next is encoded, where one
        call per 500 had the client encode them all and then wait for the server (its time is
        a fifth of a bulk push's). A chunk the server had no script for is sent again with
        ``EVAL`` (NOSCRIPT: it did not run), after the chunks behind it: should the server lose
        its scripts in the middle of a stream (a ``SCRIPT FLUSH``, a restart that keeps the
        connection), those jobs are queued after the later ones. A chunk is stored whole or not
        at all; a call that fails part-way leaves the chunks before the failure queued (a retry
        skips the ids it finds stored)."""
        script, wire, body = self._wire_scripts["push_many"], self._wire, self._body
        assert wire is not None
        chunks: list[list[Any]] = []

        def commands() -> Iterator[tuple[Any, ...]]:
            for start in range(0, len(payloads), STREAM_CHUNK):
                args: list[Any] = []
                for p in payloads[start:start + STREAM_CHUNK]:
                    args += (p.uuid, body(p), p.attempts)
                chunks.append(args)
                yield ("EVALSHA", script.sha, len(keys), *keys, *args)

        for args, reply in zip(chunks, wire.stream(commands())):
            if redis_wire.no_script(reply):
                wire.call("EVAL", script.source, len(keys), *keys, *args)
            elif isinstance(reply, Exception):
                raise reply

    def later(self, delay: Any, payload: Payload, queue: str | None = None) -> str:
        return self._push(self._body(payload), queue, delay_seconds(delay), payload)

    # -- popping ------------------------------------------------------------------------------
    def pop(self, queue: str | None = None) -> QueueJob | None:
        jobs = self.reserve(queue, 1).jobs
        return jobs[0] if jobs else None

    def reserve(self, queue: str | None, limit: int, *, acks: Sequence[QueueJob] = (),
                renew: Sequence[QueueJob] = (), give_back: Sequence[QueueJob] = ()) -> Reserved:
        """Everything of :meth:`Queue.reserve` in one script call (``reserve.lua``).

        Not retried here: a reply lost on the way leaves reservations that expire and come back
        (at-least-once); the caller keeps its acknowledgements and sends them again, which the
        tokens make harmless.
        """
        name = self.queue_name(queue)
        woken = name in self._woken
        self._woken.discard(name)
        keys, args = self._reserve_args(name, limit, woken, acks, renew, give_back)
        asked_at = time.monotonic()
        try:
            reply = self._call("reserve", lambda: self._run("reserve", keys, args))
        except ConnectionUnavailableError:
            if woken:
                self._woken.add(name)
            raise
        return self._reserved(name, reply, asked_at, renew)

    def _reserve_args(self, name: str, limit: int, woken: bool, acks: Sequence[QueueJob] = (),
                      renew: Sequence[QueueJob] = (),
                      give_back: Sequence[QueueJob] = ()) -> tuple[list[str], list[Any]]:
        keys = self._keys(name, "", "delayed", "reserved", "notify", "bodies", "attempts", "tokens",
                          "failing")
        keys[0] = self.key(name)
        args: list[Any] = [self._retry_after_arg, self.batch, limit, 1 if woken else 0,
                           f"{uuid.uuid4().hex}:"]
        for jobs in (acks, renew, give_back):
            args.append(len(jobs))
            for job in jobs:
                args += (job.job_id, job.token)
        return keys, args

    def _reserved(self, name: str, reply: Any, asked_at: float, renew: Sequence[QueueJob] = ()) -> Reserved:
        """The reply of ``reserve.lua`` as jobs; their deadline counts from before the request."""
        lost, found, due = reply
        reserved_until = asked_at + self.retry_after
        jobs = [QueueJob(queue=self, queue_name=name, job_id=found[i].decode(),
                         raw=_text(found[i + 1]),
                         attempts=int(found[i + 2]), token=found[i + 4].decode(),
                         failure=None if found[i + 3] is None else found[i + 3].decode("utf-8", "replace"),
                         reserved_until=reserved_until)
                for i in range(0, len(found), 5)]
        for job in renew:
            job.reserved_until = reserved_until
        if not jobs:
            self._due_hint[name] = (time.monotonic(), float(due))
        return Reserved(jobs, {job_id.decode() for job_id in lost})

    def touch_reserved(self, job: QueueJob) -> bool:
        return job.job_id not in self.reserve(job.queue_name, 0, renew=[job]).lost

    def wait(self, queues: Sequence[str], timeout: float) -> None:
        """Block on the queues' notify lists until a push, the next due delayed job, or timeout."""
        timeout = self._wait_timeout(queues, timeout)
        if timeout <= 0:
            return
        if self.block_for <= 0:
            time.sleep(timeout)
            return
        if self.cluster and self._cluster_wait is not None:
            # one BLPOP cannot span slots: one per queue, all at once (redis_cluster_wait)
            woken = self._call("wait", lambda: self._wait_on_cluster(queues, timeout))
        else:  # over TLS, a cluster blocks on its first queue (the others are asked every turn)
            keys = {self.key(n, "notify"): n for n in (queues[:1] if self.cluster else queues)}
            token = self._call("wait", lambda: self._blocking.blpop(list(keys), timeout=max(timeout, 0.01)))
            woken = {keys[token[0].decode()]} if token else set()
        # The wake-up is spent: the next reserve of that queue takes one job without consuming
        # another token (the notify list keeps about one token per ready job, and no round trip
        # gives it back).
        self._woken |= woken

    def _wait_on_cluster(self, queues: Sequence[str], timeout: float) -> set[str]:
        assert self._cluster_wait is not None
        targets = []
        for name in queues:
            key = self.key(name, "notify")
            node = self.redis.get_node_from_key(key)
            targets.append((name, key, (str(node.host), int(node.port))))
        return self._cluster_wait.wait(targets, timeout)

    def wait_and_reserve(self, queues: Sequence[str], timeout: float, limit: int) -> Reserved | None:
        """The blocking wait and the reservation after it in one round trip, for one queue.

        The ``BLPOP`` and ``reserve.lua`` go out together; Redis runs a connection's commands in
        order, so the script runs the moment the wait ends, and an idle worker gets its job with
        the reply that wakes it. When the wait timed out the script usually finds nothing (and
        says when something is due). It runs as if woken either way: at worst a job pushed in
        that instant leaves one wake-up token too many, which costs a worker an empty turn.
        """
        if len(queues) != 1 or self._wire is None or self.block_for <= 0:
            self.wait(queues, timeout)
            return None
        name = queues[0]
        timeout = self._wait_timeout(queues, timeout)
        if timeout <= 0:
            return None
        if self._blocking_wire is None:
            self._blocking_wire = redis_wire.Wire(self.url, timeout=self.block_for + 10.0,
                                                  name=f"eventbus:{self.connection_name}",
                                                  pool=self.redis.connection_pool)
        wire, script = self._blocking_wire, self._wire_scripts["reserve"]
        keys, args = self._reserve_args(name, limit, True)
        asked_at = time.monotonic()
        token, reply = self._call("wait", lambda: wire.pipeline([
            ("BLPOP", self.key(name, "notify"), f"{max(timeout, 0.01):.3f}"),
            ("EVALSHA", script.sha, len(keys), *keys, *args)]))
        if isinstance(token, Exception):
            raise token
        if isinstance(reply, Exception):
            if not redis_wire.no_script(reply):
                raise reply
            if token is not None:
                self._woken.add(name)
            return self.reserve(name, limit)
        return self._reserved(name, reply, asked_at)

    def _wait_timeout(self, queues: Sequence[str], timeout: float) -> float:
        """How long an idle wait may block: at most block_for, and no longer than until the next
        delayed job is due or reservation expires (known from the last empty reserve when it is
        fresh, else asked)."""
        timeout = min(timeout, self.block_for) if self.block_for > 0 else timeout
        now = time.monotonic()
        for name in queues:
            hint = self._due_hint.get(name)
            if hint is not None and now - hint[0] < DUE_HINT_S:
                due = hint[1]
            else:  # a reserve of nothing says it (and moves what is due meanwhile)
                keys, args = self._reserve_args(name, 0, False)
                due = float(self._call("wait", lambda: self._run("reserve", keys, args))[2])
            if due >= 0:
                timeout = min(timeout, due)
        return timeout

    def delete_reserved(self, job: QueueJob) -> bool:
        keys = self._keys(job.queue_name, "reserved", "bodies", "attempts", "tokens", "failing")
        return bool(self._idempotent("delete", lambda: self._scripts["delete"](
            keys=keys, args=[job.job_id, job.token])))

    def release_reserved(self, job: QueueJob, delay: float) -> bool:
        return self._release(job, delay, uncount=False)

    def release_uncounted(self, job: QueueJob, delay: float) -> bool:
        """Put back and give the attempt back in one script (release.lua)."""
        return self._release(job, delay, uncount=True)

    def _release(self, job: QueueJob, delay: float, *, uncount: bool) -> bool:
        keys = self._keys(job.queue_name, "reserved", "delayed", "", "notify", "tokens", "attempts")
        keys[2] = self.key(job.queue_name)
        return bool(self._idempotent("release", lambda: self._scripts["release"](
            keys=keys, args=[job.job_id, job.token, f"{delay:.6f}", "1" if uncount else "0"])))

    def hold_failure(self, job: QueueJob, description: str) -> bool:
        keys = self._keys(job.queue_name, "reserved", "tokens", "failing")
        return bool(self._idempotent("keep failure", lambda: self._scripts["hold_failure"](
            keys=keys, args=[job.job_id, job.token, f"{self.retry_after:.6f}", description])))

    # -- failing in one step, when the failed store is this Redis --------------------------------
    def is_server(self, url: str, cluster: bool) -> bool:
        """True when ``url`` names this connection's Redis (and database)."""
        try:
            return redis_topology.parse(url, cluster=cluster) == self.topology
        except ValueError:
            return False

    def failed_keys(self, queue: str) -> tuple[str, str]:
        """The failed records of ``queue`` kept beside it, in its hash slot: (records, index)."""
        return self.key(queue, "failed"), self.key(queue, "failed:index")

    def fail_reserved(self, job: QueueJob, records: tuple[str, str], args: Sequence[Any]) -> int:
        """Store a failed record under ``records`` and delete ``job``, in one script and only while
        its token holds the reservation: 1 done, 0 not held, -1 both record ids taken (see fail.lua
        for ``args``). Retried across a lost connection: a retry finds its own record."""
        keys = [*self._keys(job.queue_name, "reserved", "bodies", "attempts", "tokens", "failing"),
                *records]
        return int(self._idempotent("fail", lambda: self._scripts["fail"](
            keys=keys, args=[job.job_id, job.token, *args])))

    # -- inspection ---------------------------------------------------------------------------
    def size(self, queue: str | None = None) -> int:
        def run() -> int:
            pipe = self.redis.pipeline(transaction=False)
            pipe.llen(self.key(queue))
            pipe.zcard(self.key(queue, "delayed"))
            pipe.zcard(self.key(queue, "reserved"))
            return sum(pipe.execute())

        return self._call("size", run)

    def queues(self) -> list[str]:
        """Every queue with a body stored under this prefix (SCAN: fine for tools, not per job)."""
        pattern = f"{_glob_escape(self.prefix)}{{*}}:bodies"
        found: set[str] = set()

        def scan() -> None:
            for key in self.redis.scan_iter(match=pattern, count=500):
                text = key.decode("utf-8", "replace")
                found.add(text[len(self.prefix) + 1:text.rindex("}:bodies")])

        self._call("list queues", scan)
        return sorted(found)

    def stats(self, queue: str | None = None) -> QueueStats:
        name = self.queue_name(queue)

        def run() -> QueueStats:
            pipe = self.redis.pipeline(transaction=False)
            pipe.llen(self.key(name))
            pipe.zcard(self.key(name, "delayed"))
            pipe.zcard(self.key(name, "reserved"))
            pipe.lindex(self.key(name), 0)
            ready, delayed, reserved, first = pipe.execute()
            body = self.redis.hget(self.key(name, "bodies"), first) if first else None
            return QueueStats(name, int(ready), int(delayed), int(reserved), _age_of(body))

        return self._call("stats", run)

    def oldest_ready_age_s(self, queue: str | None = None) -> float | None:
        """From the ``pushedAt`` of the payload at the head of the ready list (a job delayed or
        released counts from its push, as Laravel's Redis queue tells)."""
        name = self.queue_name(queue)

        def run() -> float | None:
            first = self.redis.lindex(self.key(name), 0)
            return _age_of(self.redis.hget(self.key(name, "bodies"), first) if first else None)

        age: float | None = self._call("oldest ready job", run)
        return age

    def clear(self, queue: str | None = None) -> int:
        keys = self._keys(queue, "", "delayed", "notify", "bodies", "attempts", "tokens", "reserved",
                          "failing")
        keys[0] = self.key(queue)
        clear = load_script(self._blocking, "clear")  # a long queue takes a while
        return int(self._call("clear", lambda: clear(keys=keys)))

    def peek(self, queue: str | None = None, limit: int = 10) -> list[str]:
        bodies = self._call("peek", lambda: self._scripts["peek"](
            keys=[self.key(queue), self.key(queue, "bodies")], args=[limit]))
        return [_text(b) for b in bodies]

    def find(self, uuid: str, queue: str | None = None) -> QueuedJob | None:
        keys = self._keys(queue, "bodies", "delayed", "reserved")
        found = self._call("find", lambda: self._scripts["find"](keys=keys, args=[uuid]))
        if found is None:
            return None
        body, state = found
        return QueuedJob(uuid, self.queue_name(queue), JobState(state.decode()), _text(body))

    def list_jobs(self, state: JobState, queue: str | None = None, limit: int = 10) -> list[QueuedJob]:
        keys = [self.key(queue), *self._keys(queue, "delayed", "reserved", "bodies")]
        flat = self._call("list jobs", lambda: self._scripts["list_jobs"](keys=keys, args=[state.value, limit]))
        name = self.queue_name(queue)
        return [QueuedJob(flat[i].decode("utf-8", errors="surrogateescape"), name, state,
                          _text(flat[i + 1])) for i in range(0, len(flat), 2)]

    def cancel(self, uuid: str, queue: str | None = None) -> Cancellation:
        """Remove a ready or delayed job in one script (cancel.lua)."""
        keys = self._keys(queue, "", "delayed", "reserved", "bodies", "attempts", "tokens", "failing")
        keys[0] = self.key(queue)
        done = int(self._idempotent("cancel", lambda: self._scripts["cancel"](keys=keys, args=[uuid])))
        return {1: Cancellation.CANCELLED, -1: Cancellation.RESERVED}.get(done, Cancellation.NOT_FOUND)

    # -- worker support -----------------------------------------------------------------------
    def record_exception(self, uuid: str) -> int:
        key = f"{self.prefix}job-exceptions:{uuid}"
        return int(self._call("record exception", lambda: self._scripts["count_exception"](keys=[key])))

    def forget_exceptions(self, uuid: str) -> None:
        self._call("forget exceptions", lambda: self.redis.delete(f"{self.prefix}job-exceptions:{uuid}"))

    def ping(self) -> None:
        self._call("ping", self.redis.ping)

    def startup_warnings(self) -> list[str]:
        """A warning when the server runs without the append-only file: then a restart of Redis
        (a crash, a deploy, an OOM kill) loses every job it holds, acknowledged or not."""
        try:
            info = self._call("persistence check", lambda: self.redis.info("persistence"))
        except (ConnectionUnavailableError, redis.ResponseError):
            return []  # INFO may be renamed away on managed servers: nothing to say then
        nodes = list(info.values()) if info and all(isinstance(v, dict) for v in info.values()) else [info]
        if all(str(node.get("aof_enabled", "0")) == "1" for node in nodes):
            return []
        return [f"Redis at {redact_url(self.url)} (connection {self.connection_name!r}) runs without "
                "persistence (appendonly no): a restart of the server loses every queued job. "
                "Set appendonly yes with appendfsync everysec or always."]

    def abandon_wait(self) -> None:
        """Only the blocking connections: the command client may be in use by jobs running in
        other threads (``--concurrency``)."""
        if self._blocking_wire is not None:
            self._blocking_wire.close()
        if self._cluster_wait is not None:
            self._cluster_wait.close()
        if self._blocking_client is not None:
            self._blocking_client.close()
            self._blocking_client = None

    def close(self) -> None:
        self.redis.close()
        if self._wire is not None:
            self._wire.close()
        if self._cluster_wait is not None:
            self._cluster_wait.close()
        if self._blocking_wire is not None:
            self._blocking_wire.close()
        if self._blocking_client is not None:
            self._blocking_client.close()
            self._blocking_client = None

    def state_store(self) -> RedisStateStore:
        """State keys live beside the queues: ``{prefix}state:...`` on this client."""
        return RedisStateStore(self.redis, self.prefix, name=self.connection_name)

    @property
    def signal_key(self) -> str:
        """Worker signals live under the connection's prefix: another app sharing this Redis
        database with its own prefix neither sees nor sends them."""
        return f"{self.prefix}signals"

    def signals(self) -> dict[str, float]:
        values = self._call("signal check", lambda: self.redis.hgetall(self.signal_key))
        return parse_signals(values.items(), self.connection_name)

    def set_signal(self, name: str, value: float | None) -> bool:
        if value is None:
            self._call("signal", lambda: self.redis.hdel(self.signal_key, name))
        else:
            self._call("signal", lambda: self.redis.hset(self.signal_key, name, repr(value)))
        return True

    # -- pushing from an event loop: redis.asyncio (eventbus.queue.redis.aio) ----------------
    @functools.cached_property
    def _async(self) -> AsyncPusher:
        return AsyncPusher(self.topology, self.connection_name, socket_timeout_s=COMMAND_TIMEOUT_S,
                           chunk=BULK_CHUNK, wait_replicas=self.wait_replicas,
                           wait_timeout_ms=self.wait_timeout_ms, url=self.url)

    async def apush(self, payload: Payload, queue: str | None = None) -> str:
        return await self._async.push(*self._push_args(self._body(payload), queue, 0.0, payload))

    async def alater(self, delay: Any, payload: Payload, queue: str | None = None) -> str:
        body = self._body(payload)
        return await self._async.push(*self._push_args(body, queue, delay_seconds(delay), payload))

    async def abulk(self, payloads: Iterable[Payload], queue: str | None = None) -> list[str]:
        keys = [self.key(queue), self.key(queue, "notify"), self.key(queue, "bodies"),
                self.key(queue, "attempts")]
        return await self._async.bulk(keys, [(p.uuid, self._body(p), p.attempts) for p in payloads])
