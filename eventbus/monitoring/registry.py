"""The worker registry: each running worker's entry in its connection's state store.

A worker writes its entry (who it is, its queues, the job it runs, its counts) every couple of
seconds with a short TTL (7.5 heartbeats: 15 s), and deletes it when it stops. A worker that
dies without a word (kill -9, a lost host) simply stops writing and its entry expires (Horizon's
heartbeat, without a sweeper).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from eventbus.monitoring import keys
from eventbus.state.base import StateStore

HEARTBEAT_S = 2.0
#: An entry outlives this many missed heartbeats.
ENTRY_TTL_HEARTBEATS = 7.5
RECENT_TTL_S = 3600.0


@dataclasses.dataclass(frozen=True)
class CurrentJob:
    """The job a worker is running."""

    name: str
    uuid: str
    queue: str
    attempt: int
    started_at: float

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class WorkerInfo:
    """One running worker as its last heartbeat described it."""

    name: str
    host: str
    pid: int
    connection: str
    queues: tuple[str, ...]
    started_at: float
    status: str = "idle"
    processed: int = 0
    failed: int = 0
    last_heartbeat: float = 0.0
    job: CurrentJob | None = None
    #: The supervisor of ``eventbus supervise`` that runs this worker ("" for ``eventbus work``).
    supervisor: str = ""

    @property
    def id(self) -> str:
        return keys.worker_id(self.host, self.pid)

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["queues"] = list(self.queues)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WorkerInfo:
        job = data.get("job")
        return cls(
            name=str(data["name"]), host=str(data["host"]), pid=int(data["pid"]),
            connection=str(data["connection"]), queues=tuple(str(q) for q in data["queues"]),
            started_at=float(data["started_at"]), status=str(data.get("status", "idle")),
            processed=int(data.get("processed", 0)), failed=int(data.get("failed", 0)),
            last_heartbeat=float(data.get("last_heartbeat", 0.0)),
            job=CurrentJob(**job) if isinstance(job, dict) else None,
            supervisor=str(data.get("supervisor", "")))


@dataclasses.dataclass(frozen=True)
class FinishedJob:
    """One finished attempt, as the recent jobs list shows it."""

    uuid: str
    name: str
    queue: str
    status: str
    attempt: int
    runtime_s: float
    wait_s: float | None
    finished_at: float
    worker: str
    connection: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class WorkerRegistry:
    """Read and write worker entries of one connection."""

    def __init__(self, store: StateStore, connection: str, *, heartbeat_s: float = HEARTBEAT_S) -> None:
        self.store = store
        self.connection = connection
        self.entry_ttl_s = heartbeat_s * ENTRY_TTL_HEARTBEATS

    def _entry(self, info: WorkerInfo) -> str:
        return keys.workers(self.connection) + info.id

    def heartbeat(self, info: WorkerInfo, recent: list[FinishedJob] | None = None) -> None:
        """Write the worker's entry (and its recent jobs, when they changed) in one round trip."""
        self.store.put_many({self._entry(info): json.dumps(info.to_dict())}, ttl_s=self.entry_ttl_s)
        if recent is not None:
            self.store.put(keys.recent(self.connection) + info.id,
                           json.dumps([job.to_dict() for job in recent]), ttl_s=RECENT_TTL_S)

    def remove(self, info: WorkerInfo) -> None:
        self.store.delete(self._entry(info))

    def workers(self) -> list[WorkerInfo]:
        """Every live worker of the connection, by name then host and pid."""
        found = []
        for value in self.store.scan(keys.workers(self.connection)).values():
            try:
                found.append(WorkerInfo.from_dict(json.loads(value)))
            except (ValueError, KeyError, TypeError):
                continue  # an entry this version cannot read: skip it, it expires on its own
        return sorted(found, key=lambda w: (w.name, w.host, w.pid))

    def recent_jobs(self) -> list[FinishedJob]:
        """The last finished jobs of every worker (live or stopped in the last hour), newest first."""
        jobs: list[FinishedJob] = []
        for value in self.store.scan(keys.recent(self.connection)).values():
            try:
                jobs.extend(FinishedJob(**item) for item in json.loads(value))
            except (ValueError, KeyError, TypeError):
                continue
        return sorted(jobs, key=lambda j: j.finished_at, reverse=True)
