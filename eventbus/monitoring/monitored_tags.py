"""Monitored tags (Horizon's): ``eventbus tags watch|unwatch|list`` and the dashboard's tags pages.

A tag is watched on every connection workers consume (or those named): each connection's
recent-jobs store (:mod:`eventbus.tracking`) then keeps the jobs carrying it for
``retention["monitored"]`` seconds (a week by default) instead of an hour, and counts them.
Workers read the monitored tags with each batch they record, so a watch applies within a
heartbeat or two.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from eventbus import runtime
from eventbus.errors import EventBusError
from eventbus.monitoring.status import connections
from eventbus.tracking.records import JobRecord, valid_tag
from eventbus.tracking.repository import JobRepository
from eventbus.tracking.stores import repository


@dataclasses.dataclass(frozen=True)
class MonitoredTag:
    """One monitored tag and how many recorded jobs carry it, over the connections looked at."""

    tag: str
    count: int
    connections: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"tag": self.tag, "count": self.count, "connections": list(self.connections)}


def _repositories(names: Sequence[str] | None, problems: list[str]) -> list[JobRepository]:
    found = []
    for name in connections(names):
        try:
            found.append(repository(name))
        except TypeError as exc:  # a state store that keeps no recent jobs
            problems.append(f"{name}: {exc}")
    return found


def watch(tag: str, names: Sequence[str] | None = None) -> list[str]:
    """Monitor ``tag`` on each connection; the connections where it was not monitored yet.
    ValueError for a tag that cannot be one; EventBusError when a store cannot be reached."""
    valid_tag(tag)
    problems: list[str] = []
    added = [repo.connection for repo in _repositories(names, problems) if repo.watch(tag)]
    if problems:
        raise EventBusError("; ".join(problems))
    return added


def unwatch(tag: str, names: Sequence[str] | None = None) -> list[str]:
    """Stop monitoring ``tag``; the connections where it was monitored."""
    valid_tag(tag)
    problems: list[str] = []
    removed = [repo.connection for repo in _repositories(names, problems) if repo.unwatch(tag)]
    if problems:
        raise EventBusError("; ".join(problems))
    return removed


def monitored(names: Sequence[str] | None = None) -> tuple[list[MonitoredTag], list[str]]:
    """Every monitored tag with its count, by tag; and the problems met (a store that did not
    answer is a problem line, the others are still listed)."""
    problems: list[str] = []
    counts: dict[str, int] = {}
    where: dict[str, list[str]] = {}
    retention = runtime.settings().retention_s
    for repo in _repositories(names, problems):
        try:
            for tag in repo.monitored():
                counts[tag] = counts.get(tag, 0) + repo.count(tag, retention)
                where.setdefault(tag, []).append(repo.connection)
        except EventBusError as exc:
            problems.append(f"recent jobs of {repo.connection}: {exc}")
    return [MonitoredTag(tag, counts[tag], tuple(where[tag])) for tag in sorted(counts)], problems


def tagged_jobs(tag: str, names: Sequence[str] | None = None, *, status: str | None = None,
                limit: int = 50) -> tuple[list[JobRecord], list[str]]:
    """The recorded jobs carrying ``tag`` (completed and failed, or of ``status``), newest
    first, at most ``limit``; and the problems met."""
    valid_tag(tag)
    problems: list[str] = []
    found: list[JobRecord] = []
    for repo in _repositories(names, problems):
        try:
            found.extend(repo.recent(status, tag=tag, limit=limit))
        except EventBusError as exc:
            problems.append(f"recent jobs of {repo.connection}: {exc}")
    found.sort(key=lambda r: r.finished_at, reverse=True)
    return found[:limit], problems
