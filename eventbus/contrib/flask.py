"""Flask (``pip install 'eventbus[flask]'``): settings from ``app.config``, jobs in an app context.

::

    from flask import Flask
    from flask_sqlalchemy import SQLAlchemy
    from eventbus.contrib.flask import EventBus

    app = Flask(__name__)
    app.config["EVENTBUS_CONNECTION"] = "redis"
    db = SQLAlchemy(app)
    EventBus(app)                       # or: bus = EventBus(); bus.init_app(app) in a factory

- ``init_app`` configures eventbus from the ``EVENTBUS_*`` keys of ``app.config`` (see
  :data:`CONFIG_KEYS`; what is not there comes from the environment, as with ``configure``) and
  trusts the app's package, so the worker may load its classes.
- Every queued job, queued listener and queued notification runs inside a fresh app context of
  this app (one per job, entered before the payload is decoded), so ``current_app``, ``db.session``
  and the extensions work in the worker, and Flask-SQLAlchemy's session is removed after each job.
- Mapped models travel by primary key with no ``register_model`` call; Flask-SQLAlchemy's
  (``db.Model``) are loaded with ``db.session`` in the job's app context (plain SQLAlchemy ones
  through :func:`eventbus.contrib.sqlalchemy.use_sessions`).
- Pushes marked ``after_commit`` made while ``db.session`` has a transaction open go out when it
  commits and are dropped when it rolls back.
- Database notifications are stored in Flask-SQLAlchemy's ``db.engine``, the app's database.
- ``flask eventbus work|failed|retry|size|migrate|...``: the ``eventbus`` commands, on this app
  (``flask eventbus --help`` lists them; ``--processes N`` and ``--watch`` load the app from
  ``FLASK_APP``, which is set for them from ``flask --app``).

One app per process is the one whose context jobs run in: the last one given to ``init_app``.
"""

from __future__ import annotations

import contextlib
import os
import weakref
from collections.abc import Mapping
from typing import Any

import click
from flask import Flask, current_app
from flask.cli import ScriptInfo
from sqlalchemy import orm

from eventbus import runtime
from eventbus.config import Settings
from eventbus.contrib import sqlalchemy as eventbus_sqlalchemy
from eventbus.contrib._cli import run_eventbus_command
from eventbus.errors import ConfigurationError

__all__ = ["CONFIG_KEYS", "EventBus", "configure_kwargs", "current_app_for_jobs", "eventbus_command"]

#: ``app.config`` keys and the ``eventbus.configure`` argument each one sets.
CONFIG_KEYS = {
    "EVENTBUS_CONNECTION": "default",
    "EVENTBUS_CONNECTIONS": "connections",
    "EVENTBUS_FAILED_URL": "failed",
    "EVENTBUS_MAIL_URL": "mail",
    "EVENTBUS_MAIL_FROM": "mail_from",
    "EVENTBUS_SMS_URL": "sms",
    "EVENTBUS_KEY": "key",
    "EVENTBUS_PREVIOUS_KEYS": "previous_keys",
    "EVENTBUS_TRUSTED": "trusted",
    "EVENTBUS_MIDDLEWARE": "middleware",
}
#: Sets the URL of the built-in ``redis`` connection, like the environment variable.
REDIS_URL_KEY = "EVENTBUS_REDIS_URL"
BOOT_MODULE = "eventbus.contrib._flask_boot"

# Module-level: the Flask app of the process (Flask apps are module globals themselves).
_app: weakref.ref[Flask] | None = None
_installed = False


def configure_kwargs(config: Mapping[str, Any]) -> dict[str, Any]:
    """The ``eventbus.configure`` arguments the ``EVENTBUS_*`` keys of ``config`` give.

    An ``EVENTBUS_`` key that means nothing here is a :class:`~eventbus.ConfigurationError`
    naming it (a typo would otherwise be ignored silently).
    """
    kwargs: dict[str, Any] = {}
    for key, value in config.items():
        if not key.startswith("EVENTBUS_") or key == REDIS_URL_KEY:
            continue
        if key not in CONFIG_KEYS:
            known = ", ".join([*CONFIG_KEYS, REDIS_URL_KEY])
            raise ConfigurationError(f"unknown Flask setting {key!r}; eventbus reads {known}")
        kwargs[CONFIG_KEYS[key]] = value
    if config.get(REDIS_URL_KEY):
        connections = dict(kwargs.get("connections") or {})
        connections.setdefault("redis", {"driver": "redis", "url": config[REDIS_URL_KEY]})
        kwargs["connections"] = connections
    return kwargs


class EventBus:
    """The Flask extension: ``EventBus(app)`` or ``EventBus()`` then ``init_app(app)``."""

    def __init__(self, app: Flask | None = None) -> None:
        self.settings: Settings | None = None
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Flask) -> None:
        """Configure eventbus from ``app.config``; run jobs in ``app``'s context; add the CLI."""
        global _app
        kwargs = configure_kwargs(app.config)
        kwargs["trusted"] = [*(kwargs.get("trusted") or ()), app.import_name.split(".")[0]]
        self.settings = runtime.configure(**kwargs)
        _app = weakref.ref(app)
        _install()
        runtime.use_app_database(_flask_sqlalchemy_engine)
        app.extensions["eventbus"] = self
        app.cli.add_command(eventbus_command)


def current_app_for_jobs() -> Flask | None:
    """The app whose context jobs run in (the last one given to ``init_app``), if alive."""
    return _app() if _app is not None else None


def _app_context() -> contextlib.AbstractContextManager[Any]:
    """The job scope: a fresh app context of the app, for every job."""
    app = current_app_for_jobs()
    return app.app_context() if app is not None else contextlib.nullcontext()


def _is_flask_sqlalchemy_model(cls: type) -> bool:
    return hasattr(cls, "__fsa__")


def _flask_sqlalchemy_session() -> orm.Session:
    """``db.session`` of the current app (the session of the job's app context)."""
    db = current_app.extensions.get("sqlalchemy")
    if db is None:
        raise ConfigurationError(
            f"the Flask app {current_app.name!r} has no Flask-SQLAlchemy extension to load models "
            "with; call eventbus.contrib.sqlalchemy.use_sessions(your_sessionmaker)")
    session: orm.Session = db.session()
    return session


def _install() -> None:
    """Once per process: the app-context job scope, and Flask-SQLAlchemy when it is installed."""
    global _installed
    if _installed:
        return
    _installed = True
    runtime.around_jobs(_app_context)
    try:
        from flask_sqlalchemy.session import Session as FlaskSQLAlchemySession
    except ImportError:
        return
    eventbus_sqlalchemy.follow_transactions(FlaskSQLAlchemySession)
    # Flask-SQLAlchemy removes its session when the job's app context ends.
    eventbus_sqlalchemy.use_sessions(_flask_sqlalchemy_session, models=_is_flask_sqlalchemy_model,
                                     close_after_jobs=False, after_commit=False)


def _flask_sqlalchemy_engine() -> Any:
    """``db.engine`` of the app jobs run in, when it has Flask-SQLAlchemy: the app's database,
    where its database notifications go."""
    app = current_app_for_jobs()
    db = app.extensions.get("sqlalchemy") if app is not None else None
    if app is None or db is None:
        return None
    with app.app_context():
        return db.engine


@click.command("eventbus", add_help_option=False,
               context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def eventbus_command(args: tuple[str, ...]) -> None:
    """Queued jobs, failed jobs and workers (the eventbus commands). Try: flask eventbus --help"""
    ctx = click.get_current_context()
    info = ctx.find_object(ScriptInfo)
    if info is not None and info.app_import_path and not os.environ.get("FLASK_APP"):
        os.environ["FLASK_APP"] = info.app_import_path  # for the workers --processes starts
    ctx.exit(run_eventbus_command(args, prog_name="flask eventbus", boot=BOOT_MODULE))
