"""Configuration: ``configure(...)``, the EVENTBUS_* environment variables, the embedded defaults.

Nothing is read at import time. The environment is read when :func:`configure` runs or, without
it, the first time :func:`settings` is asked for. Every problem is reported as one
:class:`ConfigurationError` sentence naming the key.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from eventbus import registry
from eventbus.errors import ConfigurationError

DRIVERS = ("redis", "database", "sync", "null")
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
DEFAULT_SQLITE_URL = "sqlite:///eventbus.sqlite3"

_CONNECTION_DEFAULTS: dict[str, dict[str, Any]] = {
    "redis": {"queue": "default", "retry_after": 90.0, "block_for": 5.0, "prefix": "queues:",
              "migration_batch_size": 100, "cluster": False},
    "database": {"queue": "default", "retry_after": 90.0, "table": "jobs"},
    "sync": {"queue": "default"},
    "null": {"queue": "default"},
}


@dataclasses.dataclass(frozen=True)
class Settings:
    """The resolved configuration of the default bus."""

    default: str
    connections: Mapping[str, Mapping[str, Any]]
    failed: str
    mail: str
    sms: str
    key: str | None = None
    mail_from: str = "eventbus@localhost"

    def connection_config(self, name: str | None = None) -> dict[str, Any]:
        """The full dict of one connection, with driver defaults filled in."""
        name = name or self.default
        if name not in self.connections:
            known = ", ".join(sorted(self.connections))
            raise ConfigurationError(f"unknown connection {name!r} (configured: {known})",
                                     connection=name)
        return dict(self.connections[name])


def redact_url(url: str) -> str:
    """The URL without its password, safe for error messages and logs."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparseable URL>"
    if parts.password is None:
        return url
    netloc = f"{parts.username or ''}:***@{parts.hostname or ''}"
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc))


def _builtin_connections(env: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    return {
        "database": {"driver": "database", "url": DEFAULT_SQLITE_URL},
        "redis": {"driver": "redis", "url": env.get("EVENTBUS_REDIS_URL", DEFAULT_REDIS_URL)},
        "sync": {"driver": "sync"},
        "null": {"driver": "null"},
    }


def _validate_connection(name: str, conn: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(conn, Mapping):
        raise ConfigurationError(f"connection {name!r} must be a dict, not {type(conn).__name__}")
    driver = conn.get("driver")
    if driver not in DRIVERS:
        raise ConfigurationError(
            f"connection {name!r} has unknown driver {driver!r} (choose one of {', '.join(DRIVERS)})",
            connection=name,
        )
    merged = {**_CONNECTION_DEFAULTS[driver], **conn}
    if driver in ("redis", "database"):
        url = merged.get("url")
        if not isinstance(url, str) or "://" not in url:
            raise ConfigurationError(f"connection {name!r} needs a 'url' such as "
                                     f"{DEFAULT_REDIS_URL if driver == 'redis' else DEFAULT_SQLITE_URL}",
                                     connection=name)
        if driver == "redis" and urlsplit(url).scheme not in ("redis", "rediss", "unix"):
            raise ConfigurationError(
                f"connection {name!r} has a bad redis URL {redact_url(url)!r} "
                "(expected redis://host:port/db)", connection=name)
    for key in ("retry_after", "block_for"):
        if key in merged and (not isinstance(merged[key], (int, float)) or merged[key] < 0):
            raise ConfigurationError(f"connection {name!r}: {key!r} must be a number of seconds >= 0",
                                     connection=name)
    return merged


def build_settings(
    *,
    default: str | None = None,
    connections: Mapping[str, Mapping[str, Any]] | None = None,
    failed: str | None = None,
    mail: str | None = None,
    sms: str | None = None,
    key: str | None = None,
    mail_from: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Settings:
    """Merge arguments, environment and built-in defaults into validated :class:`Settings`."""
    env = os.environ if env is None else env
    merged: dict[str, Mapping[str, Any]] = dict(_builtin_connections(env))
    merged.update(connections or {})
    checked = {name: _validate_connection(name, conn) for name, conn in merged.items()}
    default_name = default or env.get("EVENTBUS_CONNECTION") or "database"
    if default_name not in checked:
        raise ConfigurationError(
            f"unknown default connection {default_name!r} (configured: {', '.join(sorted(checked))})",
            connection=default_name,
        )
    return Settings(
        default=default_name,
        connections=checked,
        failed=failed or env.get("EVENTBUS_FAILED_URL") or _failed_default(checked[default_name]),
        mail=mail or env.get("EVENTBUS_MAIL_URL") or "log",
        sms=sms or env.get("EVENTBUS_SMS_URL") or "log",
        key=key or env.get("EVENTBUS_KEY") or None,
        mail_from=mail_from or env.get("EVENTBUS_MAIL_FROM") or "eventbus@localhost",
    )


def _failed_default(conn: Mapping[str, Any]) -> str:
    """Failed jobs live beside the default connection's data (Redis or the same database)."""
    if conn["driver"] == "redis" and conn.get("cluster"):
        url = str(conn["url"])
        return f"{url}{'&' if '?' in url else '?'}cluster=1"
    if conn["driver"] in ("redis", "database"):
        return str(conn["url"])
    return DEFAULT_SQLITE_URL


_lock = threading.Lock()
_settings: Settings | None = None


def configure(
    default: str | None = None,
    connections: Mapping[str, Mapping[str, Any]] | None = None,
    failed: str | None = None,
    mail: str | None = None,
    sms: str | None = None,
    trusted: Iterable[str] = (),
    key: str | None = None,
    mail_from: str | None = None,
) -> Settings:
    """Configure the default bus. Unset values come from EVENTBUS_* variables, then defaults.

    ``connections`` merges with the built-in ``database``, ``redis``, ``sync`` and ``null``
    connections by name. ``trusted`` adds module prefixes whose classes payloads may name.
    Calling it again replaces the previous configuration and closes open connections.
    """
    global _settings
    new = build_settings(default=default, connections=connections, failed=failed, mail=mail,
                         sms=sms, key=key, mail_from=mail_from)
    registry.trust(*trusted)
    with _lock:
        _settings = new
    from eventbus import connections as conns  # late: connections imports config

    conns.reset()
    return new


def settings() -> Settings:
    """The current settings; built from the environment on first use if never configured."""
    global _settings
    with _lock:
        if _settings is None:
            _settings = build_settings()
        return _settings


def reset() -> None:
    """Forget the configuration (tests); the next use reads the environment again."""
    global _settings
    with _lock:
        _settings = None
    from eventbus import connections as conns

    conns.reset()
    from eventbus import sql

    sql.reset()
