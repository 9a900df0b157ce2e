"""examples/flask_shop end to end: the app ships an order over its HTTP endpoint, a real
``flask eventbus work`` process runs the queued jobs, the mail arrives at a real SMTP server."""

from __future__ import annotations

import pathlib

import pytest

import eventbus
from framework_helpers import EXAMPLES, PYTHON, Inbox, clean_env, python_path, run_process

pytestmark = pytest.mark.integration
SHOP = EXAMPLES / "flask_shop"


def test_an_order_shipped_in_the_app_reaches_the_customer_by_mail_sms_and_database(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, smtp: tuple[Inbox, str]) -> None:
    inbox, mail_url = smtp
    settings = {"SHOP_DATABASE_URL": f"sqlite:///{tmp_path / 'shop.sqlite3'}", "EVENTBUS_MAIL_URL": mail_url}
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    monkeypatch.syspath_prepend(str(SHOP))
    from flask_shop import create_app
    from flask_shop.models import Customer, db, seed

    app = create_app()
    with app.app_context():
        seed()
    response = app.test_client().post("/orders/7/ship")
    assert response.status_code == 200 and response.get_json() == {"order_id": 7, "shipped": True}
    assert eventbus.connection().size() == 1           # NotifyCustomer, pushed on commit

    env = clean_env(PYTHONPATH=python_path(SHOP), PYTHONWARNINGS="error", **settings)
    # Two supervised workers: fresh processes that load the Flask app from FLASK_APP.
    worker = run_process([PYTHON, "-m", "flask", "--app", "flask_shop", "eventbus", "work",
                          "--processes", "2", "--stop-when-empty", "--sleep", "0"], env=env, cwd=tmp_path)
    assert worker.returncode == 0, worker.stdout + worker.stderr
    assert worker.stdout.count("DONE") == 4 and "flask_shop.shop.NotifyCustomer [default]" in worker.stdout
    assert "sms to +15550100" in worker.stderr

    [message] = inbox.messages
    assert message["Subject"] == "Order #7 has shipped" and message["To"] == "ada@example.com"
    text = message.get_body(preferencelist=("plain",)).get_content()  # type: ignore[union-attr]
    assert "Hello Ada Lovelace!" in text and "- Punch cards (x100)" in text
    with app.app_context():
        [stored] = db.session.get(Customer, 1).notifications
        db.engine.dispose()
    assert stored.data == {"order_id": 7, "tracking_url": "https://shop.example/track/7"}
    assert eventbus.connection().size() == 0 and eventbus.failed_store().all() == []
    # The notification is the app's data: it is in the shop's database, not beside the queue.
    assert tables_of(tmp_path / "shop.sqlite3") >= {"customer", "notifications"}
    assert "notifications" not in tables_of(tmp_path / "eventbus.sqlite3")


def tables_of(path: pathlib.Path) -> set[str]:
    import sqlalchemy as sa

    engine = sa.create_engine(f"sqlite:///{path}")
    try:
        return set(sa.inspect(engine).get_table_names())
    finally:
        engine.dispose()
