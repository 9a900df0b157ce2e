"""Throwaway environments for the peers: one venv per peer library, never project dependencies.

Each is a plain venv (no system site-packages) under a cache directory, with eventbus installed
from this tree (``pip install -e``) and the peer from the package index. A stamp file remembers what
was installed, so a second run reuses the environment.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from collections.abc import Sequence

DEFAULT_ROOT = pathlib.Path(os.environ.get("EVENTBUS_BENCH_VENV")
                            or pathlib.Path.home() / ".cache" / "eventbus-bench")


class InstallError(Exception):
    """An environment could not be built; the message is one line for the table."""


def python_of(venv: pathlib.Path) -> pathlib.Path:
    return venv / "bin" / "python"


def ensure(root: pathlib.Path, name: str, requirements: Sequence[str], tree: pathlib.Path, *,
           reinstall: bool = False) -> pathlib.Path:
    """The python of environment ``name`` holding eventbus (from ``tree``) and ``requirements``."""
    venv = root / name
    stamp = venv / "bench-stamp.json"
    wanted = {"requirements": list(requirements), "tree": str(tree), "python": sys.version.split()[0]}
    if not reinstall and stamp.exists() and json.loads(stamp.read_text()) == wanted:
        return python_of(venv)
    root.mkdir(parents=True, exist_ok=True)
    _run([sys.executable, "-m", "venv", "--clear", str(venv)], venv.with_suffix(".log"))
    _run([str(python_of(venv)), "-m", "pip", "install", "-q", "-e", f"{tree}[postgres]", *requirements],
         venv / "install.log")
    stamp.write_text(json.dumps(wanted))
    return python_of(venv)


def _run(command: list[str], log: pathlib.Path) -> None:
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as out:
        code = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT).returncode
    if code:
        lines = [line.strip() for line in log.read_text().splitlines() if line.strip()]
        errors = [line for line in lines if line.startswith("ERROR")] or lines or ["no output"]
        raise InstallError(f"install failed: {errors[-1][:120]} (see {log})")
