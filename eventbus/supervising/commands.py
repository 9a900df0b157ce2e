"""Operating supervisors from outside: list them, pause and continue them, terminate their
masters. The library side of ``eventbus supervisors``, ``eventbus supervise pause|continue`` and
``eventbus terminate``, and of the dashboard's supervisors page; each returns what it did.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from eventbus import runtime
from eventbus.errors import ConfigurationError, EventBusError
from eventbus.monitoring import pausing
from eventbus.supervising.options import SupervisorOptions, checked_supervisors, load_toml
from eventbus.supervising.state import SupervisorRegistry, SupervisorState, request_termination


def declared(config_file: str | None = None) -> dict[str, SupervisorOptions]:
    """The supervisors of ``configure(supervisors=...)``, and those of a TOML file (which win
    by name)."""
    settings = runtime.settings()
    found = dict(settings.supervisors)
    if config_file:
        found.update(checked_supervisors(load_toml(config_file), settings.connections, settings.default))
    return found


def connections_of(supervisors: Iterable[SupervisorOptions] = ()) -> list[str]:
    """Where supervisors may run: the connections workers consume, and those named."""
    names = runtime.connection_names(with_workers=True)
    return [*names, *sorted({s.connection for s in supervisors} - set(names))]


@dataclasses.dataclass(frozen=True)
class Running:
    """The supervisors running now, and the connections that could not be read."""

    supervisors: list[SupervisorState]
    problems: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {"supervisors": [s.to_dict() for s in self.supervisors], "problems": self.problems}


def running(connections: Iterable[str]) -> Running:
    found: list[SupervisorState] = []
    problems: list[str] = []
    for name in connections:
        try:
            found.extend(SupervisorRegistry(runtime.state(name), name).supervisors())
        except EventBusError as exc:
            problems.append(f"{name}: {exc}")
    return Running(sorted(found, key=lambda s: (s.name, s.connection, s.host, s.pid)), problems)


def targets(name: str | None, supervisors: Mapping[str, SupervisorOptions],
            connections: Iterable[str]) -> list[tuple[str, str]]:
    """``(connection, supervisor)`` pairs that ``name`` (None: every supervisor) stands for:
    those declared and those running. ConfigurationError for a name that is neither."""
    pairs = {(s.connection, s.name) for s in supervisors.values()}
    pairs |= {(s.connection, s.name) for s in running(connections).supervisors}
    chosen = sorted(p for p in pairs if name is None or p[1] == name)
    if name is not None and not chosen:
        known = ", ".join(sorted({n for _, n in pairs})) or "none"
        raise ConfigurationError(f"no supervisor named {name!r} (declared or running: {known})")
    return chosen


def pause(pairs: Iterable[tuple[str, str]]) -> list[str]:
    """Pause each supervisor: its workers finish their job and take no other (within a
    second); its master stops balancing it. Returns the names paused."""
    pairs = list(pairs)
    for connection, name in pairs:
        pausing.pause_supervisor(runtime.state(connection), connection, name)
    return sorted({name for _, name in pairs})


def resume(pairs: Iterable[tuple[str, str]]) -> list[str]:
    """Continue paused supervisors; returns the names that were paused."""
    return sorted({name for connection, name in pairs
                   if pausing.continue_supervisor(runtime.state(connection), connection, name)})


def terminate(connections: Iterable[str]) -> list[str]:
    """Tell every master on these connections to finish the jobs in hand and exit (its process
    manager starts it again, with the code deployed meanwhile). Returns the connections told."""
    told = []
    for connection in connections:
        request_termination(runtime.state(connection), connection)
        told.append(connection)
    return told
