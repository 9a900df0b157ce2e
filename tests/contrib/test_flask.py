"""Flask: settings from app.config, every job in a fresh app context, Flask-SQLAlchemy models by
key, after_commit on db.session, and ``flask eventbus ...``."""

from __future__ import annotations

import dataclasses
import pathlib
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask, current_app, g, has_app_context
from flask_sqlalchemy import SQLAlchemy
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

import eventbus
from eventbus import Event, Worker, WorkerOptions, emit, registry
from eventbus.contrib.flask import EventBus, configure_kwargs, current_app_for_jobs
from eventbus.errors import ConfigurationError
from eventbus.testing import fake_queue
from listeners import listener


class Base(DeclarativeBase):
    pass


db = SQLAlchemy(model_class=Base)


class Parcel(db.Model):  # type: ignore[name-defined,misc]
    id: Mapped[int] = mapped_column(primary_key=True)
    label: Mapped[str]


SEEN: list[Any] = []


class Inspect(eventbus.Job):
    """Records the app context it runs in, and the parcel it was given (loaded by the worker)."""

    def __init__(self, parcel: Parcel | None = None) -> None:
        self.parcel = parcel

    def handle(self) -> None:
        fresh = not hasattr(g, "touched")  # a g left by an earlier job would carry the mark
        g.touched = True
        # the g object itself, kept alive: comparing ids of freed objects can match by reuse
        SEEN.append((current_app.name, (g._get_current_object(), fresh),
                     self.parcel.label if self.parcel else None))


@dataclasses.dataclass
class ParcelSent(Event):
    parcel: Parcel


def track(event: ParcelSent) -> None:
    SEEN.append(("tracked", event.parcel.label))


@pytest.fixture
def app(tmp_path: pathlib.Path) -> Iterator[Flask]:
    """A Flask app with Flask-SQLAlchemy (its own SQLite file) and eventbus on the embedded queue."""
    SEEN.clear()
    listener(queued=True, after_commit=True)(track)   # every test starts with no listeners
    flask_app = Flask(__name__)
    flask_app.config.update(SQLALCHEMY_DATABASE_URI=f"sqlite:///{tmp_path / 'app.sqlite3'}",
                            EVENTBUS_CONNECTION="database", EVENTBUS_MAIL_URL="array")
    db.init_app(flask_app)
    EventBus(flask_app)
    with flask_app.app_context():
        db.create_all()
        db.session.add(Parcel(id=1, label="fragile"))
        db.session.commit()
    yield flask_app
    with flask_app.app_context():
        db.engine.dispose()


def work() -> int:
    return Worker.for_connection(options=WorkerOptions(stop_when_empty=True, sleep_s=0, memory_mb=0)).run()


def test_the_eventbus_keys_of_app_config_are_configure_arguments() -> None:
    config = {"EVENTBUS_CONNECTION": "redis", "EVENTBUS_REDIS_URL": "redis://cache:6379/3",
              "EVENTBUS_MAIL_URL": "log", "EVENTBUS_TRUSTED": ["shop"], "SECRET_KEY": "x"}
    assert configure_kwargs(config) == {
        "default": "redis", "mail": "log", "trusted": ["shop"],
        "connections": {"redis": {"driver": "redis", "url": "redis://cache:6379/3"}}}
    with pytest.raises(ConfigurationError, match="unknown Flask setting 'EVENTBUS_CONECTION'"):
        configure_kwargs({"EVENTBUS_CONECTION": "redis"})


def test_init_app_configures_eventbus_and_trusts_the_app_package(app: Flask) -> None:
    assert eventbus.settings().default == "database" and eventbus.settings().mail == "array"
    assert "test_flask" in registry.trusted_prefixes()
    assert app.extensions["eventbus"].settings == eventbus.settings()
    assert current_app_for_jobs() is app


def test_every_job_runs_in_a_fresh_app_context_and_loads_flask_sqlalchemy_models_there(app: Flask) -> None:
    """The issue: a Flask-SQLAlchemy job failed in the worker, 'Working outside of application context'."""
    with app.app_context():
        parcel = db.session.get(Parcel, 1)
        eventbus.dispatch(Inspect(parcel))
        eventbus.dispatch(Inspect())
        parcel.label = "fragile, this side up"
        db.session.commit()
    assert not has_app_context()
    assert work() == 0
    assert eventbus.failed_store().all() == []
    (name1, g1, label), (name2, g2, _) = SEEN
    assert name1 == name2 == app.name                         # one context per job:
    assert g1[0] is not g2[0] and g1[1] and g2[1]             # its own g, fresh
    assert label == "fragile, this side up"                  # loaded fresh, in the job's context
    assert not has_app_context()                             # popped after the job
    with app.app_context():
        assert db.engine.pool.checkedout() == 0              # its session was removed


def test_pushes_in_a_request_wait_for_db_session_to_commit(app: Flask) -> None:
    @app.post("/send/<int:commit>")
    def send(commit: int) -> str:
        parcel = db.session.get(Parcel, 1)
        emit(ParcelSent(parcel))
        if commit:
            db.session.commit()
        else:
            db.session.rollback()
        return "ok"

    with fake_queue() as queue:
        client = app.test_client()
        client.post("/send/0")
        assert queue.pushed == []
        client.post("/send/1")
        assert [p.job_class for p in queue.pushed] == [track]


def test_flask_eventbus_runs_the_eventbus_commands_on_the_app(app: Flask) -> None:
    runner = app.test_cli_runner()
    listed = runner.invoke(args=["eventbus", "--help"])
    assert listed.exit_code == 0 and "work" in listed.output and "failed" in listed.output
    assert "Usage: flask eventbus" in listed.output
    failed = runner.invoke(args=["eventbus", "failed"])
    assert failed.exit_code == 0 and "No failed jobs." in failed.output
    unknown = runner.invoke(args=["eventbus", "no-such-command"])
    assert unknown.exit_code == 2


def test_a_queued_listener_runs_in_the_app_context_too(app: Flask) -> None:
    with app.app_context():
        emit(ParcelSent(db.session.get(Parcel, 1)))
        db.session.commit()
    assert work() == 0
    assert SEEN == [("tracked", "fragile")]

