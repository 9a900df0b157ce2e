"""What the Redis paths (sync, over the wire, and async) count as a lost connection, and the one
error they all raise for it."""

from __future__ import annotations

import redis
from redis.exceptions import ClusterDownError, RedisClusterException

from eventbus.errors import ConnectionUnavailableError
from eventbus.urls import redact_url

#: A lost or refused connection, a server that stalls, and a cluster that cannot serve the slot
#: now: ``CLUSTERDOWN`` (no master for some slot, or a failover going on), a slot no node covers,
#: or no seed answering while the client learns the cluster's layout. The Sentinel client's
#: "no master found" and "the previous master is now a replica" are connection errors too.
LOST_CONNECTION = (redis.ConnectionError, redis.TimeoutError, ConnectionError, TimeoutError, ClusterDownError,
                   RedisClusterException)


def unavailable(url: str, connection: str, action: str, exc: BaseException) -> ConnectionUnavailableError:
    """The error for ``action`` on ``connection`` when its server at ``url`` did not answer."""
    return ConnectionUnavailableError(
        f"cannot reach Redis at {redact_url(url)} for connection {connection!r} ({action}): {exc}",
        connection=connection,
    )
