"""The suite runs on two pytest-xdist workers (``-n 2`` in pyproject.toml): each worker gets
servers of its own, so that no test sees another's keys, tables or jobs.

Worker ``gwN`` (N > 0) uses Redis database ``D - N`` (``D``: the one ``EVENTBUS_TEST_REDIS_URL``
names, 15 by default, so 15 and 14) and the PostgreSQL and MariaDB databases ``NAME_gwN`` beside
the configured ``NAME``, created here when missing. ``gw0``, and a run without xdist
(``-n 0``), use the configured ones as they are. beanstalkd and moto are private per worker
already (:mod:`conftest`). The environment is set before :mod:`helpers` reads it, so every URL
the tests build, and every worker process they start, follows.
"""

from __future__ import annotations

import os

import sqlalchemy as sa

DEFAULTS = {
    "EVENTBUS_TEST_REDIS_URL": "redis://127.0.0.1:6379/15",
    "EVENTBUS_TEST_PG_URL": "postgresql+psycopg://postgres@127.0.0.1:5432/test",
    "EVENTBUS_TEST_MYSQL_URL": "mysql+pymysql://root@127.0.0.1:3306/test",
}


def worker_number() -> int:
    """0 for ``gw0`` and for a run without xdist; N for ``gwN``."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    return int(name[2:]) if name.startswith("gw") and name[2:].isdigit() else 0


def give_each_worker_its_servers() -> None:
    number = worker_number()
    if number == 0:
        return
    redis_url = sa.make_url(os.environ.get("EVENTBUS_TEST_REDIS_URL", DEFAULTS["EVENTBUS_TEST_REDIS_URL"]))
    database = int(redis_url.database or 0)
    if database - number < 0:
        raise RuntimeError(f"Redis database {database} leaves no database for xdist worker {number}")
    os.environ["EVENTBUS_TEST_REDIS_URL"] = redis_url.set(database=str(database - number)).render_as_string(
        hide_password=False)
    for variable in ("EVENTBUS_TEST_PG_URL", "EVENTBUS_TEST_MYSQL_URL"):
        url = sa.make_url(os.environ.get(variable, DEFAULTS[variable]))
        own = url.set(database=f"{url.database}_gw{number}")
        _create_database(url, own.database or "")
        os.environ[variable] = own.render_as_string(hide_password=False)


def _create_database(url: sa.URL, name: str) -> None:
    """``CREATE DATABASE name`` on ``url``'s server unless it exists; a server that does not
    answer is left alone (its tests skip with the reason, as without xdist)."""
    try:
        engine = sa.create_engine(url, isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            if url.get_backend_name() == "postgresql":
                found = conn.execute(sa.text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": name}).first()
                if found is None:
                    conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
            else:
                conn.execute(sa.text(f"CREATE DATABASE IF NOT EXISTS `{name}`"))
        engine.dispose()
    except Exception:  # noqa: BLE001 - no server, no driver: the tests that need it skip
        pass
