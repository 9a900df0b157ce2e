"""What a running ``eventbus supervise`` publishes about its supervisors, and the commands it
reads back, in the state store of each supervisor's connection.

Every couple of seconds the master writes one entry per supervisor (its queues, how many
processes each has, paused or running) with a short TTL, as workers write theirs
(:mod:`eventbus.monitoring.registry`): a master killed outright simply disappears from
``eventbus supervisors`` once the entry expires. It deletes them when it exits.

``eventbus terminate`` bumps a counter per connection; a master that sees the counter of one of
its connections change finishes the jobs in hand and exits. A counter, not a time stamp: the
clocks of the hosts need not agree.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from eventbus.monitoring import keys
from eventbus.monitoring.registry import ENTRY_TTL_HEARTBEATS, HEARTBEAT_S
from eventbus.state.base import StateStore


@dataclasses.dataclass(frozen=True)
class SupervisorState:
    """One supervisor of one master, as its last heartbeat described it."""

    name: str
    connection: str
    host: str
    pid: int
    queues: tuple[str, ...]
    balance: str | bool
    #: Processes per pool: per queue (``auto``, ``simple``), or one entry ``"q1,q2"`` (``False``).
    processes: dict[str, int]
    min_processes: int
    max_processes: int
    status: str = "running"
    started_at: float = 0.0
    last_heartbeat: float = 0.0

    @property
    def total_processes(self) -> int:
        return sum(self.processes.values())

    @property
    def master(self) -> str:
        """The master that runs it: ``host:pid``."""
        return keys.worker_id(self.host, self.pid)

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "queues": list(self.queues),
                "total_processes": self.total_processes, "master": self.master}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SupervisorState:
        balance = data.get("balance", "auto")
        return cls(
            name=str(data["name"]), connection=str(data["connection"]), host=str(data["host"]),
            pid=int(data["pid"]), queues=tuple(str(q) for q in data["queues"]),
            balance=balance if balance is False else str(balance),
            processes={str(k): int(v) for k, v in dict(data["processes"]).items()},
            min_processes=int(data["min_processes"]), max_processes=int(data["max_processes"]),
            status=str(data.get("status", "running")), started_at=float(data.get("started_at", 0.0)),
            last_heartbeat=float(data.get("last_heartbeat", 0.0)))


class SupervisorRegistry:
    """Read and write the supervisor entries of one connection."""

    def __init__(self, store: StateStore, connection: str, *, heartbeat_s: float = HEARTBEAT_S) -> None:
        self.store = store
        self.connection = connection
        self.entry_ttl_s = heartbeat_s * ENTRY_TTL_HEARTBEATS

    def _entry(self, state: SupervisorState) -> str:
        return f"{keys.supervisors(self.connection)}{state.master}:{keys.part(state.name)}"

    def publish(self, states: list[SupervisorState]) -> None:
        self.store.put_many({self._entry(s): json.dumps(s.to_dict()) for s in states},
                            ttl_s=self.entry_ttl_s)

    def remove(self, state: SupervisorState) -> None:
        self.store.delete(self._entry(state))

    def supervisors(self) -> list[SupervisorState]:
        """Every live supervisor of the connection, by name then host and pid."""
        found = []
        for value in self.store.scan(keys.supervisors(self.connection)).values():
            try:
                found.append(SupervisorState.from_dict(json.loads(value)))
            except (ValueError, KeyError, TypeError):
                continue  # an entry this version cannot read: it expires on its own
        return sorted(found, key=lambda s: (s.name, s.host, s.pid))


def terminations(store: StateStore, connection: str) -> str | None:
    """The terminate counter of ``connection`` (None: never bumped)."""
    return store.get(keys.terminate(connection))


def request_termination(store: StateStore, connection: str) -> None:
    """Tell every master with a supervisor on ``connection`` to finish its jobs and exit."""
    store.incr(keys.terminate(connection))
