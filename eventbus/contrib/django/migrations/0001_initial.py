"""``manage.py migrate`` creates the eventbus tables, as ``manage.py eventbus migrate`` does.

They live where ``settings.EVENTBUS`` puts them (the queue's database, the failed job store, the
notifications table), which need not be a Django database: the migration runs once, for the
default database alias, and reverting it leaves the tables (they may hold jobs).
"""

from __future__ import annotations

from typing import Any

from django.db import DEFAULT_DB_ALIAS, migrations

from eventbus import runtime
from eventbus.contrib.django.wiring import configure_from_settings


def create_eventbus_tables(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.alias != DEFAULT_DB_ALIAS:
        return
    configure_from_settings()
    runtime.migrate()


class Migration(migrations.Migration):
    initial = True
    dependencies: list[tuple[str, str]] = []
    operations = [migrations.RunPython(create_eventbus_tables, migrations.RunPython.noop)]
