"""Django: settings.EVENTBUS, models by key through the default manager, after_commit on
transaction.on_commit, connections around jobs, manage.py eventbus, migrations, test helpers."""

from __future__ import annotations

import pathlib
from collections.abc import Iterator
from typing import Any

import django_setup  # noqa: F401  (sets Django up: import first)
import pytest
import sqlalchemy as sa
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, transaction
from django.test import TestCase, override_settings
from django_test_app.models import Gadget, Ticket

import eventbus
from eventbus import registry, runtime, serializer
from eventbus.contrib.django import wiring
from eventbus.contrib.django.testing import FakeQueueMixin, eventbus_inline, run_jobs_inline  # noqa: F401
from eventbus.errors import ConfigurationError, ModelNotFoundError, SerializationError
from eventbus.testing import fake_queue

SEEN: list[Any] = []


@pytest.fixture(autouse=True)
def django_eventbus() -> Iterator[None]:
    """Every test starts unconfigured (tests/conftest.py); give it settings.EVENTBUS back."""
    SEEN.clear()
    eventbus.trust("test_django")
    wiring.configure_from_settings()
    yield


class Polish(eventbus.Job):
    def __init__(self, gadget: Gadget) -> None:
        self.gadget = gadget

    def handle(self) -> None:
        SEEN.append(self.gadget.name)


class Shipped(Polish):
    after_commit = True


def test_settings_eventbus_configures_eventbus_and_trusts_the_projects_own_apps() -> None:
    url = eventbus.settings().connection_config("database")["url"]
    assert url == settings.EVENTBUS["connections"]["database"]["url"]
    assert {"django_shop", "django_test_app"} <= set(registry.trusted_prefixes())
    with override_settings(EVENTBUS={"default": "null"}):
        assert eventbus.settings().default == "null"
    assert eventbus.settings().default == "database"


def test_a_setting_that_is_not_a_dict_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(settings, "EVENTBUS", "redis")
    with pytest.raises(ConfigurationError, match="settings.EVENTBUS must be a dict"):
        wiring.configure_from_settings()


@pytest.mark.django_db
def test_a_model_travels_by_primary_key_and_is_loaded_with_the_default_manager() -> None:
    gadget = Gadget.objects.create(name="lamp")
    ticket = Ticket.objects.create(title="first")
    assert serializer.encode(gadget) == {"__t__": "model", "cls": "django_test_app.models.Gadget",
                                         "key": gadget.pk}
    assert serializer.decode(serializer.encode(ticket)).title == "first"   # a UUID key
    with pytest.raises(SerializationError, match="save it before dispatching"):
        serializer.encode(Gadget(name="unsaved"))
    eventbus.dispatch(Polish(gadget), connection="sync")
    assert SEEN == ["lamp"]
    Gadget.everything.filter(pk=gadget.pk).update(archived=True)
    with pytest.raises(ModelNotFoundError, match="Gadget"):
        eventbus.dispatch(Polish(gadget), connection="sync")


@pytest.mark.django_db(transaction=True)
def test_after_commit_pushes_wait_for_the_outermost_atomic_block_to_commit() -> None:
    gadget = Gadget.objects.create(name="kettle")
    with fake_queue() as queue:
        with transaction.atomic():
            Shipped(gadget).dispatch()
            with transaction.atomic():
                Shipped(gadget).dispatch()
            eventbus.dispatch(Polish(gadget))                 # not marked: at once
            assert len(queue.pushed) == 1
        assert len(queue.pushed) == 3
        with pytest.raises(ValueError):
            with transaction.atomic():
                Shipped(gadget).dispatch()
                raise ValueError("rolled back")
        assert len(queue.pushed) == 3
        with transaction.atomic():
            with eventbus.after_commit():                     # a block inside the transaction
                Shipped(gadget).dispatch()
            assert len(queue.pushed) == 3                     # released to the transaction
        assert len(queue.pushed) == 4
        Shipped(gadget).dispatch()                            # no transaction: at once
        assert len(queue.pushed) == 5


@pytest.mark.django_db
def test_in_a_test_case_on_commit_runs_with_capture_on_commit_callbacks(
        django_capture_on_commit_callbacks: Any) -> None:
    gadget = Gadget.objects.create(name="fan")
    with fake_queue() as queue:
        with django_capture_on_commit_callbacks(execute=True):
            Shipped(gadget).dispatch()
            assert queue.pushed == []
        assert len(queue.pushed) == 1


@pytest.mark.django_db(transaction=True)
def test_a_job_leaves_no_expired_connection_behind() -> None:
    Gadget.objects.count()
    assert connection.connection is not None
    with runtime.job_scope():
        Gadget.objects.count()
    assert connection.connection is None          # CONN_MAX_AGE = 0: closed after the job
    with transaction.atomic():                    # a job run inline keeps the caller's connection
        with runtime.job_scope():
            Gadget.objects.count()
        assert connection.connection is not None


def test_manage_py_eventbus_runs_the_eventbus_commands(capsys: pytest.CaptureFixture[str]) -> None:
    call_command("eventbus", "failed")
    assert "No failed jobs." in capsys.readouterr().out
    call_command("eventbus", "size", "--json")
    assert '"queue": "default"' in capsys.readouterr().out
    with pytest.raises(CommandError) as refused:
        call_command("eventbus", "no-such-command")
    assert refused.value.returncode == 2


@pytest.mark.django_db(transaction=True)
def test_manage_py_migrate_creates_the_eventbus_tables(tmp_path: pathlib.Path) -> None:
    url = f"sqlite:///{tmp_path / 'elsewhere.sqlite3'}"
    with override_settings(EVENTBUS={"connections": {"database": {"driver": "database", "url": url}}}):
        call_command("migrate", "eventbus", "zero", verbosity=0)
        call_command("migrate", "eventbus", verbosity=0)
        runtime.reset()
    def tables_at(where: str) -> set[str]:
        engine = sa.create_engine(where)
        try:
            return set(sa.inspect(engine).get_table_names())
        finally:
            engine.dispose()

    assert {"jobs", "eventbus_signals", "failed_jobs"} <= tables_at(url)
    # The notifications are the app's data: in Django's default database, beside its models.
    assert "notifications" not in tables_at(url)
    assert "notifications" in tables_at(f"sqlite:///{connection.settings_dict['NAME']}")


@run_jobs_inline()
@pytest.mark.django_db
def test_run_jobs_inline_runs_queued_jobs_in_the_test() -> None:
    eventbus.dispatch(Polish(Gadget.objects.create(name="clock")))
    assert SEEN == ["clock"]


@pytest.mark.django_db
def test_the_eventbus_inline_fixture_runs_queued_jobs_in_the_test(eventbus_inline: None) -> None:
    eventbus.dispatch(Polish(Gadget.objects.create(name="radio")))
    assert SEEN == ["radio"]


class FakeQueueTests(FakeQueueMixin, TestCase):
    """Django's own TestCase, as under ``manage.py test``."""

    def setUp(self) -> None:
        super().setUp()
        eventbus.trust("test_django")
        wiring.configure_from_settings()

    def test_pushes_are_recorded(self) -> None:
        gadget = Gadget.objects.create(name="toaster")
        with self.captureOnCommitCallbacks(execute=True):
            Shipped(gadget).dispatch()
        self.queue.assert_pushed(Shipped, lambda job: job.gadget.pk == gadget.pk, times=1)

