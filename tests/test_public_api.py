"""The public surface: sorted __all__ that matches what is importable, and the layering rule."""

from __future__ import annotations

import ast
import importlib
import pathlib
import subprocess
import sys
import warnings

import pytest

from eventbus._moved import MOVED_TO_EXT

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("name", ["eventbus", "listeners", "notifications", "eventbus.testing",
                                  "notifications.testing", "notifications.mail", "eventbus.failed", "eventbus.queue",
                                  "eventbus.ext"])
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


#: The top level is what an app uses (emit, dispatch, Job, configure, the errors it catches, the
#: events it listens to...); what driver, handler and integration authors use is in eventbus.ext.
#: 79 names before eventbus.ext, 71 after; room for a few an app needs, not for another family.
APP_NAMES_AT_MOST = 75


def test_the_top_level_holds_what_an_app_uses() -> None:
    import eventbus

    assert len(eventbus.__all__) <= APP_NAMES_AT_MOST
    assert set(eventbus.__all__) & set(MOVED_TO_EXT) == set()


@pytest.mark.parametrize("name", sorted(MOVED_TO_EXT))
def test_a_name_that_moved_to_ext_still_imports_from_the_top_with_a_warning(name: str) -> None:
    import eventbus.ext

    namespace: dict[str, object] = {}
    with pytest.warns(DeprecationWarning, match=rf"eventbus\.{name} moved to eventbus\.ext "
                                                rf"\(from eventbus\.ext import {name}\)"):
        exec(f"from eventbus import {name}", namespace)
    assert namespace[name] is getattr(eventbus.ext, name)
    with pytest.warns(DeprecationWarning, match="moved to eventbus.ext"):  # every use warns
        assert getattr(eventbus, name) is namespace[name]


def test_every_name_of_ext_imports_without_a_warning() -> None:
    import eventbus.ext

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in eventbus.ext.__all__:
            namespace: dict[str, object] = {}
            exec(f"from eventbus.ext import {name}", namespace)
            assert namespace[name] is getattr(eventbus.ext, name)
    assert set(MOVED_TO_EXT) <= set(eventbus.ext.__all__)


def test_importing_eventbus_leaves_ext_alone() -> None:
    """``eventbus.ext`` costs an app nothing: ``import eventbus`` does not import it."""
    code = "import sys, eventbus; print('eventbus.ext' in sys.modules)"
    out = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=60, check=True).stdout
    assert out.strip() == "False"
