"""Settings as data: the arguments of ``configure(...)``, the EVENTBUS_* environment, the defaults.

This module only computes and validates; it holds no state (that is :mod:`eventbus.runtime`).
Every problem is one :class:`ConfigurationError` sentence naming the key. The facts about each
driver (its options and their defaults, whether it needs a URL, where its failed jobs live) come
from the driver's class through :mod:`eventbus.queue.drivers`.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
from collections.abc import Iterable, Mapping
from typing import Any

from eventbus.errors import ConfigurationError
from eventbus.queue.drivers import driver_class
from eventbus.urls import REDACTED, is_secret_name, redact_url

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
DEFAULT_SQLITE_URL = "sqlite:///eventbus.sqlite3"

#: The keyword arguments ``configure()`` takes.
SETTING_NAMES = ("default", "connections", "failed", "mail", "sms", "trusted", "key", "mail_from",
                 "middleware")


@dataclasses.dataclass(frozen=True)
class Settings:
    """The resolved configuration of the default bus. Its repr hides the key and URL passwords."""

    default: str
    connections: Mapping[str, Mapping[str, Any]]
    failed: str
    mail: str
    sms: str
    key: str | None = dataclasses.field(default=None, repr=False)
    mail_from: str = "eventbus@localhost"
    #: Job middleware for every job, outermost (objects with ``handle(job, next)``).
    middleware: tuple[Any, ...] = ()

    def connection_config(self, name: str | None = None) -> dict[str, Any]:
        """The full dict of one connection, with driver defaults filled in."""
        name = name or self.default
        if name not in self.connections:
            known = ", ".join(sorted(self.connections))
            raise ConfigurationError(f"unknown connection {name!r} (configured: {known})",
                                     connection=name)
        return dict(self.connections[name])

    def __repr__(self) -> str:
        connections = {name: {k: _shown_option(k, v) for k, v in conn.items()}
                       for name, conn in self.connections.items()}
        return (f"Settings(default={self.default!r}, connections={connections!r}, "
                f"failed={redact_url(self.failed)!r}, mail={redact_url(self.mail)!r}, "
                f"sms={redact_url(self.sms)!r}, key={REDACTED if self.key else None!r}, "
                f"mail_from={self.mail_from!r})")


def _shown_option(name: str, value: Any) -> Any:
    """A connection option as a repr may print it: URLs without passwords, secrets (an SQS
    ``secret`` or ``token``, a ``password``) not at all."""
    if isinstance(value, str) and name == "url":
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
    mail_from: str | None = None,
    middleware: Iterable[Any] = (),
    env: Mapping[str, str] | None = None,
) -> Settings:
    """Merge arguments, environment and built-in defaults into validated :class:`Settings`."""
    env = os.environ if env is None else env
    if connections is not None and not isinstance(connections, Mapping):
        raise ConfigurationError(f"'connections' must be a dict of name -> connection dict, "
                                 f"not {type(connections).__name__}")
    merged: dict[str, Mapping[str, Any]] = dict(builtin_connections(env))
    merged.update(connections or {})
    checked = {name: validate_connection(name, conn) for name, conn in merged.items()}
    default_name = default or env.get("EVENTBUS_CONNECTION") or "database"
    if default_name not in checked:
        raise ConfigurationError(
            f"unknown default connection {default_name!r} (configured: {', '.join(sorted(checked))})",
            connection=default_name,
        )
    return Settings(
        default=default_name,
        connections=checked,
        failed=failed or env.get("EVENTBUS_FAILED_URL") or failed_default(checked[default_name]),
        mail=mail or env.get("EVENTBUS_MAIL_URL") or "log",
        sms=sms or env.get("EVENTBUS_SMS_URL") or "log",
        key=key or env.get("EVENTBUS_KEY") or None,
        mail_from=mail_from or env.get("EVENTBUS_MAIL_FROM") or "eventbus@localhost",
        middleware=checked_middleware(middleware),
    )


def checked_middleware(middleware: Iterable[Any]) -> tuple[Any, ...]:
    items = tuple(middleware)
    for item in items:
        if not callable(getattr(item, "handle", None)):
            raise ConfigurationError(f"'middleware' entries need a handle(job, next) method, not {item!r}")
    return items


def failed_default(conn: Mapping[str, Any]) -> str:
    """Failed jobs live beside the default connection's data, else in the embedded SQLite file."""
    return driver_class(conn["driver"]).failed_store_url(conn) or DEFAULT_SQLITE_URL
