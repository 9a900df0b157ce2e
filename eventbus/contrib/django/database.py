"""Django's ``default`` database as a SQLAlchemy URL: where the app's own data goes.

eventbus keeps the queue where ``settings.EVENTBUS`` says, but the database notifications are
the app's data (``user.notifications`` beside its models), so they follow Django's ``default``
alias (:func:`eventbus.runtime.use_app_database`). A backend SQLAlchemy cannot reach the same
way (an in-memory SQLite test database, a third-party backend) gives None: the notifications
then go where they would without Django.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import sqlalchemy as sa
from django.db import DEFAULT_DB_ALIAS, connections

#: Django backend -> (SQLAlchemy dialect, its drivers in the order tried: the first installed).
BACKENDS = {
    "django.db.backends.sqlite3": ("sqlite", ("",)),
    "django.db.backends.postgresql": ("postgresql", ("psycopg", "psycopg2")),
    "django.contrib.gis.db.backends.postgis": ("postgresql", ("psycopg", "psycopg2")),
    "django.db.backends.mysql": ("mysql", ("mysqldb", "pymysql")),
    "django.contrib.gis.db.backends.mysql": ("mysql", ("mysqldb", "pymysql")),
}
_MODULES = {"mysqldb": "MySQLdb"}


def default_database_url() -> str | None:
    """The SQLAlchemy URL of Django's ``default`` database (the test database while tests run)."""
    return url_for(connections[DEFAULT_DB_ALIAS].settings_dict)


def url_for(django_settings: dict[str, Any]) -> str | None:
    """A ``DATABASES`` entry as a SQLAlchemy URL, or None when SQLAlchemy cannot share it."""
    backend = BACKENDS.get(str(django_settings.get("ENGINE")))
    name = str(django_settings.get("NAME") or "")
    if backend is None or not name:
        return None
    dialect, drivers = backend
    if dialect == "sqlite":
        return None if name == ":memory:" or "mode=memory" in name else f"sqlite:///{name}"
    driver = next((d for d in drivers if importlib.util.find_spec(_MODULES.get(d, d)) is not None), None)
    if driver is None:
        return None
    port = django_settings.get("PORT")
    url = sa.URL.create(f"{dialect}+{driver}", username=django_settings.get("USER") or None,
                        password=django_settings.get("PASSWORD") or None,
                        host=django_settings.get("HOST") or None, port=int(port) if port else None,
                        database=name)
    return url.render_as_string(hide_password=False)
