"""``--app``: a module that happens to lie in the working directory never shadows the app
package of the same name (the directory is searched last, after the installed packages)."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from helpers import ROOT


def layout(tmp_path: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path, dict[str, str]]:
    """``site/shop/app.py`` (the app, importable from PYTHONPATH like an installed package) and
    a working directory holding a stray ``shop.py``."""
    site, work = tmp_path / "site", tmp_path / "work"
    (site / "shop").mkdir(parents=True)
    work.mkdir()
    (site / "shop" / "__init__.py").write_text("")
    (site / "shop" / "app.py").write_text("import eventbus\neventbus.configure(default='null')\n"
                                           "print('the real app', flush=True)\n")
    (work / "shop.py").write_text("import pathlib\npathlib.Path('shadow-ran').write_text('yes')\n"
                                  "raise SystemExit('the stray module ran')\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVENTBUS_")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(ROOT)])
    return site, work, env


@pytest.mark.parametrize("command", [[sys.executable, "-m", "eventbus"], ["eventbus"]],
                         ids=["python -m eventbus", "eventbus"])
def test_a_module_in_the_working_directory_never_shadows_the_app(tmp_path: pathlib.Path,
                                                                  command: list[str]) -> None:
    _, work, env = layout(tmp_path)
    if command == ["eventbus"]:
        command = [shutil.which("eventbus", path=str(pathlib.Path(sys.executable).parent)) or "eventbus"]
    proc = subprocess.run([*command, "size", "--app", "shop.app"], cwd=work, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "the real app" in proc.stdout and not (work / "shadow-ran").exists()


def test_an_app_in_the_working_directory_is_still_found(tmp_path: pathlib.Path) -> None:
    _, work, env = layout(tmp_path)
    (work / "mine.py").write_text("import eventbus\neventbus.configure(default='null')\nprint('mine')\n")
    proc = subprocess.run([sys.executable, "-m", "eventbus", "size", "--app", "mine"], cwd=work, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "mine" in proc.stdout, proc.stderr
