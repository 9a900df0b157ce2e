"""What the Redis paths (sync, over the wire, and async) count as a lost connection, and the one
error they all raise for it."""

from __future__ import annotations

import redis
from redis.exceptions import ClusterDownError

from eventbus.errors import ConnectionUnavailableError
from eventbus.urls import redact_url

LOST_CONNECTION = (redis.ConnectionError, redis.TimeoutError, ConnectionError, TimeoutError, ClusterDownError)


def unavailable(url: str, connection: str, action: str, exc: BaseException) -> ConnectionUnavailableError:
    """The error for ``action`` on ``connection`` when its server at ``url`` did not answer."""
    return ConnectionUnavailableError(
        f"cannot reach Redis at {redact_url(url)} for connection {connection!r} ({action}): {exc}",
        connection=connection,
    )
