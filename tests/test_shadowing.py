"""A module of the app named like a package eventbus ships (``notifications``, ``listeners``) is
found before it on ``sys.path``: the CLI stops with one line naming the file, before it imports
the app (whose own imports would otherwise get the wrong module)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from helpers import ROOT


def run(directory: pathlib.Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVENTBUS_")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-m", "eventbus", *args], cwd=directory, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("shadow", ["notifications.py", "listeners/__init__.py"])
def test_a_module_shadowing_a_shipped_package_is_one_clear_error(tmp_path: pathlib.Path, shadow: str) -> None:
    path = tmp_path / shadow
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("SENT = []\n")
    (tmp_path / "site_app.py").write_text("import eventbus\n")
    for args in (["work", "--app", "site_app", "--stop-when-empty"], ["work", "--stop-when-empty"]):
        done = run(tmp_path, *args)
        assert done.returncode == 2, done.stdout + done.stderr
        name = shadow.split("/")[0].removesuffix(".py")
        shown = path if shadow.endswith(".py") else path.parent
        assert done.stderr.splitlines() == [
            f"eventbus: error: {shown.resolve()} shadows eventbus's {name!r} package: rename your module or "
            f"package {name!r} (or run from a directory that does not hold it)"]


def test_an_app_with_its_own_names_is_left_alone(tmp_path: pathlib.Path) -> None:
    (tmp_path / "site_app.py").write_text("import eventbus\n")
    (tmp_path / "my_notifications.py").write_text("")
    done = run(tmp_path, "work", "--app", "site_app", "--stop-when-empty", "--sleep", "0")
    assert done.returncode == 0, done.stderr
