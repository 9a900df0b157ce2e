"""``docs/screenshots.py``, which makes the README's dashboard pictures, keeps working: it runs its
demo on the test Redis database (under a prefix of its own, removed afterwards) and captures
pages in headless Chromium; a page the dashboard does not have is skipped."""

from __future__ import annotations

import importlib.util
import os
import pathlib
import subprocess
import sys
from collections.abc import Iterator
from types import ModuleType

import pytest
import redis
from helpers import REDIS_URL, ROOT
from observing import serving, use_backend
from test_browser import CHROMIUM

pytest.importorskip("playwright.sync_api")
if not os.path.exists(CHROMIUM):
    pytest.skip(f"no Chromium at {CHROMIUM}", allow_module_level=True)

from eventbus.dashboard import create_app  # noqa: E402

pytestmark = pytest.mark.integration
SCRIPT = ROOT / "docs" / "screenshots.py"


@pytest.fixture
def script() -> Iterator[ModuleType]:
    spec = importlib.util.spec_from_file_location("screenshots", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["screenshots"] = module  # its dataclass looks its module up
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules["screenshots"]


def test_the_script_captures_pages_of_its_demo_and_leaves_no_key(tmp_path: pathlib.Path,
                                                                 redis_client: redis.Redis) -> None:
    redis_client.set("someone-else", "kept")
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVENTBUS_")}
    proc = subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path), "--redis-url", REDIS_URL,
                           "--pages", "jobs,job"],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.glob("*.png")) == ["dashboard-job.png", "dashboard-jobs.png"]
    for name in ("dashboard-jobs.png", "dashboard-job.png"):
        image = (tmp_path / name).read_bytes()
        assert image.startswith(b"\x89PNG") and 20_000 < len(image) < 150_000, name
    assert [k.decode() for k in redis_client.keys("*")] == ["someone-else"]  # the demo's keys are gone


def test_a_page_the_dashboard_does_not_have_is_skipped(script: ModuleType, tmp_path: pathlib.Path,
                                                       redis_client: redis.Redis) -> None:
    use_backend("redis", tmp_path)
    shots = [script.Shot("later", "/a-page-added-later", "later.png"), script.Shot("queues", "/queues", "q.png")]
    with serving(create_app()) as port:
        saved = script.capture(f"http://127.0.0.1:{port}", tmp_path / "out", shots, {})
    assert saved == [tmp_path / "out" / "q.png"] and (tmp_path / "out" / "q.png").read_bytes()[:4] == b"\x89PNG"


def test_every_committed_picture_is_small_and_referenced(script: ModuleType) -> None:
    readme, operations = (ROOT / "README.md").read_text(), (ROOT / "docs" / "operations.md").read_text()
    for shot in script.PAGES:
        image = ROOT / "docs" / "images" / shot.file
        if not image.exists():  # a page this version does not have (supervisors, until it does)
            continue
        assert image.stat().st_size < 155_000, shot.file
        assert f"docs/images/{shot.file}" in readme and f"images/{shot.file}" in operations, shot.file
