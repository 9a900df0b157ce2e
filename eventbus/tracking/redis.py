"""The recent-jobs store in Redis, beside the connection's state under its prefix.

::

    {prefix}state:jobs:{connection}:records        hash: uuid -> the record as JSON
    {prefix}state:jobs:{connection}:expiry         sorted set: uuid -> when its retention ends (ms)
    {prefix}state:jobs:{connection}:completed      sorted set: uuid -> finished at
    {prefix}state:jobs:{connection}:failed         sorted set: uuid -> finished at
    {prefix}state:jobs:{connection}:tag:{tag}      sorted set: uuid -> finished at, every job
                                                   recorded with that tag
    {prefix}state:jobs:{connection}:monitored      set: the monitored tags

The connection's name is the keys' hash tag (``{connection}``), so they share one slot. A batch
of records costs one read (the monitored tags) and one script (``lua/record.lua``, which never
decodes a record); the script drops the records whose retention ended and trims each sorted set
it touches by score (lazy trimming: nothing runs in between), and every read skips a record
whose retention ended since.

The records share one hash instead of a key each: the state's listings find their keys with
``SCAN``, which reads every key of the database, and an hour of completed jobs at a thousand a
second would be 3.6 million keys. Records end by the server's clock, as keys expire.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from importlib import resources
from typing import Any, TypeVar
from urllib.parse import quote

from eventbus.errors import ConnectionUnavailableError
from eventbus.queue.redis.errors import LOST_CONNECTION as _LOST
from eventbus.tracking.records import COMPLETED, FAILED, JobRecord, keep_s, tag_keep_s
from eventbus.tracking.repository import JobRepository

T = TypeVar("T")
#: How many index entries one listing reads at most while it looks for ``limit`` matches.
SCAN_AT_MOST = 20_000
#: The records hash and the sorted set of when each record's retention ends.
RECORDS = "records"
EXPIRY = "expiry"
#: Records written by one script call, at most (a worker that was cut off writes its backlog in
#: several, none of which holds the server for long).
BATCH = 500


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value


class RedisJobRepository(JobRepository):
    """Recent jobs of ``connection`` on an existing client (which stays open)."""

    def __init__(self, client: Any, base: str, connection: str) -> None:
        self.redis = client
        self.connection = connection
        # one hash slot for every key of a connection's recent jobs: a batch is one script on
        # Redis Cluster too
        self.base = f"{base}jobs:{{{quote(connection, safe='')}}}:"
        self._record_script = client.register_script(
            resources.files("eventbus.tracking").joinpath("lua/record.lua").read_text())

    def _call(self, action: str, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except _LOST as exc:
            raise ConnectionUnavailableError(
                f"cannot reach Redis for the recent jobs of {self.connection!r} ({action}): {exc}",
                connection=self.connection) from exc

    def _tag(self, tag: str) -> str:
        return f"{self.base}tag:{tag}"

    # -- writing ----------------------------------------------------------------------------------
    def _record(self, records: list[JobRecord], retention: dict[str, float], now: float) -> None:
        latest = list({r.uuid: r for r in records}.values())  # one entry per uuid, the last word wins

        def run() -> None:
            monitored = self._monitored()
            for start in range(0, len(latest), BATCH):
                self._record_script(**self._script_args(latest[start:start + BATCH], retention, monitored, now))

        self._call("record", run)

    def _script_args(self, records: list[JobRecord], retention: dict[str, float], monitored: set[str],
                     now: float) -> dict[str, list[Any]]:
        """KEYS and ARGV of ``record.lua`` for ``records`` (see the script's header)."""
        tag_keys: dict[str, int] = {}
        for record in records:
            for tag in record.tags:
                tag_keys.setdefault(tag, 5 + len(tag_keys))
        args: list[Any] = [now - retention[COMPLETED], now - retention[FAILED], len(records)]
        for record in records:
            until_ms = int((record.finished_at + keep_s(record, retention, monitored)) * 1000)
            args.extend((record.uuid, record.status, repr(record.finished_at), until_ms,
                         record.to_json(), len(record.tags)))
            args.extend(tag_keys[tag] for tag in record.tags)
        args.append(len(tag_keys))
        for tag in tag_keys:
            keep = tag_keep_s(tag, retention, monitored)
            args.extend((now - keep, max(int(keep * 1000), 1)))
        keys = [self.base + COMPLETED, self.base + FAILED, self.base + RECORDS, self.base + EXPIRY,
                *(self._tag(tag) for tag in tag_keys)]
        return {"keys": keys, "args": args}

    # -- reading ----------------------------------------------------------------------------------
    def _records(self, uuids: Iterable[str]) -> list[JobRecord]:
        """The live records of ``uuids``, in their order: a record whose retention has ended (by
        the server's clock, as the script that drops it reads it) is skipped."""
        uuids = list(uuids)
        if not uuids:
            return []
        pipe = self.redis.pipeline(transaction=False)
        pipe.time()
        pipe.hmget(self.base + RECORDS, uuids)
        for uuid in uuids:  # one ZSCORE each: ZMSCORE needs Redis 6.2, the driver supports 5.0
            pipe.zscore(self.base + EXPIRY, uuid)
        (seconds, micros), texts, *until = pipe.execute()
        now_ms = seconds * 1000 + micros / 1000
        found = (JobRecord.from_text(_text(text)) for text, ends in zip(texts, until)
                 if text is not None and ends is not None and ends > now_ms)
        return [r for r in found if r is not None]

    def _newest(self, key: str, status: str | None, limit: int) -> list[JobRecord]:
        """Up to ``limit`` live records of the index ``key``, newest first, of ``status`` or any."""
        found: list[JobRecord] = []
        start, page = 0, max(limit, 100)
        while len(found) < limit and start < SCAN_AT_MOST:
            uuids = [_text(u) for u in self.redis.zrevrange(key, start, start + page - 1)]
            if not uuids:
                break
            found.extend(r for r in self._records(uuids) if status is None or r.status == status)
            start += page
        return found[:limit]

    def _recent(self, status: str | None, tag: str | None, limit: int, now: float) -> list[JobRecord]:
        def run() -> list[JobRecord]:
            if tag is not None:
                return self._newest(self._tag(tag), status, limit)
            if status is not None:
                return self._newest(self.base + status, status, limit)
            both = self._newest(self.base + COMPLETED, None, limit) + self._newest(self.base + FAILED, None, limit)
            return sorted(both, key=lambda r: r.finished_at, reverse=True)[:limit]

        found: list[JobRecord] = self._call("list", run)
        return found

    def _find(self, uuid: str, now: float) -> JobRecord | None:
        """The job's record while its retention lasts."""
        found = self._call("find", lambda: self._records([uuid]))
        return found[0] if found else None

    # -- monitored tags ---------------------------------------------------------------------------
    def _watch(self, tag: str) -> bool:
        return bool(self._call("watch", lambda: self.redis.sadd(self.base + "monitored", tag)))

    def _unwatch(self, tag: str) -> bool:
        return bool(self._call("unwatch", lambda: self.redis.srem(self.base + "monitored", tag)))

    def _monitored(self) -> set[str]:
        return {_text(t) for t in self._call("monitored", lambda: self.redis.smembers(self.base + "monitored"))}

    def _count(self, tag: str, retention: dict[str, float], now: float) -> int:
        """The index's entries within the tag's window (those older wait for the next write's trim)."""
        def run() -> int:
            since = now - tag_keep_s(tag, retention, self._monitored())
            return int(self.redis.zcount(self._tag(tag), since, "+inf"))

        return self._call("count", run)
