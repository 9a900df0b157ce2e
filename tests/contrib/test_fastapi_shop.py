"""examples/fastapi_shop end to end on Redis: uvicorn serves the app in this process, the order
ships over HTTP, a real ``eventbus work`` process runs the queued jobs, the mail arrives at a real
SMTP server."""

from __future__ import annotations

import pathlib

import httpx
import pytest
import redis

import eventbus
from framework_helpers import EXAMPLES, PYTHON, Inbox, clean_env, python_path, run_process, serving
from helpers import REDIS_URL

pytestmark = pytest.mark.integration
SHOP = EXAMPLES / "fastapi_shop"


def test_an_order_shipped_over_http_reaches_the_customer_through_a_redis_worker(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, smtp: tuple[Inbox, str],
        redis_client: redis.Redis) -> None:
    inbox, mail_url = smtp
    settings = {"SHOP_DATABASE_URL": f"sqlite:///{tmp_path / 'shop.sqlite3'}", "EVENTBUS_MAIL_URL": mail_url,
                "EVENTBUS_CONNECTION": "redis", "EVENTBUS_REDIS_URL": REDIS_URL,
                "EVENTBUS_FAILED_URL": f"sqlite:///{tmp_path / 'failed.sqlite3'}"}
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    monkeypatch.syspath_prepend(str(SHOP))
    from fastapi_shop.app import app
    from fastapi_shop.models import Customer, Session, engine, seed

    seed()
    with serving(app) as url:
        response = httpx.post(f"{url}/orders/7/ship")
        missing = httpx.post(f"{url}/orders/8/ship")
    assert response.status_code == 200 and response.json() == {"order_id": 7, "shipped": True}
    assert missing.status_code == 404
    assert eventbus.connection().size() == 1

    env = clean_env(PYTHONPATH=python_path(SHOP), PYTHONWARNINGS="error", **settings)
    worker = run_process([PYTHON, "-m", "eventbus", "work", "--app", "fastapi_shop.app",
                          "--stop-when-empty", "--sleep", "0"], env=env, cwd=tmp_path)
    assert worker.returncode == 0, worker.stdout + worker.stderr
    assert worker.stdout.count("DONE") == 4 and "fastapi_shop.shop.NotifyCustomer [default]" in worker.stdout

    [message] = inbox.messages
    assert message["Subject"] == "Order #7 has shipped" and message["To"] == "ada@example.com"
    html = message.get_body(preferencelist=("html",)).get_content()  # type: ignore[union-attr]
    assert "https://shop.example/track/7" in html and "Analytical Engine manual" in html
    with Session() as session:
        [stored] = session.get(Customer, 1).notifications
    engine.dispose()
    assert stored.data == {"order_id": 7, "tracking_url": "https://shop.example/track/7"}
    assert eventbus.connection().size() == 0 and eventbus.failed_store().all() == []
