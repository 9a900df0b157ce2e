"""The peers the side-by-side benchmark runs: one module each, holding the job and how to drive it.

This module is only a table (no third-party import), so ``peers.py`` can read it from any Python
before the peers are installed. Each peer module defines the job (one ``INCR`` of a Redis counter,
or one ``UPDATE`` of a PostgreSQL counter row), the idle-latency job (push a timestamp) and a
``Peer`` class the harness drives: ``dispatch(n)``, ``bulk(n)``, ``enqueue_stamp()`` and
``worker_commands(processes, burst=...)``.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class PeerSpec:
    """One entry of the comparison: which module drives it, on which backend, needing which packages."""

    name: str
    module: str
    backend: str  # "redis" or "postgres"
    requirements: tuple[str, ...] = ()
    floor: bool = False  # a bare client loop, not a queue: dispatch only

    @property
    def env_name(self) -> str:
        """The throwaway environment it runs in: one per peer library (their pins conflict: arq wants
        redis-py < 6, Celery's kombu a newer one), eventbus alone for eventbus and the floor."""
        if not self.requirements:
            return "eventbus"
        return self.requirements[0].split("[")[0].split(">")[0].split("=")[0]


PEERS: tuple[PeerSpec, ...] = (
    PeerSpec("eventbus", "peer_jobs.eventbus_redis", "redis"),
    PeerSpec("huey", "peer_jobs.huey_redis", "redis", ("huey>=3",)),
    PeerSpec("dramatiq", "peer_jobs.dramatiq_redis", "redis", ("dramatiq[redis]>=2",)),
    PeerSpec("rq", "peer_jobs.rq_redis", "redis", ("rq>=2",)),
    PeerSpec("celery", "peer_jobs.celery_redis", "redis", ("celery[redis]>=5",)),
    PeerSpec("arq", "peer_jobs.arq_redis", "redis", ("arq",)),
    PeerSpec("redis-py EVALSHA loop", "peer_jobs.redis_floor", "redis", floor=True),
    PeerSpec("eventbus-pg", "peer_jobs.eventbus_pg", "postgres"),
    PeerSpec("procrastinate", "peer_jobs.procrastinate_pg", "postgres", ("procrastinate[psycopg]>=3",)),
    PeerSpec("pgqueuer", "peer_jobs.pgqueuer_pg", "postgres", ("pgqueuer[asyncpg]",)),
)


def by_name(name: str) -> PeerSpec:
    for spec in PEERS:
        if spec.name == name:
            return spec
    raise KeyError(name)
