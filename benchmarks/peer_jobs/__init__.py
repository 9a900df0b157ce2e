"""The peers the side-by-side benchmark runs: one module each, holding the job and how to drive it.

This module is only a table (no third-party import), so ``peers.py`` can read it from any Python
before the peers are installed. Each peer module defines the job (one ``INCR`` of a Redis counter,
or one ``UPDATE`` of a PostgreSQL counter row), the idle-latency job (push a timestamp), for the
async-native peers a job that awaits 50 ms, and a ``Peer`` class the harness drives:
``dispatch(n)``, ``bulk(n)``, ``enqueue_stamp()``, ``enqueue_waits(n)`` and
``worker_commands(processes, burst=..., setting=...)``, with the peer's concurrency settings
(``default_setting``, ``settings``, ``async_setting``) as class attributes.
"""

from __future__ import annotations

import dataclasses

AT_LEAST_ONCE = "at-least-once"
AT_MOST_ONCE = "at-most-once"


@dataclasses.dataclass(frozen=True)
class PeerSpec:
    """One entry of the comparison: which module drives it, on which backend, needing which packages,
    and what it promises about a job whose worker dies (a fact of the library, so it is known even
    when the peer fails to install)."""

    name: str
    module: str
    backend: str  # "redis" or "postgres"
    requirements: tuple[str, ...] = ()
    floor: bool = False  # bare client loops, not a queue
    delivery: str = AT_LEAST_ONCE
    acks: str = ""  # how and when it acknowledges, for the note under the table
    async_native: bool = False  # measured in the async I/O column
    npm: tuple[str, ...] = ()  # Node packages, installed with npm into the environment
    python: tuple[int, int] | None = None  # the least Python the peer installs on
    env: str = ""  # the environment's name where the first requirement does not give it

    @property
    def env_name(self) -> str:
        """The throwaway environment it runs in: one per peer library (their pins conflict: arq wants
        redis-py < 6, Celery's kombu a newer one), eventbus alone for eventbus and the floor."""
        if self.env:
            return self.env
        if not self.requirements:
            return "eventbus"
        return self.requirements[0].split("[")[0].split(">")[0].split("=")[0].split("<")[0]


PEERS: tuple[PeerSpec, ...] = (
    PeerSpec("eventbus", "peer_jobs.eventbus_redis", "redis", async_native=True,
             acks="one script call deletes a batch of finished jobs; a reservation expires after "
                  "retry_after and the job runs again"),
    PeerSpec("bullmq-node", "peer_jobs.bullmq_node", "redis", npm=("bullmq@6.7", "ioredis@5"), env="bullmq-node",
             acks="moveToFinished after the job; the lock expires and the stalled-job check puts it "
                  "back (maxStalledCount 1)"),
    PeerSpec("bullmq", "peer_jobs.bullmq_py", "redis", ("bullmq==3.4.*",),
             acks="moveToFinished after the job; stalled jobs go back to wait, as in BullMQ for Node"),
    PeerSpec("taskiq", "peer_jobs.taskiq_redis", "redis", ("taskiq==0.13.*", "taskiq-redis"),
             async_native=True,
             acks="RedisStreamBroker: XACK once the result is saved (ack type when_saved); XAUTOCLAIM "
                  "re-delivers messages idle 10 minutes"),
    PeerSpec("saq", "peer_jobs.saq_redis", "redis", ("saq==0.26.*",), delivery=AT_MOST_ONCE,
             async_native=True,
             acks="BLMOVE to an active list, LREM after; the sweep aborts a stuck job instead of "
                  "re-running it (retries defaults to 1 attempt)"),
    PeerSpec("streaq", "peer_jobs.streaq_redis", "redis", ("streaq==7.2.*",), async_native=True,
             acks="XACK after the job; idle messages are claimed again after idle_timeout (60 s)"),
    PeerSpec("huey", "peer_jobs.huey_redis", "redis", ("huey>=3",), delivery=AT_MOST_ONCE,
             acks="BRPOP takes the message off the list before the job runs"),
    PeerSpec("dramatiq", "peer_jobs.dramatiq_redis", "redis", ("dramatiq[redis]>=2",),
             acks="acks after the job; a dead worker's unacked messages are requeued by the others' "
                  "heartbeat check"),
    PeerSpec("rq", "peer_jobs.rq_redis", "redis", ("rq>=2",), delivery=AT_MOST_ONCE,
             acks="a dead worker's job is moved to the failed registry as abandoned, not run again "
                  "(unless Retry is set)"),
    PeerSpec("celery", "peer_jobs.celery_redis", "redis", ("celery[redis]>=5",), delivery=AT_MOST_ONCE,
             acks="acks before the job by default (task_acks_late = False)"),
    PeerSpec("arq", "peer_jobs.arq_redis", "redis", ("arq",), async_native=True,
             acks="the job stays in the queue until done; an in-progress key expires and it runs again"),
    PeerSpec("redis-py loops", "peer_jobs.redis_floor", "redis", floor=True, async_native=True,
             acks="the drain loop: BLMOVE to a processing list, the job, LREM"),
    PeerSpec("eventbus-pg", "peer_jobs.eventbus_pg", "postgres",
             acks="finished rows deleted with the next reservation; an expired reservation runs again"),
    PeerSpec("procrastinate", "peer_jobs.procrastinate_pg", "postgres", ("procrastinate[psycopg]>=3",),
             delivery="at-least-once if the app retries stalled jobs",
             acks="the row is marked done after the job; a dead worker's job stays 'doing' until the "
                  "app retries stalled jobs (its docs suggest a periodic task)"),
    PeerSpec("pgqueuer", "peer_jobs.pgqueuer_pg", "postgres", ("pgqueuer[asyncpg]",),
             acks="the row is logged and deleted after the job; a picked job whose heartbeat is older "
                  "than heartbeat_timeout (30 s) is picked again"),
    PeerSpec("psycopg-loops", "peer_jobs.pg_floor", "postgres", floor=True,
             acks="the drain loop: the row taken (DELETE ... SKIP LOCKED), the job and the commit in "
                  "one transaction"),
    PeerSpec("oban", "peer_jobs.oban_pg", "postgres", ("oban",), python=(3, 12),
             acks="the row is marked completed after the job; Lifeline rescues executing jobs after "
                  "300 s"),
)

#: Old names of peers, so ``--only`` and saved runs keep working.
ALIASES = {"redis-py EVALSHA loop": "redis-py loops", "floor": "redis-py loops", "pg-floor": "psycopg-loops"}


def by_name(name: str) -> PeerSpec:
    name = ALIASES.get(name, name)
    for spec in PEERS:
        if spec.name == name:
            return spec
    raise KeyError(name)
