"""examples/django_shop end to end: the app ships an order over its URL (Django's test client,
in this process, with the order committed), a real ``manage.py eventbus work`` process runs the
queued jobs, the mail arrives at a real SMTP server."""

from __future__ import annotations

import os
import pathlib

import django_setup  # noqa: F401  (sets Django up: import first)
import pytest
from django.test import Client
from django_shop.shop.models import Customer, seed

import eventbus
from eventbus.contrib.django import wiring
from framework_helpers import PYTHON, Inbox, clean_env, python_path, run_process

pytestmark = pytest.mark.integration
HERE = pathlib.Path(__file__).resolve().parent


@pytest.mark.django_db(transaction=True)
def test_an_order_shipped_in_the_app_reaches_the_customer_by_mail_sms_and_database(
        tmp_path: pathlib.Path, smtp: tuple[Inbox, str]) -> None:
    inbox, mail_url = smtp
    django_setup.listen_again()
    wiring.configure_from_settings()
    eventbus.connection().clear()
    seed()
    response = Client().post("/orders/7/ship")
    assert response.status_code == 200 and response.json() == {"order_id": 7, "shipped": True}
    assert Client().post("/orders/8/ship").status_code == 404
    assert eventbus.connection().size() == 1                # pushed by transaction.on_commit

    env = clean_env(PYTHONPATH=python_path(HERE, django_setup.SHOP), PYTHONWARNINGS="error",
                    DJANGO_SETTINGS_MODULE="django_test_settings", EVENTBUS_MAIL_URL=mail_url)
    assert env["EVENTBUS_TEST_DJANGO_DIR"] == os.environ["EVENTBUS_TEST_DJANGO_DIR"]
    # Two supervised workers: fresh processes that set Django up from DJANGO_SETTINGS_MODULE.
    worker = run_process([PYTHON, str(django_setup.SHOP / "manage.py"), "eventbus", "work",
                          "--processes", "2", "--stop-when-empty", "--sleep", "0"], env=env, cwd=tmp_path)
    assert worker.returncode == 0, worker.stdout + worker.stderr
    assert worker.stdout.count("DONE") == 4, worker.stderr[-3000:]  # the log says why
    assert "django_shop.shop.listeners.NotifyCustomer [default]" in worker.stdout

    [message] = inbox.messages
    assert message["Subject"] == "Order #7 has shipped" and message["To"] == "ada@example.com"
    text = message.get_body(preferencelist=("plain",)).get_content()  # type: ignore[union-attr]
    assert "Hello Ada Lovelace!" in text and "Track your parcel: https://shop.example/track/7" in text
    [stored] = Customer.objects.get(pk=1).notifications
    assert stored.data == {"order_id": 7, "tracking_url": "https://shop.example/track/7"}
    assert eventbus.connection().size() == 0 and eventbus.failed_store().all() == []
    # The notification is the app's data: it is in Django's default database, not the queue's.
    from django.conf import settings

    directory = pathlib.Path(os.environ["EVENTBUS_TEST_DJANGO_DIR"])
    assert "notifications" in tables_of(pathlib.Path(settings.DATABASES["default"]["NAME"]))
    assert "notifications" not in tables_of(directory / "eventbus.sqlite3")


def tables_of(path: pathlib.Path) -> set[str]:
    import sqlalchemy as sa

    engine = sa.create_engine(f"sqlite:///{path}")
    try:
        return set(sa.inspect(engine).get_table_names())
    finally:
        engine.dispose()
