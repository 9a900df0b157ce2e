"""Batches on Redis: a few keys per batch under the state store's prefix, one Lua script per step.

Every key of batch ``X`` carries the hash tag ``{X}`` (``batch:{X}``, ``batch:{X}:jobs``, ...), so
one batch lives in one hash slot and each script runs on Redis Cluster too:

- ``batch:{X}``: a hash of the counters (``total``, ``pending``, ``failed``, ``outstanding``),
  the stamps, the name, the callback kinds (``flags``) and the description (JSON);
- ``batch:{X}:jobs``: each member's final outcome (``ok``/``fail``), which makes a repeated
  outcome a no-op; ``batch:{X}:failed``: the failed members in order (``failed_job_ids``);
- ``batch:{X}:outbox``: the callbacks made due (``due\\n<owner>\\n<failure>``) or pushed (``done``);
- ``batch:{X}:callbacks``: the callback jobs that ran (a push repeated after a crash skips them).

Keys expire ``KEEP_S`` after the last outcome recorded (Redis memory is not a ledger).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from importlib import resources
from typing import Any, TypeVar

from eventbus.batching.records import KEEP_S, BatchRecord, Due, flags_of, in_push_order
from eventbus.batching.repository import BatchRepository
from eventbus.errors import ConnectionUnavailableError
from eventbus.queue.redis.errors import LOST_CONNECTION

T = TypeVar("T")
_TTL_MS = str(int(KEEP_S * 1000))
_SCRIPTS = ("create", "add", "record", "mark", "cancel", "callback_ran")
_PARTS = ("", "jobs", "failed", "outbox", "callbacks")
_FIELDS = ("name", "total", "pending", "failed", "created_at", "cancelled_at", "finished_at")


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value


def _stamp(value: Any) -> float | None:
    return float(_text(value)) if value not in (None, b"", "") else None


def _glob_escape(text: str) -> str:
    return "".join(f"\\{c}" if c in "*?[]\\" else c for c in text)


def _dues(reply: list[Any]) -> list[Due]:
    return in_push_order([Due(_text(reply[i]), _text(reply[i + 1])) for i in range(0, len(reply), 2)])


class RedisBatchRepository(BatchRepository):
    """The batches under ``{base}batch:`` on an existing client (the state store's)."""

    def __init__(self, client: Any, base: str, *, name: str = "redis") -> None:
        self.redis = client
        self.base = base
        self.name = name
        lua = resources.files("eventbus.batching").joinpath("lua")
        self._scripts = {s: client.register_script(lua.joinpath(f"{s}.lua").read_text()) for s in _SCRIPTS}

    def keys(self, batch_id: str) -> list[str]:
        """Every key of the batch: the hash, then jobs, failed, outbox, callbacks."""
        head = f"{self.base}batch:{{{batch_id}}}"
        return [head + (f":{part}" if part else "") for part in _PARTS]

    def _call(self, action: str, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except LOST_CONNECTION as exc:
            raise ConnectionUnavailableError(
                f"cannot reach Redis for the batches of {self.name!r} ({action}): {exc}",
                connection=self.name) from exc

    def _run(self, script: str, keys: list[str], args: list[Any]) -> Any:
        return self._call(script, lambda: self._scripts[script](keys=keys, args=args))

    # -- the steps --------------------------------------------------------------------------------
    def create(self, batch_id: str, description: dict[str, Any], jobs: int, *, owner: str) -> list[Due]:
        args = [str(description.get("name", "")), json.dumps(description, separators=(",", ":")),
                ",".join(flags_of(description)), "1" if description.get("allow_failures") else "0",
                repr(float(description.get("created_at") or time.time())), str(jobs), _TTL_MS, owner]
        return _dues(self._run("create", self.keys(batch_id), args))

    def add_jobs(self, batch_id: str, count: int) -> bool:
        return bool(self._run("add", [self.keys(batch_id)[0]], [str(count), _TTL_MS]))

    def record(self, batch_id: str, job_uuid: str, succeeded: bool, *, unrun: Sequence[str] = (),
               failure: str = "") -> list[Due] | None:
        reply = self._run("record", self.keys(batch_id),
                          [job_uuid, "1" if succeeded else "0", repr(time.time()), _TTL_MS, failure, *unrun])
        return None if reply is None else _dues(reply)

    def mark_pushed(self, batch_id: str, keys: Sequence[str]) -> None:
        if keys:
            self._run("mark", [self.keys(batch_id)[3]], [_TTL_MS, *keys])

    def callback_ran(self, batch_id: str, job_uuid: str) -> None:
        keys = self.keys(batch_id)
        self._run("callback_ran", [keys[0], keys[4]], [job_uuid, _TTL_MS])

    def callbacks_ran(self, batch_id: str, job_uuids: Sequence[str]) -> set[str]:
        if not job_uuids:
            return set()
        found = self._call("callbacks ran", lambda: self.redis.smismember(self.keys(batch_id)[4], list(job_uuids)))
        return {u for u, ran in zip(job_uuids, found) if ran}

    def cancel(self, batch_id: str) -> bool:
        return bool(self._run("cancel", [self.keys(batch_id)[0]], [repr(time.time())]))

    # -- reading ------------------------------------------------------------------------------------
    def find(self, batch_id: str) -> BatchRecord | None:
        keys = self.keys(batch_id)

        def read() -> tuple[list[Any], list[Any]]:
            pipe = self.redis.pipeline(transaction=False)
            pipe.hmget(keys[0], _FIELDS)
            pipe.lrange(keys[2], 0, -1)
            fields, failed = pipe.execute()
            return fields, failed

        fields, failed = self._call("find", read)
        name, total, pending, failed_count, created, cancelled, finished = fields
        if total is None:
            return None
        return BatchRecord(batch_id, _text(name or b""), int(total), int(pending), int(failed_count),
                           _stamp(created) or 0.0, _stamp(cancelled), _stamp(finished),
                           tuple(_text(u) for u in failed))

    def description(self, batch_id: str) -> dict[str, Any] | None:
        text = self._call("description", lambda: self.redis.hget(self.keys(batch_id)[0], "description"))
        return json.loads(text) if text else None

    def ids(self) -> list[str]:
        pattern = _glob_escape(f"{self.base}batch:") + "{*}"

        def run() -> list[str]:
            heads = sorted({_text(k) for k in self.redis.scan_iter(match=pattern, count=1000)})
            if not heads:
                return []
            pipe = self.redis.pipeline(transaction=False)
            for head in heads:
                pipe.hget(head, "created_at")
            created = pipe.execute()
            found = [(_stamp(c) or 0.0, head[len(self.base) + len("batch:{"):-1])
                     for head, c in zip(heads, created) if c is not None]
            return [batch_id for _, batch_id in sorted(found, reverse=True)]

        return self._call("list", run)

    def delete(self, batch_id: str) -> bool:
        return bool(self._call("delete", lambda: self.redis.delete(*self.keys(batch_id))))
