"""The public surface: sorted __all__ that matches what is importable, and the layering rule."""

from __future__ import annotations

import ast
import importlib
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("name", ["eventbus", "listeners", "notifications", "eventbus.testing",
                                  "notifications.testing", "notifications.mail", "eventbus.failed", "eventbus.queue"])
def test_all_is_sorted_and_importable(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__all__ == sorted(module.__all__)
    for attr in module.__all__:
        assert hasattr(module, attr), f"{name}.{attr}"


def _imports(path: pathlib.Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def test_core_never_imports_listeners_or_notifications() -> None:
    offenders = {str(p.relative_to(ROOT)): _imports(p) & {"listeners", "notifications"}
                 for p in (ROOT / "eventbus").rglob("*.py")}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_listeners_do_not_import_notifications() -> None:
    offenders = [p for p in (ROOT / "listeners").rglob("*.py") if "notifications" in _imports(p)]
    assert offenders == []


def test_no_pickle_anywhere() -> None:
    for package in ("eventbus", "listeners", "notifications"):
        for path in (ROOT / package).rglob("*.py"):
            assert not _imports(path) & {"pickle", "cloudpickle", "dill", "marshal"}, path
