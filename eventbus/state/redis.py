"""The state store in Redis: one key per entry under ``{prefix}state:``, beside the queues.

It uses the queue connection's own client and prefix, so an app's state lives and goes with its
queues (another app sharing the database with another prefix never sees it). Each operation is
one command (``SET NX PX`` for ``add``) or one short Lua script touching one key, so it runs on
Redis Cluster too; expiry is Redis's own.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from importlib import resources
from typing import Any, TypeVar

from redis.cluster import RedisCluster

from eventbus.errors import ConnectionUnavailableError
from eventbus.queue.redis.errors import LOST_CONNECTION as _LOST
from eventbus.state.base import StateStore

T = TypeVar("T")


@functools.cache
def _script(name: str) -> str:
    """A script's source, read once per process (and by a supervisor for its forked workers)."""
    return resources.files("eventbus.state").joinpath(f"lua/{name}.lua").read_text()


def prepare_fork() -> None:
    """Read the scripts before a supervisor forks its workers (see ``Queue.prepare_fork``)."""
    for name in ("incr", "delete_if"):
        _script(name)


def _ms(ttl_s: float | None) -> int | None:
    return None if ttl_s is None else max(int(round(ttl_s * 1000)), 1)


def _glob_escape(text: str) -> str:
    return "".join(f"\\{c}" if c in "*?[]\\" else c for c in text)


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value


class RedisStateStore(StateStore):
    """State under ``{prefix}state:`` on an existing client (which stays open on close)."""

    def __init__(self, client: Any, prefix: str = "", *, name: str = "redis") -> None:
        self.redis = client
        self.base = f"{prefix}state:"
        self.name = name
        self._incr_script = client.register_script(_script("incr"))
        self._delete_if_script = client.register_script(_script("delete_if"))

    def _key(self, key: str) -> str:
        return self.base + key

    def _call(self, action: str, fn: Callable[[], T]) -> T:
        try:
            return fn()
        except _LOST as exc:
            raise ConnectionUnavailableError(
                f"cannot reach Redis for the state store of {self.name!r} ({action}): {exc}",
                connection=self.name) from exc

    def _get(self, key: str) -> str | None:
        found = self._call("get", lambda: self.redis.get(self._key(key)))
        return None if found is None else _text(found)

    def _put(self, key: str, value: str, ttl_s: float | None) -> None:
        self._call("put", lambda: self.redis.set(self._key(key), value, px=_ms(ttl_s)))

    def _add(self, key: str, value: str, ttl_s: float | None) -> bool:
        return bool(self._call("add", lambda: self.redis.set(self._key(key), value, nx=True,
                                                            px=_ms(ttl_s))))

    def _delete(self, key: str) -> bool:
        return bool(self._call("delete", lambda: self.redis.delete(self._key(key))))

    def _delete_if(self, key: str, value: str) -> bool:
        return bool(self._call("delete_if", lambda: self._delete_if_script(
            keys=[self._key(key)], args=[value])))

    def _incr_args(self, amount: float, ttl_s: float | None) -> list[Any]:
        ms = _ms(ttl_s)
        return [repr(amount), "" if ms is None else str(ms)]

    def _incr(self, key: str, amount: float, ttl_s: float | None) -> float:
        value = self._call("incr", lambda: self._incr_script(keys=[self._key(key)],
                                                             args=self._incr_args(amount, ttl_s)))
        return float(value)

    def _scan(self, prefix: str) -> dict[str, str]:
        pattern = _glob_escape(self.base + prefix) + "*"

        def run() -> dict[str, str]:
            keys = sorted(_text(k) for k in self.redis.scan_iter(match=pattern, count=1000))
            if not keys:
                return {}
            pipe = self.redis.pipeline(transaction=False)
            for key in keys:
                pipe.get(key)
            values = pipe.execute()
            return {k[len(self.base):]: _text(v) for k, v in zip(keys, values) if v is not None}

        return self._call("scan", run)

    def _put_many(self, items: dict[str, str], ttl_s: float | None) -> None:
        if isinstance(self.redis, RedisCluster):  # keys on several slots: one at a time
            super()._put_many(items, ttl_s)
            return

        def run() -> None:
            pipe = self.redis.pipeline(transaction=False)
            for key, value in items.items():
                pipe.set(self._key(key), value, px=_ms(ttl_s))
            pipe.execute()

        self._call("put_many", run)

    def _incr_many(self, amounts: dict[str, float], ttl_s: float | None) -> None:
        if isinstance(self.redis, RedisCluster):
            super()._incr_many(amounts, ttl_s)
            return

        def run() -> None:
            pipe = self.redis.pipeline(transaction=False)
            for key, amount in amounts.items():
                self._incr_script(keys=[self._key(key)], args=self._incr_args(amount, ttl_s),
                                  client=pipe)
            pipe.execute()

        self._call("incr_many", run)
