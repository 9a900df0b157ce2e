"""The Redis connection options ``wait_replicas`` and ``wait_timeout``: a push acknowledged only
once that many replicas have it.

Redis replicates asynchronously: a master acknowledges a write before its replicas have it, and a
failover (Sentinel promoting a replica) loses what the old master acknowledged and did not pass
on; across a partition, everything it acknowledged until it learnt it was replaced (measured in
``docs/reliability.md``). With ``wait_replicas`` each push (sync and async, one job or a bulk
chunk) is followed, on the same connection, by ``WAIT <replicas> <timeout>``, which answers how
many replicas acknowledged everything that connection wrote. Fewer than asked within
``wait_timeout`` seconds raises :class:`~eventbus.errors.NotReplicatedError`: the job is queued
on the master, in doubt, and the app knows. The driver does not send it again: a second push
finds the job queued, writes nothing, and its ``WAIT`` would prove nothing about the first.

One server or Sentinel only: on a cluster the ``WAIT`` would have to follow each push on the
connection of its master, and ``min-replicas-to-write`` on the masters is Redis's own tool there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from eventbus.errors import ConfigurationError, NotReplicatedError
from eventbus.queue.redis.topology import Topology


def check_options(name: str, config: Mapping[str, Any], topology: Topology, *, socket_timeout_s: float) -> None:
    """One ConfigurationError naming the option when ``wait_replicas``/``wait_timeout`` are wrong."""
    replicas, timeout = config["wait_replicas"], config["wait_timeout"]
    if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 0:
        raise ConfigurationError(f"connection {name!r}: 'wait_replicas' must be a number of replicas >= 0",
                                 connection=name)
    if (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
            or not 0 < timeout < socket_timeout_s):
        raise ConfigurationError(f"connection {name!r}: 'wait_timeout' must be seconds above 0 and below "
                                 f"{socket_timeout_s:g}", connection=name)
    if replicas and topology.cluster:
        raise ConfigurationError(
            f"connection {name!r}: 'wait_replicas' needs one server or Sentinel; on a cluster set "
            "min-replicas-to-write on the masters instead", connection=name)


def wait_command(replicas: int, timeout_ms: int) -> tuple[str, int, int]:
    return ("WAIT", replicas, timeout_ms)


def judge(acked: Any, replicas: int, timeout_ms: int, job_uuid: str, connection: str) -> None:
    """Raise NotReplicatedError when ``acked`` (WAIT's reply) is fewer than ``replicas``."""
    if isinstance(acked, Exception):
        raise acked
    if int(acked) < replicas:
        raise NotReplicatedError(
            f"{int(acked)} of {replicas} replicas acknowledged the push of job {job_uuid} on connection "
            f"{connection!r} within {timeout_ms / 1000:g}s (wait_replicas): it is queued on the master, "
            "and a failover now could lose it", job_uuid=job_uuid, connection=connection)
