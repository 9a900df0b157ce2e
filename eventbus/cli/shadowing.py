"""A module of the app's own named like one of the packages eventbus ships.

A Django project's ``notifications`` app, or a ``listeners.py`` in the working directory, and
eventbus's package of that name cannot both be imported: whichever comes first on ``sys.path``
hides the other (the working directory is searched last by the CLI, so that a stray module
there never shadows the app; then it is the app's own ``import notifications`` that silently
gets eventbus's package). Either way something fails far from the cause, or runs the wrong
code. The CLI checks every entry of ``sys.path`` before it imports the app and stops with one
line naming the file that is in the way.
"""

from __future__ import annotations

import os
import pathlib
import sys

import eventbus
from eventbus.errors import ConfigurationError

#: The import packages of the eventbus distribution besides ``eventbus`` itself, each with a
#: module only it has (for when ``eventbus`` itself was imported from elsewhere, a copy of it).
SHIPPED = {"listeners": "queued.py", "notifications": "_core.py"}


def refuse_shadowed_packages() -> None:
    """ConfigurationError naming the file when a ``listeners`` or ``notifications`` module that
    is not eventbus's package of that name is anywhere on ``sys.path`` (the working directory
    included)."""
    home = pathlib.Path(eventbus.__file__).resolve().parent.parent
    for name, own_module in SHIPPED.items():
        for found in _candidates(name):
            if home / name in (found, *found.parents):
                continue
            if found.name != "__init__.py" or not (found.parent / own_module).is_file():
                raise ConfigurationError(
                    f"{found} shadows eventbus's {name!r} package: rename your module or package "
                    f"{name!r} (or run from a directory that does not hold it)")


def _candidates(name: str) -> list[pathlib.Path]:
    """Every ``name.py`` and ``name/__init__.py`` on ``sys.path`` and in the working directory,
    in search order (a package without ``__init__.py`` counts as its folder)."""
    found: list[pathlib.Path] = []
    for entry in [*sys.path, os.getcwd()]:
        base = pathlib.Path(entry or os.getcwd())
        for candidate in (base / f"{name}.py", base / name / "__init__.py"):
            if candidate.is_file():
                found.append(candidate.resolve())
        if (base / name).is_dir() and not (base / name / "__init__.py").exists() and any(
                (base / name).glob("*.py")):
            found.append((base / name).resolve())
    return found
