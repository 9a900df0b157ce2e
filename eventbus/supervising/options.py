"""Supervisors as configured: ``configure(supervisors={...})`` or a TOML file given to
``eventbus supervise --config``, checked once into frozen :class:`SupervisorOptions`.

Each supervisor names a connection, its queues (in priority order), how it balances its
processes over them and the options of its workers. Anything wrong (a key that does not exist,
``min_processes`` above ``max_processes``, an unknown balance or connection) is one
:class:`~eventbus.errors.ConfigurationError` naming the supervisor and the key.
"""

from __future__ import annotations

import dataclasses
import difflib
import tomllib
from collections.abc import Mapping
from typing import Any

from eventbus.errors import ConfigurationError

#: ``auto``: processes follow each queue's time to clear; ``simple``: ``max_processes`` split
#: evenly over the queues; ``False``: ``max_processes`` workers that each take every queue in order.
BALANCES: tuple[str | bool, ...] = ("auto", "simple", False)


@dataclasses.dataclass(frozen=True, kw_only=True)
class SupervisorOptions:
    """One supervisor. Durations are seconds; ``memory`` is MB (as ``eventbus work --memory``)."""

    name: str
    connection: str
    queues: tuple[str, ...]
    balance: str | bool = "auto"
    #: ``auto``: the fewest processes each queue keeps (Horizon's ``minProcesses``).
    min_processes: int = 1
    #: The most processes of the whole supervisor.
    max_processes: int = 1
    #: Seconds between two changes of the process counts (``auto``).
    balance_cooldown: float = 3.0
    #: Processes added to or removed from one queue per change (``auto``).
    balance_max_shift: int = 1
    tries: int = 1
    timeout: float = 60.0
    memory: float = 128.0
    sleep: float = 3.0
    concurrency: int = 1

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "queues": list(self.queues)}

    def table(self) -> dict[str, Any]:
        """Its settings as ``configure(supervisors={name: ...})`` takes them."""
        return {key: value for key, value in self.to_dict().items() if key != "name"}


#: The keys a supervisor's table may hold.
KEYS = tuple(f.name for f in dataclasses.fields(SupervisorOptions) if f.name != "name")
_COUNTS = {"min_processes": 0, "max_processes": 1, "balance_max_shift": 1, "tries": 0, "concurrency": 1}
_SECONDS = ("balance_cooldown", "timeout", "memory", "sleep")


def checked_supervisors(given: Any, connections: Mapping[str, Mapping[str, Any]],
                        default: str) -> dict[str, SupervisorOptions]:
    """``configure(supervisors=...)``: a dict of supervisor name -> its settings dict."""
    if given is None:
        return {}
    if not isinstance(given, Mapping):
        raise ConfigurationError("'supervisors' must be a dict of name -> supervisor settings, "
                                 f"not {type(given).__name__}")
    return {str(name): checked_supervisor(str(name), table, connections, default)
            for name, table in given.items()}


def checked_supervisor(name: str, table: Any, connections: Mapping[str, Mapping[str, Any]],
                       default: str) -> SupervisorOptions:
    where = f"supervisor {name!r}"
    if not name or not name.isprintable() or any(c in name for c in " ,:"):
        raise ConfigurationError(f"{where}: a supervisor's name is one word (no spaces, commas or colons)")
    if not isinstance(table, Mapping):
        raise ConfigurationError(f"{where} must be a dict of settings, not {type(table).__name__}")
    _refuse_unknown_keys(where, table)
    connection = str(table.get("connection") or default)
    if connection not in connections:
        raise ConfigurationError(f"{where}: unknown connection {connection!r} "
                                 f"(configured: {', '.join(sorted(connections))})", connection=connection)
    options: dict[str, Any] = {key: _number(where, key, table[key]) for key in (*_COUNTS, *_SECONDS)
                               if key in table}
    found = SupervisorOptions(
        name=name, connection=connection,
        queues=_queues(where, table.get("queues"), str(connections[connection].get("queue", "default"))),
        balance=_balance(where, table.get("balance", "auto")), **options)
    if found.min_processes > found.max_processes:
        raise ConfigurationError(f"{where}: min_processes ({found.min_processes}) is more than "
                                 f"max_processes ({found.max_processes})")
    return found


def _refuse_unknown_keys(where: str, table: Mapping[str, Any]) -> None:
    for key in table:
        if key not in KEYS:
            hint = difflib.get_close_matches(str(key), KEYS, n=1)
            suggestion = f" (did you mean {hint[0]!r}?)" if hint else ""
            raise ConfigurationError(f"{where}: unknown key {key!r}{suggestion}; a supervisor takes "
                                     f"{', '.join(KEYS)}")


def _queues(where: str, given: Any, default: str) -> tuple[str, ...]:
    """A list of names or one comma-separated string (``"high,default"``), in priority order."""
    if given is None:
        return (default,)
    names = given.split(",") if isinstance(given, str) else given
    if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
        raise ConfigurationError(f"{where}: 'queues' must be a list of queue names, not {given!r:.60}")
    queues = tuple(dict.fromkeys(n.strip() for n in names if n.strip()))
    if not queues:
        raise ConfigurationError(f"{where}: 'queues' names no queue")
    return queues


def _balance(where: str, given: Any) -> str | bool:
    if given is False or (isinstance(given, str) and given in BALANCES):
        return given
    raise ConfigurationError(f"{where}: unknown balance {given!r}; use \"auto\", \"simple\" or false")


def _number(where: str, key: str, value: Any) -> int | float:
    """A whole number at least its minimum (counts), or seconds or MB (0 disables a limit)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigurationError(f"{where}: {key!r} must be a number, not {value!r:.60}")
    if key in _COUNTS:
        if value != int(value) or value < _COUNTS[key]:
            raise ConfigurationError(f"{where}: {key!r} must be a whole number of at least "
                                     f"{_COUNTS[key]}, not {value!r}")
        return int(value)
    if value < 0:
        raise ConfigurationError(f"{where}: {key!r} must be 0 or more, not {value!r}")
    return float(value)


def load_toml(path: str) -> dict[str, Any]:
    """The ``[supervisors.NAME]`` tables of a TOML file, as ``configure(supervisors=...)`` takes them."""
    try:
        with open(path, "rb") as file:
            document = tomllib.load(file)
    except OSError as exc:
        raise ConfigurationError(f"cannot read --config {path!r}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError(f"--config {path!r} is not valid TOML: {exc}") from None
    unknown = sorted(set(document) - {"supervisors"})
    if unknown:
        raise ConfigurationError(f"--config {path!r}: unknown table {unknown[0]!r}; "
                                 "the file holds [supervisors.NAME] tables")
    supervisors = document.get("supervisors", {})
    if not supervisors:
        raise ConfigurationError(f"--config {path!r} declares no supervisor ([supervisors.NAME])")
    return dict(supervisors)
