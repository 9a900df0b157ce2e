"""Settings as data: the arguments of ``configure(...)``, the EVENTBUS_* environment, the defaults.

This module only computes and validates; it holds no state (that is :mod:`eventbus.runtime`).
Every problem is one :class:`ConfigurationError` sentence naming the key. The facts about each
driver (its options and their defaults, whether it needs a URL, where its failed jobs live) come
from the driver's class through :mod:`eventbus.queue.drivers`.
"""

from __future__ import annotations

import dataclasses
import datetime
import difflib
import math
import os
from collections.abc import Iterable, Mapping
from typing import Any

from eventbus.errors import ConfigurationError
from eventbus.queue.drivers import driver_class
from eventbus.supervising.options import SupervisorOptions, checked_supervisors
from eventbus.urls import REDACTED, is_secret_name, redact_url

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
DEFAULT_SQLITE_URL = "sqlite:///eventbus.sqlite3"

#: The keyword arguments ``configure()`` takes.
SETTING_NAMES = ("default", "connections", "failed", "mail", "sms", "trusted", "key", "previous_keys",
                 "mail_from", "middleware", "waits", "alerts", "alert_cooldown", "supervisors",
                 "metrics_retention", "retention", "silenced")
#: Keys that signed (and sealed) payloads before the current one, comma-separated.
PREVIOUS_KEYS_ENV = "EVENTBUS_PREVIOUS_KEYS"
#: Long-wait limits, ``connection:queue=seconds`` pairs separated by commas.
WAITS_ENV = "EVENTBUS_WAITS"
#: Where alerts go, ``channel=route`` pairs separated by commas (``mail=ops@example.com``).
ALERTS_ENV = "EVENTBUS_ALERTS"
ALERT_COOLDOWN_ENV = "EVENTBUS_ALERT_COOLDOWN"
#: Seconds between two alerts about the same queue, unless configured.
DEFAULT_ALERT_COOLDOWN_S = 600.0
METRICS_RETENTION_ENV = "EVENTBUS_METRICS_RETENTION"
#: Seconds the per-minute metrics snapshots are kept (the dashboard's 24 h and 7 d ranges).
DEFAULT_METRICS_RETENTION_S = 7 * 24 * 3600.0
#: Seconds the recent-jobs store keeps a finished job (Horizon's ``trim`` settings): completed
#: jobs an hour, failed ones and those carrying a monitored tag a week.
DEFAULT_RETENTION_S = {"completed": 3600.0, "failed": 7 * 86400.0, "monitored": 7 * 86400.0}


@dataclasses.dataclass(frozen=True)
class Settings:
    """The resolved configuration of the default bus. Its repr hides the key and URL passwords."""

    default: str
    #: Every connection by name: those in use checked by their driver, with its defaults filled
    #: in; the built-in templates the app does not use as given (checked when first asked for
    #: with :meth:`connection_config`, so that their driver and its client library are imported
    #: only then: an app on Redis never loads SQLAlchemy for the ``database`` template).
    connections: Mapping[str, Mapping[str, Any]]
    failed: str
    mail: str
    sms: str
    key: str | None = dataclasses.field(default=None, repr=False)
    mail_from: str = "eventbus@localhost"
    #: Keys that signed payloads before ``key`` (a rotation): still accepted, never used to sign.
    previous_keys: tuple[str, ...] = dataclasses.field(default=(), repr=False)
    #: Job middleware for every job, outermost (objects with ``handle(job, next)``).
    middleware: tuple[Any, ...] = ()
    #: The connections this app uses: those it configured, and the default. The other built-in
    #: connections are templates: usable by name, but never touched by ``restart``, ``down``,
    #: ``up``, ``status``, ``monitor`` or ``migrate`` (another app may own that server).
    in_use: tuple[str, ...] = ()
    #: ``connection:queue`` -> seconds its oldest ready job may wait before ``eventbus monitor``
    #: (and ``eventbus supervise``, for its supervisors' queues) emits :class:`~eventbus.events.LongWaitDetected`.
    waits: Mapping[str, float] = dataclasses.field(default_factory=dict)
    #: Channel name -> route the alerts are sent to (``{"mail": "ops@example.com"}``); the
    #: routes may hold secrets (a Slack webhook URL), so the repr never shows them.
    alerts: Mapping[str, str] = dataclasses.field(default_factory=dict, repr=False)
    #: Seconds between two alerts of one kind about one queue.
    alert_cooldown_s: float = DEFAULT_ALERT_COOLDOWN_S
    #: The supervisors ``eventbus supervise`` runs, by name.
    supervisors: Mapping[str, SupervisorOptions] = dataclasses.field(default_factory=dict)
    #: Seconds a per-minute metrics snapshot is kept (:mod:`eventbus.monitoring.history`).
    metrics_retention_s: float = DEFAULT_METRICS_RETENTION_S
    #: Seconds the recent-jobs store keeps ``completed`` and ``failed`` jobs, and those that
    #: carry a ``monitored`` tag (see :data:`DEFAULT_RETENTION_S`).
    retention_s: Mapping[str, float] = dataclasses.field(default_factory=lambda: dict(DEFAULT_RETENTION_S))
    #: Job classes (dotted or display names) the recent-jobs store leaves out when they
    #: complete, beside those with ``silenced = True``.
    silenced: frozenset[str] = frozenset()

    @property
    def verification_keys(self) -> tuple[str, ...]:
        """The keys a signature may match: the current one, then the previous ones (empty when
        payloads are not signed)."""
        return (self.key, *self.previous_keys) if self.key else ()

    def connection_config(self, name: str | None = None) -> dict[str, Any]:
        """The full dict of one connection, with driver defaults filled in."""
        name = name or self.default
        if name not in self.connections:
            known = ", ".join(sorted(self.connections))
            raise ConfigurationError(f"unknown connection {name!r} (configured: {known})",
                                     connection=name)
        if name not in self.in_use:
            return validate_connection(name, self.connections[name])
        return dict(self.connections[name])

    def __repr__(self) -> str:
        connections = {name: {k: _shown_option(k, v) for k, v in conn.items()}
                       for name, conn in self.connections.items()}
        return (f"Settings(default={self.default!r}, connections={connections!r}, "
                f"failed={redact_url(self.failed)!r}, mail={redact_url(self.mail)!r}, "
                f"sms={redact_url(self.sms)!r}, key={REDACTED if self.key else None!r}, "
                f"mail_from={self.mail_from!r})")


def _shown_option(name: str, value: Any) -> Any:
    """A connection option as a repr may print it: URLs without passwords (``url``, an SQS
    ``endpoint_url``, any text with ``://``), secrets (an SQS ``secret`` or ``token``, a
    ``password``) not at all."""
    if isinstance(value, str) and (name == "url" or name.endswith("_url") or "://" in value):
        return redact_url(value)
    return REDACTED if value and is_secret_name(name) else value


def builtin_connections(env: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    return {
        "database": {"driver": "database", "url": DEFAULT_SQLITE_URL},
        "redis": {"driver": "redis", "url": env.get("EVENTBUS_REDIS_URL", DEFAULT_REDIS_URL)},
        "sync": {"driver": "sync"},
        "null": {"driver": "null"},
    }


def validate_connection(name: str, conn: Mapping[str, Any]) -> dict[str, Any]:
    """One connection's options, checked by its driver, with the driver's defaults filled in."""
    if not isinstance(conn, Mapping):
        raise ConfigurationError(f"connection {name!r} must be a dict, not {type(conn).__name__}",
                                 connection=name)
    try:
        cls = driver_class(conn.get("driver"))
    except ConfigurationError as exc:
        raise ConfigurationError(f"connection {name!r} has {exc}", connection=name) from None
    return cls.validate_config(name, conn)


def refuse_unknown_settings(given: Mapping[str, Any]) -> None:
    """``configure(conections=...)``: one error naming the key and the closest known one."""
    for key in given:
        hint = difflib.get_close_matches(key, SETTING_NAMES, n=1)
        suggestion = f" (did you mean {hint[0]!r}?)" if hint else ""
        raise ConfigurationError(f"unknown setting {key!r}{suggestion}; configure() takes "
                                 f"{', '.join(SETTING_NAMES)}")


def build_settings(
    *,
    default: str | None = None,
    connections: Mapping[str, Mapping[str, Any]] | None = None,
    failed: str | None = None,
    mail: str | None = None,
    sms: str | None = None,
    key: str | None = None,
    previous_keys: Iterable[str] | None = None,
    mail_from: str | None = None,
    middleware: Iterable[Any] = (),
    waits: Mapping[str, float] | None = None,
    alerts: Mapping[str, str] | None = None,
    alert_cooldown: float | None = None,
    supervisors: Mapping[str, Mapping[str, Any]] | None = None,
    metrics_retention: float | None = None,
    retention: Mapping[str, float] | None = None,
    silenced: Iterable[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> Settings:
    """Merge arguments, environment and built-in defaults into validated :class:`Settings`."""
    env = os.environ if env is None else env
    if connections is not None and not isinstance(connections, Mapping):
        raise ConfigurationError(f"'connections' must be a dict of name -> connection dict, "
                                 f"not {type(connections).__name__}")
    merged: dict[str, Mapping[str, Any]] = dict(builtin_connections(env))
    merged.update(connections or {})
    default_name = default or env.get("EVENTBUS_CONNECTION") or "database"
    supervised = checked_supervisors(supervisors, merged, default_name)
    # a supervisor's connection is one the app uses, configured or not
    given = set(connections or {}) | {s.connection for s in supervised.values()}
    checked = {name: validate_connection(name, conn) if name in given or name == default_name else conn
               for name, conn in merged.items()}
    if default_name not in checked:
        raise ConfigurationError(
            f"unknown default connection {default_name!r} (configured: {', '.join(sorted(checked))})",
            connection=default_name,
        )
    signing_key = checked_key(key) or env.get("EVENTBUS_KEY") or None
    previous = checked_previous_keys(previous_keys, env)
    if previous and not signing_key:
        raise ConfigurationError("previous keys (EVENTBUS_PREVIOUS_KEYS or 'previous_keys') need a "
                                 "current key (EVENTBUS_KEY or 'key') to rotate from")
    return Settings(
        default=default_name,
        connections=checked,
        in_use=tuple(name for name in checked if name in given or name == default_name),
        failed=failed or env.get("EVENTBUS_FAILED_URL") or failed_default(checked[default_name]),
        mail=mail or env.get("EVENTBUS_MAIL_URL") or "log",
        sms=sms or env.get("EVENTBUS_SMS_URL") or "log",
        key=signing_key,
        previous_keys=previous,
        mail_from=mail_from or env.get("EVENTBUS_MAIL_FROM") or "eventbus@localhost",
        middleware=checked_middleware(middleware),
        waits=checked_waits(waits if waits is not None else pairs_from_env(env, WAITS_ENV), checked),
        alerts=checked_alerts(alerts if alerts is not None else pairs_from_env(env, ALERTS_ENV)),
        alert_cooldown_s=checked_cooldown(alert_cooldown if alert_cooldown is not None
                                          else env.get(ALERT_COOLDOWN_ENV) or DEFAULT_ALERT_COOLDOWN_S),
        supervisors=supervised,
        metrics_retention_s=positive_seconds(
            "'metrics_retention'", metrics_retention if metrics_retention is not None
            else env.get(METRICS_RETENTION_ENV) or DEFAULT_METRICS_RETENTION_S),
        retention_s=checked_retention(retention),
        silenced=checked_silenced(silenced),
    )


def pairs_from_env(env: Mapping[str, str], name: str) -> dict[str, str]:
    """``a=1,b=2`` from the variable ``name`` as a dict (each pair split at its first ``=``)."""
    pairs: dict[str, str] = {}
    for item in env.get(name, "").split(","):
        if item.strip():
            key, sep, value = item.partition("=")
            if not sep:
                raise ConfigurationError(f"{name} must hold NAME=VALUE pairs separated by commas, "
                                         f"not {item.strip()!r:.60}")
            pairs[key.strip()] = value.strip()
    return pairs


def checked_waits(given: Any, connections: Mapping[str, Any]) -> dict[str, float]:
    """``configure(waits={"redis:default": 60})``: known connections, positive seconds."""
    if not isinstance(given, Mapping):
        raise ConfigurationError("'waits' must be a dict of 'connection:queue' -> seconds, "
                                 f"not {type(given).__name__}")
    waits: dict[str, float] = {}
    for where, seconds in given.items():
        connection, sep, queue = str(where).partition(":")
        if not sep or not connection or not queue:
            raise ConfigurationError(f"'waits' keys are 'connection:queue' (such as 'redis:default'), "
                                     f"not {where!r}")
        if connection not in connections:
            raise ConfigurationError(f"'waits' names unknown connection {connection!r} in {where!r} "
                                     f"(configured: {', '.join(sorted(connections))})",
                                     connection=connection)
        waits[str(where)] = positive_seconds(f"'waits' for {where!r}", seconds)
    return waits


def checked_alerts(given: Any) -> dict[str, str]:
    """``configure(alerts={"mail": "ops@example.com", "slack": URL})``: channel -> route text."""
    if not isinstance(given, Mapping):
        raise ConfigurationError("'alerts' must be a dict of channel -> route (such as "
                                 f"{{'mail': 'ops@example.com'}}), not {type(given).__name__}")
    for channel, route in given.items():
        if not isinstance(channel, str) or not channel or not isinstance(route, str) or not route:
            raise ConfigurationError(f"'alerts' maps channel names to routes (non-empty text); "
                                     f"{channel!r:.40} is not one")
    return dict(given)


def checked_retention(given: Any) -> dict[str, float]:
    """``configure(retention={"completed": 3600})``: the kinds given replace their defaults."""
    if given is None:
        return dict(DEFAULT_RETENTION_S)
    if not isinstance(given, Mapping):
        raise ConfigurationError("'retention' must be a dict of kind -> seconds (kinds: "
                                 f"{', '.join(DEFAULT_RETENTION_S)}), not {type(given).__name__}")
    unknown = [kind for kind in given if kind not in DEFAULT_RETENTION_S]
    if unknown:
        raise ConfigurationError(f"'retention' has unknown kind {unknown[0]!r:.40} (kinds: "
                                 f"{', '.join(DEFAULT_RETENTION_S)})")
    return {**DEFAULT_RETENTION_S,
            **{kind: positive_seconds(f"'retention' for {kind!r}", value, allow_zero=True)
               for kind, value in given.items()}}


def checked_silenced(given: Any) -> frozenset[str]:
    """``configure(silenced=["shop.jobs.Ping", ...])``: job class names."""
    if given is None:
        return frozenset()
    if isinstance(given, (str, bytes)) or not isinstance(given, Iterable):
        raise ConfigurationError("'silenced' must be a list of job class names (such as "
                                 f"['shop.jobs.Ping']), not {type(given).__name__}")
    names = list(given)
    for name in names:
        if not isinstance(name, str) or not name:
            raise ConfigurationError(f"'silenced' must hold job class names (non-empty text), not {name!r:.40}")
    return frozenset(names)


def checked_cooldown(value: Any) -> float:
    return positive_seconds("'alert_cooldown'", value, allow_zero=True)


def positive_seconds(what: str, value: Any, *, allow_zero: bool = False) -> float:
    """``value`` as seconds (a number, a timedelta, or text from the environment); else one
    sentence naming ``what``."""
    if isinstance(value, datetime.timedelta):
        value = value.total_seconds()
    try:
        seconds = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        seconds = math.nan
    if not math.isfinite(seconds) or seconds < 0 or (seconds == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ConfigurationError(f"{what} must be a number of seconds {bound}, not {value!r:.40}")
    return seconds


def checked_key(key: Any) -> str | None:
    """``configure(key=...)``: text, or nothing (a list or bytes would break the next dispatch)."""
    if key is None or isinstance(key, str):
        return key or None
    raise ConfigurationError(f"'key' must be a non-empty string (the secret that signs payloads), "
                             f"not {type(key).__name__}; previous keys go in 'previous_keys'")


def checked_previous_keys(given: Iterable[str] | None, env: Mapping[str, str]) -> tuple[str, ...]:
    """``configure(previous_keys=[...])``, else ``EVENTBUS_PREVIOUS_KEYS`` split at commas."""
    if given is None:
        return tuple(k.strip() for k in env.get(PREVIOUS_KEYS_ENV, "").split(",") if k.strip())
    if isinstance(given, (str, bytes)) or not isinstance(given, Iterable):
        raise ConfigurationError("'previous_keys' must be a list of strings (the keys that signed "
                                 f"payloads before the current one), not {type(given).__name__}")
    keys = tuple(given)
    for item in keys:
        if not isinstance(item, str) or not item:
            raise ConfigurationError(f"'previous_keys' must hold non-empty strings, not {item!r:.40}")
    return keys


def checked_middleware(middleware: Iterable[Any]) -> tuple[Any, ...]:
    items = tuple(middleware)
    for item in items:
        if not callable(getattr(item, "handle", None)):
            raise ConfigurationError(f"'middleware' entries need a handle(job, next) method, not {item!r}")
    return items


def failed_default(conn: Mapping[str, Any]) -> str:
    """Failed jobs live beside the default connection's data, else in the embedded SQLite file."""
    return driver_class(conn["driver"]).failed_store_url(conn) or DEFAULT_SQLITE_URL


#: Integrations the environment switches on: the variable, and the module whose ``activate()``
#: the runtime calls when the settings are read. The core names them here and never imports
#: them (``tests/test_architecture.py``), so an integration's library stays out of the process
#: until it is asked for.
INTEGRATION_VARIABLES = {"EVENTBUS_OTEL": "eventbus.integrations.otel"}


def integrations_from_environment(env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The modules of the integrations whose variable is set to a true value (1, true, yes, on)."""
    env = os.environ if env is None else env
    return tuple(module for variable, module in INTEGRATION_VARIABLES.items()
                 if env.get(variable, "").strip().lower() in ("1", "true", "yes", "on"))


#: The variables read outside the settings, each where it is needed (a CLI default, the
#: dashboard's token, the watchdog's grace), and what they do. Read through :func:`env`, so
#: that this is the one module that reads the environment and the list stays complete
#: (``docs/configuration.md`` prints it; ``tests/test_config_environment.py`` checks both).
VARIABLES = {
    "EVENTBUS_APP": "the app module the CLI imports, as --app does",
    "EVENTBUS_ENV": "the environment scheduled entries compare with environments(...), as --env does",
    "EVENTBUS_TIMEOUT_GRACE": "seconds the watchdog waits past a job's timeout before it ends the process (5)",
    "EVENTBUS_MONITOR_INTERVAL": "seconds between a worker's writes of its heartbeat and metrics",
    "EVENTBUS_METRICS_DIR": "the directory supervised workers share their Prometheus metrics in",
    "EVENTBUS_DASHBOARD_TOKEN": "the token the dashboard requires (instead of --token)",
    "EVENTBUS_DASHBOARD_ALLOWED_HOSTS": "more Host names the dashboard answers, comma-separated",
    "EVENTBUS_DASHBOARD_SECRET": "the key of the dashboard's CSRF tokens (else random per process)",
    "EVENTBUS_SUPERVISOR_PID": "set by --processes in its children: the supervisor's pid",
    "EVENTBUS_WORKER_START": "how --processes starts its workers: fork (after the app is imported) or spawn",
    **{name: f"switches on the integration {module}" for name, module in INTEGRATION_VARIABLES.items()},
}


def env(name: str, default: str = "") -> str:
    """The value of the environment variable ``name``, one of :data:`VARIABLES` (a name outside
    the table is a programming error: add it there, with what it does)."""
    if name not in VARIABLES:
        raise KeyError(f"{name} is not in eventbus.config.VARIABLES")
    return os.environ.get(name, default)


#: How ``eventbus work --processes N`` starts its children: ``fork`` (the default where the
#: system has it) or ``spawn`` (a fresh interpreter each, as ``--spawn``).
WORKER_START_ENV = "EVENTBUS_WORKER_START"
WORKER_STARTS = ("fork", "spawn")


def forks_workers(spawn: bool = False, env: Mapping[str, str] | None = None) -> bool:
    """Whether supervised worker processes are forked from the supervisor after it imported the
    app: not when ``spawn`` was asked for (``--spawn``), nor with ``EVENTBUS_WORKER_START=spawn``,
    nor where the system cannot fork."""
    env = os.environ if env is None else env
    chosen = env.get(WORKER_START_ENV, "").strip().lower() or "fork"
    if chosen not in WORKER_STARTS:
        raise ConfigurationError(f"{WORKER_START_ENV} must be one of {', '.join(WORKER_STARTS)}, "
                                 f"not {chosen!r}")
    return not spawn and chosen == "fork" and hasattr(os, "fork")
