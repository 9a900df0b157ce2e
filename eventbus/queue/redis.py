"""The Redis driver: Laravel's design with the fixes the field learned the hard way.

Keys of one queue share the hash tag ``{name}`` so they live in one cluster slot::

    queues:{default}            list of ready job ids (push appends, pop takes the head)
    queues:{default}:delayed    sorted set id -> due time
    queues:{default}:reserved   sorted set id -> reservation expiry
    queues:{default}:notify     list of wake-up tokens for blocking pops
    queues:{default}:bodies     hash id -> payload text (never decoded inside Lua)
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
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib import resources
from typing import Any, TypeVar

import redis
from redis.backoff import NoBackoff
from redis.cluster import RedisCluster
from redis.retry import Retry

from eventbus.errors import ConnectionUnavailableError
from eventbus.payload import Payload, attempts_of, pushed_at_of
from eventbus.queue import redis_wire
from eventbus.queue.base import (
    Queue,
    QueueJob,
    QueueStats,
    Reserved,
    delay_seconds,
    id_for,
    parse_signals,
)
from eventbus.queue.redis_async import AsyncPusher
from eventbus.state.redis import RedisStateStore
from eventbus.queue.redis_errors import LOST_CONNECTION, unavailable
from eventbus.urls import redact_url

T = TypeVar("T")
BULK_CHUNK = 500
#: Socket timeout of every command but the blocking wait: Redis answers in milliseconds, and an
#: acknowledgement must give up on a stalled server long before a reservation expires.
COMMAND_TIMEOUT_S = 5.0
#: How long the "next due" of an empty reserve stands in for asking again before a wait.
DUE_HINT_S = 0.05


def _script(name: str) -> str:
    return resources.files("eventbus.queue").joinpath(f"lua/{name}.lua").read_text()


def client_for(url: str, *, socket_timeout: float | None = COMMAND_TIMEOUT_S, name: str = "eventbus",
               cluster: bool = False) -> Any:
    """A client that never retries on its own (a blind retry of a script is not safe).

    Its connections carry ``name`` (``CLIENT LIST`` shows which belong to eventbus). With
    ``cluster`` it is a :class:`redis.cluster.RedisCluster`: every script touches the keys of one
    queue only, and they share a hash slot.
    """
    options: dict[str, Any] = {"client_name": name, "retry": Retry(NoBackoff(), 0),
                               "socket_timeout": socket_timeout, "socket_connect_timeout": 5.0}
    if cluster:
        return RedisCluster.from_url(url, **options)
    return redis.Redis.from_url(url, health_check_interval=30, **options)


def _glob_escape(text: str) -> str:
    return "".join(f"\\{c}" if c in "*?[]\\" else c for c in text)


def _age_of(body: bytes | None) -> float | None:
    """Seconds since a stored payload was pushed (its ``pushedAt``), when it says."""
    if not body:
        return None
    pushed = pushed_at_of(body.decode("utf-8", "surrogateescape"))
    return max(time.time() - pushed, 0.0) if pushed else None


def load_script(client: Any, name: str) -> Any:
    return client.register_script(_script(name))


class RedisQueue(Queue):
    driver = "redis"
    defaults = {"queue": "default", "retry_after": 90.0, "block_for": 5.0, "prefix": "queues:",
                "migration_batch_size": 100, "cluster": False}
    example_url = "redis://127.0.0.1:6379/0"
    url_schemes = ("redis", "rediss", "unix")
    holds_reservations = True
    has_workers = True

    @classmethod
    def failed_store_url(cls, config: Mapping[str, Any]) -> str | None:
        """Failed jobs live in the same Redis (on a cluster: on one hash tag, see failed.redis)."""
        url = str(config["url"])
        if config.get("cluster"):
            return f"{url}{'&' if '?' in url else '?'}cluster=1"
        return url

    def __init__(self, connection_name: str, config: Mapping[str, Any]) -> None:
        super().__init__(connection_name, config)
        self.url: str = config["url"]
        self.prefix: str = config.get("prefix", "queues:")
        self.block_for: float = float(config.get("block_for", 5.0) or 0.0)
        self.batch: int = int(config.get("migration_batch_size", 100))
        self.cluster = bool(config.get("cluster", False))
        self.redis = client_for(self.url, name=f"eventbus:{connection_name}", cluster=self.cluster)
        self._blocking_client: Any = None
        self._retry_after_arg = f"{self.retry_after:.6f}"
        client_name = f"eventbus:{connection_name}"
        #: The hot path (push, reserve) straight over a socket, where the URL allows (redis_wire).
        self._wire = (redis_wire.Wire(self.url, timeout=COMMAND_TIMEOUT_S, name=client_name)
                      if redis_wire.supports(self.url, self.cluster) else None)
        self._blocking_wire: redis_wire.Wire | None = None
        self._wire_scripts = {name: redis_wire.Script(_script(name))
                              for name in ("push", "push_many", "reserve")}
        #: Per queue: (monotonic time, seconds until something is due) from the last empty reserve.
        self._due_hint: dict[str, tuple[float, float]] = {}
        self._push_keys: dict[str | None, list[str]] = {}
        #: The last blocking wait took a wake-up token (see :meth:`wait`).
        self._woken = False
        self._scripts = {
            name: load_script(self.redis, name)
            for name in ("push", "push_many", "reserve", "delete", "release", "clear", "peek",
                         "count_exception", "uncount", "hold_failure", "fail")
        }

    @property
    def _blocking(self) -> Any:
        """The client for ``BLPOP`` and long scripts: its socket timeout outlasts ``block_for``.
        Built on first use (a process that only pushes never needs it)."""
        if self._blocking_client is None:
            self._blocking_client = client_for(self.url, socket_timeout=self.block_for + 10.0,
                                               name=f"eventbus:{self.connection_name}", cluster=self.cluster)
        return self._blocking_client

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
        """Retry an idempotent call a few times across a lost connection."""
        for attempt in range(attempts):
            try:
                return self._call(action, fn)
            except ConnectionUnavailableError:
                if attempt == attempts - 1:
                    raise
                time.sleep(0.1 * 2**attempt)
        raise AssertionError("unreachable")

    # -- pushing ------------------------------------------------------------------------------
    def _push_args(self, raw: str, queue: str | None, delay: float,
                   payload: Payload | None = None) -> tuple[list[str], list[Any]]:
        keys = self._push_keys.get(queue)
        if keys is None:
            keys = self._keys(queue, "", "notify", "bodies", "attempts", "delayed")
            keys[0] = self.key(queue)
            self._push_keys[queue] = keys
        if payload is not None:  # known already: spare parsing the text again
            return keys, [payload.uuid, raw, payload.attempts, f"{delay:.6f}"]
        return keys, [id_for(raw), raw, attempts_of(raw), f"{delay:.6f}"]

    def push(self, payload: Payload, queue: str | None = None) -> str:
        return self._push(payload.to_json(), queue, 0.0, payload)

    def push_raw(self, payload: str, queue: str | None = None, *, delay: float = 0.0) -> str:
        return self._push(payload, queue, delay)

    def _push(self, raw: str, queue: str | None, delay: float, payload: Payload | None = None) -> str:
        keys, args = self._push_args(raw, queue, delay, payload)
        self._idempotent("push", lambda: self._run("push", keys, args))
        return str(args[0])

    def _run(self, name: str, keys: Sequence[Any], args: Sequence[Any]) -> Any:
        """A hot script: over the wire where there is one, else through redis-py."""
        if self._wire is not None:
            return self._wire.run(self._wire_scripts[name], keys, args)
        return self._scripts[name](keys=keys, args=args)

    def bulk(self, payloads: Iterable[Payload], queue: str | None = None) -> list[str]:
        """Push many jobs with one script call per 500 (idempotent, so safe to retry)."""
        keys = [self.key(queue), self.key(queue, "notify"), self.key(queue, "bodies"),
                self.key(queue, "attempts")]
        items = [(p.uuid, p.to_json(), p.attempts) for p in payloads]
        for start in range(0, len(items), BULK_CHUNK):
            args = [value for item in items[start:start + BULK_CHUNK] for value in item]

            def push_chunk(chunk: list[Any] = args) -> Any:
                return self._run("push_many", keys, chunk)

            self._idempotent("bulk push", push_chunk)
        return [uuid for uuid, _, _ in items]

    def later(self, delay: Any, payload: Payload, queue: str | None = None) -> str:
        return self._push(payload.to_json(), queue, delay_seconds(delay), payload)

    # -- popping ------------------------------------------------------------------------------
    batches_reservations = True

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
        woken, self._woken = self._woken, False
        keys, args = self._reserve_args(name, limit, woken, acks, renew, give_back)
        asked_at = time.monotonic()
        try:
            reply = self._call("reserve", lambda: self._run("reserve", keys, args))
        except ConnectionUnavailableError:
            self._woken = woken
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
                         raw=found[i + 1].decode("utf-8", errors="surrogateescape"),
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
        # On a cluster one BLPOP cannot span slots: block on the first queue (the others are
        # checked every turn of the loop, at the latest after block_for).
        keys = [self.key(n, "notify") for n in (queues[:1] if self.cluster else queues)]
        token = self._call("wait", lambda: self._blocking.blpop(keys, timeout=max(timeout, 0.01)))
        # The wake-up is spent: the next reserve takes one job without consuming another token
        # (the notify list keeps about one token per ready job, and no round trip gives it back).
        self._woken = bool(token)

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
                                                  name=f"eventbus:{self.connection_name}")
        wire, script = self._blocking_wire, self._wire_scripts["reserve"]
        keys, args = self._reserve_args(name, limit, True)
        asked_at = time.monotonic()
        token, reply = self._call("wait", lambda: wire.pipeline([
            ("BLPOP", self.key(name, "notify"), f"{max(timeout, 0.01):.3f}"),
            ("EVALSHA", script.sha, len(keys), *keys, *args)]))
        if isinstance(token, Exception):
            raise token
        if isinstance(reply, Exception):
            if not str(reply).startswith("NOSCRIPT"):
                raise reply
            self._woken = token is not None
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
        keys = self._keys(job.queue_name, "reserved", "delayed", "", "notify", "tokens")
        keys[2] = self.key(job.queue_name)
        return bool(self._idempotent("release", lambda: self._scripts["release"](
            keys=keys, args=[job.job_id, job.token, f"{delay:.6f}"])))

    def uncount_attempt(self, job: QueueJob) -> None:
        keys = [self.key(job.queue_name, "attempts")]
        self._call("uncount attempt", lambda: self._scripts["uncount"](keys=keys, args=[job.job_id]))

    def hold_failure(self, job: QueueJob, description: str) -> bool:
        keys = self._keys(job.queue_name, "reserved", "tokens", "failing")
        return bool(self._idempotent("keep failure", lambda: self._scripts["hold_failure"](
            keys=keys, args=[job.job_id, job.token, f"{self.retry_after:.6f}", description])))

    # -- failing in one step, when the failed store is this Redis --------------------------------
    def is_server(self, url: str, cluster: bool) -> bool:
        """True when ``url`` names this connection's Redis (and database)."""
        return url == self.url and cluster == self.cluster

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

    def clear(self, queue: str | None = None) -> int:
        keys = self._keys(queue, "", "delayed", "notify", "bodies", "attempts", "tokens", "reserved",
                          "failing")
        keys[0] = self.key(queue)
        clear = load_script(self._blocking, "clear")  # a long queue takes a while
        return int(self._call("clear", lambda: clear(keys=keys)))

    def peek(self, queue: str | None = None, limit: int = 10) -> list[str]:
        bodies = self._call("peek", lambda: self._scripts["peek"](
            keys=[self.key(queue), self.key(queue, "bodies")], args=[limit]))
        return [b.decode("utf-8", errors="surrogateescape") for b in bodies]

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
        if self._blocking_client is not None:
            self._blocking_client.close()
            self._blocking_client = None

    def close(self) -> None:
        self.redis.close()
        if self._wire is not None:
            self._wire.close()
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

    # -- pushing from an event loop: redis.asyncio (eventbus.queue.redis_async) ----------------
    @functools.cached_property
    def _async(self) -> AsyncPusher:
        return AsyncPusher(self.url, self.connection_name, cluster=self.cluster,
                           socket_timeout_s=COMMAND_TIMEOUT_S, chunk=BULK_CHUNK)

    async def apush(self, payload: Payload, queue: str | None = None) -> str:
        return await self._async.push(*self._push_args(payload.to_json(), queue, 0.0, payload))

    async def alater(self, delay: Any, payload: Payload, queue: str | None = None) -> str:
        raw = payload.to_json()
        return await self._async.push(*self._push_args(raw, queue, delay_seconds(delay), payload))

    async def abulk(self, payloads: Iterable[Payload], queue: str | None = None) -> list[str]:
        keys = [self.key(queue), self.key(queue, "notify"), self.key(queue, "bodies"),
                self.key(queue, "attempts")]
        return await self._async.bulk(keys, [(p.uuid, p.to_json(), p.attempts) for p in payloads])
