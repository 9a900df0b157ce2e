"""Throwaway environments for the peers: one venv per peer library, never project dependencies.

Each is a plain venv (no system site-packages) under a cache directory, with eventbus installed
from this tree (``pip install -e``, see :data:`EDITABLE_MODE`) and the peer from the package
index; a Node peer's packages go into ``node/`` inside the same directory (``npm install
--prefix``). A peer that needs a newer
Python than the one running the script gets its venv from the first such interpreter found on the
PATH or in pyenv's usual place. A stamp file remembers what was installed, so a second run reuses
the environment.
"""

from __future__ import annotations

import glob
import json
import os
import pathlib
import shutil
import subprocess
import sys
from collections.abc import Sequence

DEFAULT_ROOT = pathlib.Path(os.environ.get("EVENTBUS_BENCH_VENV")
                            or pathlib.Path.home() / ".cache" / "eventbus-bench")


class InstallError(Exception):
    """An environment could not be built; the message is one line for the table."""


def python_of(venv: pathlib.Path) -> pathlib.Path:
    return venv / "bin" / "python"


def node_modules(venv: pathlib.Path) -> pathlib.Path:
    """Where a Node peer's packages are, inside its environment."""
    return venv / "node" / "node_modules"


def interpreter(least: tuple[int, int] | None) -> str:
    """A Python of at least ``least``: this one if it will do, else the first found on the PATH
    (``python3.12``, ``python3.13``, ...) or under ``$PYENV_ROOT/versions`` (default ``~/.pyenv``)."""
    if least is None or sys.version_info[:2] >= least:
        return sys.executable
    for candidate in _candidates(least):
        if _is_at_least(candidate, least):
            return candidate
    raise InstallError(f"needs Python {least[0]}.{least[1]}")


def _candidates(least: tuple[int, int]) -> list[str]:
    """Interpreters that may be new enough, by name (a pyenv shim on the PATH may still refuse)."""
    minors = range(least[1], least[1] + 8)
    found = [path for minor in minors if (path := shutil.which(f"python{least[0]}.{minor}"))]
    pyenv = pathlib.Path(os.environ.get("PYENV_ROOT") or pathlib.Path.home() / ".pyenv")
    for minor in minors:
        found += sorted(glob.glob(str(pyenv / "versions" / f"{least[0]}.{minor}.*" / "bin" / "python")))
    return found


def _is_at_least(python: str, least: tuple[int, int]) -> bool:
    check = f"import sys; sys.exit(sys.version_info[:2] < {least!r})"
    try:
        return subprocess.run([python, "-c", check], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


#: How eventbus is installed from the tree: a ``.pth`` line that puts the tree on ``sys.path``.
#: setuptools' default editable install of a project with three top-level packages is an
#: import hook instead, which every interpreter of the venv imports at start-up (about 20 ms
#: here, paid by every peer's processes too, since each venv holds eventbus); an installed
#: wheel has neither, and this comes closest to it while following the tree's changes.
EDITABLE_MODE = "compat"


def ensure(root: pathlib.Path, name: str, requirements: Sequence[str], tree: pathlib.Path, *,
           python: tuple[int, int] | None = None, npm: Sequence[str] = (),
           reinstall: bool = False) -> pathlib.Path:
    """The python of environment ``name`` holding eventbus (from ``tree``), ``requirements`` and
    the Node packages ``npm``; built with a Python of at least ``python``."""
    venv = root / name
    stamp = venv / "bench-stamp.json"
    base = interpreter(python)
    wanted = {"requirements": list(requirements), "npm": list(npm), "tree": str(tree),
              "python": _version_of(base), "editable_mode": EDITABLE_MODE}
    if not reinstall and stamp.exists() and json.loads(stamp.read_text()) == wanted:
        byte_compile(python_of(venv), tree)
        return python_of(venv)
    if npm and shutil.which("npm") is None:
        raise InstallError("needs Node.js and npm on the PATH")
    root.mkdir(parents=True, exist_ok=True)
    _run([base, "-m", "venv", "--clear", str(venv)], venv.with_suffix(".log"))
    _run([str(python_of(venv)), "-m", "pip", "install", "-q", "-e", f"{tree}[postgres]",
          "--config-settings", f"editable_mode={EDITABLE_MODE}", *requirements], venv / "install.log")
    if npm:
        (venv / "node").mkdir(exist_ok=True)
        _run(["npm", "install", "--prefix", str(venv / "node"), "--no-audit", "--no-fund", "--silent",
              *npm], venv / "npm.log")
    byte_compile(python_of(venv), tree)
    stamp.write_text(json.dumps(wanted))
    return python_of(venv)


def byte_compile(python: str | pathlib.Path, tree: pathlib.Path) -> None:
    """Write the bytecode of eventbus's packages in ``tree`` and of the peers' job modules, as pip
    does for every package it installs from a wheel (the peers' libraries included).

    An editable install leaves that to the first import, which writes it unless
    ``PYTHONDONTWRITEBYTECODE`` is set; where it is, every worker start would compile eventbus
    from source (about 60 ms of its start here) while the peers load theirs compiled."""
    directories = [tree / name for name in ("eventbus", "listeners", "notifications")
                   if (tree / name).is_dir()]
    directories.append(pathlib.Path(__file__).resolve().parent.parent / "peer_jobs")
    subprocess.run([str(python), "-m", "compileall", "-q", *map(str, directories)],
                   stdout=subprocess.DEVNULL, check=True)


def _version_of(python: str) -> str:
    if python == sys.executable:
        return sys.version.split()[0]
    done = subprocess.run([python, "-c", "import platform; print(platform.python_version())"],
                          capture_output=True, text=True)
    return done.stdout.strip()


def _run(command: list[str], log: pathlib.Path) -> None:
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as out:
        code = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT).returncode
    if code:
        lines = [line.strip() for line in log.read_text().splitlines() if line.strip()]
        errors = [line for line in lines if line.startswith(("ERROR", "npm ERR", "npm error"))] \
            or lines or ["no output"]
        raise InstallError(f"install failed: {errors[-1][:120]} (see {log})")
