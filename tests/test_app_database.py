"""Database notifications are the app's data: they follow the app's database (the engine its
SQLAlchemy sessions use, Django's default alias), and ``eventbus migrate`` creates their table
for an app that never imports ``notifications``."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest
import redis
import sqlalchemy as sa

from helpers import PG_URL, REDIS_URL, ROOT, database_reason

pytestmark = pytest.mark.integration

SA_APP = '''
import dataclasses

import sqlalchemy as sa
from sqlalchemy import orm

import eventbus
from eventbus.contrib.sqlalchemy import use_sessions
from notifications import Notifiable, Notification

eventbus.configure(default="redis", connections={{"redis": {{"driver": "redis", "url": {redis!r}}}}})
engine = sa.create_engine({app_db!r})
Session = orm.sessionmaker(engine)
use_sessions(Session)


@eventbus.serializable
@dataclasses.dataclass
class Member(Notifiable):
    id: int


class Welcome(Notification):
    queued = True

    def via(self, notifiable):
        return ["database"]

    def to_database(self, notifiable):
        return {{"hello": notifiable.id}}
'''


def env_for(directory: pathlib.Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVENTBUS_")}
    env.update({"PYTHONPATH": os.pathsep.join([str(directory), str(ROOT)]), "PYTHONUNBUFFERED": "1"})
    return env


def tables(url: str) -> set[str]:
    engine = sa.create_engine(url)
    try:
        return set(sa.inspect(engine).get_table_names())
    finally:
        engine.dispose()


def drop_notifications(url: str) -> None:
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text("DROP TABLE IF EXISTS notifications"))
    engine.dispose()


def test_migrate_creates_the_notifications_table_for_an_app_that_never_imports_it(tmp_path: pathlib.Path) -> None:
    url = f"sqlite:///{tmp_path / 'site.sqlite3'}"
    (tmp_path / "plain_app.py").write_text(
        "import sys\nimport eventbus\n\n"
        f"eventbus.configure(connections={{'database': {{'driver': 'database', 'url': {url!r}}}}})\n"
        "assert 'notifications' not in sys.modules\n")
    done = subprocess.run([sys.executable, "-m", "eventbus", "migrate", "--app", "plain_app"], cwd=tmp_path,
                          env=env_for(tmp_path), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "notifications: notifications ready" in done.stdout.splitlines()
    assert {"jobs", "failed_jobs", "notifications"} <= tables(url)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_database_notifications_go_to_the_engine_of_the_apps_sessions(
        tmp_path: pathlib.Path, redis_client: redis.Redis, kind: str) -> None:
    """The queue is Redis; the app's own database is the engine its SQLAlchemy sessions use:
    the notification a real worker stores lands there (not in ``./eventbus.sqlite3``)."""
    app_db = f"sqlite:///{tmp_path / 'app.sqlite3'}" if kind == "sqlite" else PG_URL
    if kind == "postgres" and database_reason(PG_URL):
        pytest.skip(database_reason(PG_URL))
    drop_notifications(app_db)
    (tmp_path / "member_app.py").write_text(SA_APP.format(redis=REDIS_URL, app_db=app_db))
    env = env_for(tmp_path)
    subprocess.run([sys.executable, "-c", "import member_app as m; m.Member(7).notify(m.Welcome())"],
                   cwd=tmp_path, env=env, check=True, timeout=120)
    worker = subprocess.run([sys.executable, "-m", "eventbus", "work", "--app", "member_app",
                             "--stop-when-empty", "--sleep", "0"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120)
    assert worker.returncode == 0 and "DONE" in worker.stdout, worker.stdout + worker.stderr

    engine = sa.create_engine(app_db)
    try:
        with engine.connect() as conn:
            rows = conn.execute(sa.text("SELECT notifiable_id, data FROM notifications")).all()
    finally:
        engine.dispose()
    assert [(row[0], row[1]) for row in rows] == [("7", '{"hello": 7}')]
    assert not (tmp_path / "eventbus.sqlite3").exists()
    drop_notifications(app_db)


def test_django_databases_as_sqlalchemy_urls() -> None:
    pytest.importorskip("django")
    from eventbus.contrib.django.database import url_for

    assert url_for({"ENGINE": "django.db.backends.sqlite3", "NAME": "/srv/site/db.sqlite3"}) == \
        "sqlite:////srv/site/db.sqlite3"
    assert url_for({"ENGINE": "django.db.backends.postgresql", "NAME": "shop", "USER": "web",
                    "PASSWORD": "s3:cret", "HOST": "db.internal", "PORT": "6432"}) == \
        "postgresql+psycopg://web:s3%3Acret@db.internal:6432/shop"
    assert url_for({"ENGINE": "django.db.backends.mysql", "NAME": "shop", "HOST": "", "PORT": ""}) == \
        "mysql+pymysql:///shop"
    # What SQLAlchemy cannot share: Django's in-memory test database, a backend it does not know.
    assert url_for({"ENGINE": "django.db.backends.sqlite3", "NAME": "file:memorydb_default?mode=memory&cache=shared"}) is None
    assert url_for({"ENGINE": "django.db.backends.oracle", "NAME": "xe"}) is None
