"""Each integration's public names: a sorted ``__all__`` of things that exist, and no framework
imported by ``import eventbus``."""

from __future__ import annotations

import importlib
import subprocess

import pytest

from framework_helpers import PYTHON, clean_env, python_path

MODULES = ["eventbus.contrib.aio", "eventbus.contrib.sqlalchemy", "eventbus.contrib.flask",
           "eventbus.contrib.starlette", "eventbus.contrib.fastapi", "eventbus.contrib.django.testing"]


@pytest.mark.parametrize("name", MODULES)
def test_all_is_sorted_and_importable(name: str) -> None:
    import django_setup  # noqa: F401  (eventbus.contrib.django.testing needs Django set up)

    module = importlib.import_module(name)
    assert module.__all__ == sorted(module.__all__)
    for attr in module.__all__:
        assert hasattr(module, attr), f"{name}.{attr}"


def test_the_core_imports_no_framework() -> None:
    code = ("import sys, eventbus, listeners, notifications, eventbus.cli; "
            "print(sorted(m for m in ('flask', 'flask_sqlalchemy', 'fastapi', 'starlette', 'django', "
            "'alembic', 'eventbus.contrib') if m in sys.modules))")
    done = subprocess.run([PYTHON, "-c", code], env=clean_env(PYTHONPATH=python_path()),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
