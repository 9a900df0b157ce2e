"""The ``notifications`` table and its read API (Laravel's DatabaseNotification).

The table holds the app's data, so it lives in the app's database: ``EVENTBUS_NOTIFICATIONS_URL``
(or :func:`configure`) when set; else the database an integration says is the app's (Django's
``default`` alias, the engine of the sessions given to ``use_sessions``, Flask-SQLAlchemy's
``db.engine``: :func:`eventbus.runtime.use_app_database`); else the default connection's database
when that is a SQL one; else the embedded ``eventbus.sqlite3``. It is created on first use, or up
front by ``eventbus migrate`` (whether or not the app imports this package).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import sqlalchemy as sa

from notifications._core import (
    DEFAULT_SQLITE_URL,
    adapter_for,
    app_database,
    dotted_name,
    engine_for,
    ensure_tables,
    guarded,
    settings,
)
from notifications.errors import DeliveryError

T = TypeVar("T")

_lock = threading.Lock()
_url: str | None = None
metadata = sa.MetaData()
table = sa.Table(
    "notifications", metadata,
    sa.Column("id", sa.String(64), primary_key=True),
    sa.Column("type", sa.String(191), nullable=False),
    sa.Column("notifiable_type", sa.String(191), nullable=False),
    sa.Column("notifiable_id", sa.String(191), nullable=False),
    sa.Column("data", sa.Text, nullable=False),
    sa.Column("read_at", sa.Double, nullable=True),
    sa.Column("created_at", sa.Double, nullable=False),
    sa.Index("notifications_notifiable_index", "notifiable_type", "notifiable_id"),
)


def configure(url: str | None) -> None:
    """Set the database URL of the notifications table (None: back to the default)."""
    global _url
    with _lock:
        _url = url


def database() -> str | sa.Engine:
    """Where the table lives: :func:`configure`, the environment, the app's database, the
    default connection's database, or the embedded SQLite file (in that order)."""
    explicit = _url or os.environ.get("EVENTBUS_NOTIFICATIONS_URL")
    if explicit:
        return explicit
    found = app_database()
    if found is not None:
        return found
    cfg = settings()
    conn = cfg.connections[cfg.default]
    return str(conn["url"]) if conn["driver"] == "database" else DEFAULT_SQLITE_URL


def database_url() -> str:
    """:func:`database` as a URL (its password hidden when it is the app's engine)."""
    found = database()
    return found if isinstance(found, str) else found.url.render_as_string(hide_password=True)


def _run(action: str, fn: Callable[[sa.Engine], T]) -> T:
    found = database()
    url = found if isinstance(found, str) else found.url.render_as_string(hide_password=True)

    def run() -> T:
        engine = engine_for(found) if isinstance(found, str) else found
        ensure_tables(engine, metadata, [table])
        return fn(engine)

    return guarded(url, action, run)


def migrate() -> list[str]:
    """Create the ``notifications`` table if it is missing; return the table names."""
    _run("create the notifications table", lambda engine: None)
    return [table.name]


def notifiable_key(notifiable: Any) -> Any:
    """The key a notifiable's rows are stored under: its model adapter's key, else ``id``."""
    adapter = adapter_for(type(notifiable))
    if adapter is not None:
        return adapter.key(notifiable)
    return getattr(notifiable, "id", None)


@dataclasses.dataclass(frozen=True)
class DatabaseNotification:
    """One stored notification; ``data`` is what ``to_database`` returned."""

    id: str
    type: str
    notifiable_type: str
    notifiable_id: str
    data: dict[str, Any]
    read_at: float | None
    created_at: float

    @property
    def read(self) -> bool:
        return self.read_at is not None

    @property
    def created(self) -> dt.datetime:
        return dt.datetime.fromtimestamp(self.created_at, dt.timezone.utc)


def save(notification_id: str, notification_type: str, notifiable: Any, owner_id: Any,
         data: dict[str, Any]) -> str:
    """Store one row for ``notifiable``; saving the same id for it again replaces the row (a
    retried job stores it once). An id already stored for another notifiable is refused."""
    owner = {"notifiable_type": dotted_name(type(notifiable)), "notifiable_id": str(owner_id)}
    row = {"id": notification_id, "type": notification_type, **owner, "data": json.dumps(data),
           "read_at": None, "created_at": time.time()}

    def insert(engine: sa.Engine) -> None:
        with engine.begin() as conn:
            stored = conn.execute(sa.select(table.c.notifiable_type, table.c.notifiable_id)
                                  .where(table.c.id == notification_id)).first()
            if stored is not None and dict(stored._mapping) != owner:
                raise DeliveryError(f"notification {notification_id} is already stored for another notifiable "
                                    f"({stored.notifiable_type} #{stored.notifiable_id}); leave the id "
                                    "unset to give each notifiable its own", permanent=True)
            conn.execute(sa.delete(table).where(table.c.id == notification_id))
            conn.execute(sa.insert(table).values(**row))

    _run("store notification", insert)
    return notification_id


def _owner(notifiable: Any) -> Any:
    return sa.and_(table.c.notifiable_type == dotted_name(type(notifiable)),
                   table.c.notifiable_id == str(notifiable_key(notifiable)))


def _select(*where: Any) -> list[DatabaseNotification]:
    def run(engine: sa.Engine) -> list[DatabaseNotification]:
        with engine.connect() as conn:
            rows = conn.execute(sa.select(table).where(*where).order_by(table.c.created_at.desc()))
            return [DatabaseNotification(**{**r._mapping, "data": json.loads(r.data)}) for r in rows]

    return _run("read notifications", run)


def notifications_for(notifiable: Any) -> list[DatabaseNotification]:
    """Every stored notification of ``notifiable``, newest first."""
    return _select(_owner(notifiable))


def unread_notifications_for(notifiable: Any) -> list[DatabaseNotification]:
    """The stored notifications of ``notifiable`` not marked as read, newest first."""
    return _select(_owner(notifiable), table.c.read_at.is_(None))


def mark_as_read(target: DatabaseNotification | Sequence[DatabaseNotification] | Any) -> int:
    """Mark a notification, a list of them, or all of a notifiable's as read; return how many."""
    if isinstance(target, DatabaseNotification):
        where = table.c.id == target.id
    elif isinstance(target, (list, tuple)):
        where = table.c.id.in_([n.id for n in target])
    else:
        where = _owner(target)

    def run(engine: sa.Engine) -> int:
        with engine.begin() as conn:
            return int(conn.execute(sa.update(table).where(where, table.c.read_at.is_(None))
                                    .values(read_at=time.time())).rowcount)

    return _run("mark notifications read", run)
