"""The README's first command: the shop example runs end to end on the embedded defaults."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from helpers import ROOT

pytestmark = pytest.mark.integration


def test_shop_example_runs_end_to_end(tmp_path: pathlib.Path) -> None:
    shop = tmp_path / "shop"
    shutil.copytree(ROOT / "examples" / "shop", shop, ignore=shutil.ignore_patterns("storage", "*.sqlite3*"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVENTBUS_")}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run([sys.executable, str(shop / "run.py")], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "emitted OrderShipped(order_id=7); 1 job(s) now waiting" in out
    assert "shop.app.NotifyCustomer [default]" in out and out.count("DONE") == 4
    assert "audit: order 7 shipped" in proc.stderr and "sms to +15550100" in proc.stderr
    [eml] = list((shop / "storage" / "mail").glob("*.eml"))
    text = eml.read_text()
    assert "Subject: Order #7 has shipped" in text and "To: ada@example.com" in text
    assert f"mail written to {eml}" in out
    assert "database notification: {'order_id': 7" in out
    assert "0 job(s) left; failed jobs: 0" in out
    assert (shop / "eventbus.sqlite3").exists()
