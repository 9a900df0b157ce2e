"""The one command for each framework example in docs/frameworks.md: ``python examples/<name>/run.py``
runs end to end on the embedded defaults, from a fresh copy of the example."""

from __future__ import annotations

import pathlib
import shutil

import pytest

from framework_helpers import EXAMPLES, PYTHON, clean_env, python_path, run_process

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(("example", "listener"), [
    ("flask_shop", "flask_shop.shop.NotifyCustomer"),
    ("fastapi_shop", "fastapi_shop.shop.NotifyCustomer"),
    ("django_shop", "django_shop.shop.listeners.NotifyCustomer"),
])
def test_the_example_ships_an_order_with_one_command(example: str, listener: str, tmp_path: pathlib.Path) -> None:
    copy = tmp_path / example
    shutil.copytree(EXAMPLES / example, copy,
                    ignore=shutil.ignore_patterns("storage", "*.sqlite3*", "__pycache__"))
    done = run_process([PYTHON, str(copy / "run.py")], env=clean_env(PYTHONPATH=python_path()),
                       cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "POST /orders/7/ship -> 200 {'order_id': 7, 'shipped': True}; 1 job(s) now waiting" in out
    assert f"{listener} [default]" in out and out.count("DONE") == 4
    assert "audit: order 7 shipped to customer 1" in done.stderr and "sms to +15550100" in done.stderr
    [eml] = list((copy / "storage" / "mail").glob("*.eml"))
    text = eml.read_text()
    assert "Subject: Order #7 has shipped" in text and "To: ada@example.com" in text
    assert f"mail written to {eml}" in out
    assert "database notification: {'order_id': 7, 'tracking_url': 'https://shop.example/track/7'}" in out
    assert "0 job(s) left; failed jobs: 0" in out
