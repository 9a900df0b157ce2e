"""The shape of the code: no import cycles (imports inside functions count), and the layering.

The import graph is read from the source with :mod:`ast`, not from ``sys.modules``: an import
made inside a function is an arrow like any other (a late import that dodges a cycle hides the
arrow, it does not remove it). Imports under ``if TYPE_CHECKING:`` are not arrows: they never run.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGES = ("eventbus", "listeners", "notifications")

#: What the add-ons may import from the core: the documented modules.
CORE_API_FOR_ADDONS = {
    "eventbus", "eventbus.aio", "eventbus.config", "eventbus.dispatching", "eventbus.errors",
    "eventbus.event_bus", "eventbus.events", "eventbus.jobs", "eventbus.registry", "eventbus.runtime",
    "eventbus.serializer", "eventbus.sql", "eventbus.transactions", "eventbus.urls",
    "eventbus.queue", "eventbus.queue.base", "eventbus.testing",
}


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking_block(node: ast.AST) -> bool:
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _walk_runtime(node: ast.AST) -> list[ast.AST]:
    """Every node that can run: skips the bodies of ``if TYPE_CHECKING:``."""
    found: list[ast.AST] = []
    for child in ast.iter_child_nodes(node):
        if _is_type_checking_block(child):
            continue
        found.append(child)
        found.extend(_walk_runtime(child))
    return found


def imports_of(path: pathlib.Path, modules: set[str]) -> set[str]:
    """The project modules that ``path`` imports (the deepest existing module of each name)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in _walk_runtime(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                targets.add(candidate if candidate in modules else base)
    resolved = set()
    for target in targets:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target and target != name:
            resolved.add(target)
    return resolved


def import_graph() -> dict[str, set[str]]:
    paths = [p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")]
    modules = {module_name(p) for p in paths}
    return {module_name(p): imports_of(p, modules) for p in paths}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle, as a path that returns to its start, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_graph_sees_imports_inside_functions(tmp_path: pathlib.Path) -> None:
    """The reader counts a late import (and skips TYPE_CHECKING), or the next test proves nothing."""
    graph = import_graph()
    assert "eventbus.queue.drivers" in graph["eventbus.config"]
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import b\ndef f():\n    import c\n"
    path = ROOT / "eventbus" / "_graph_probe.py"
    path.write_text(source)
    try:
        assert imports_of(path, {"eventbus._graph_probe", "b", "c"}) == {"c"}
    finally:
        path.unlink()
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_no_import_cycle() -> None:
    assert find_cycle(import_graph()) is None


def test_core_never_imports_the_addons() -> None:
    graph = import_graph()
    offenders = {m: sorted(t for t in deps if t.split(".")[0] in ("listeners", "notifications"))
                 for m, deps in graph.items() if m.split(".")[0] == "eventbus"}
    assert {m: d for m, d in offenders.items() if d} == {}


@pytest.mark.parametrize("addon", ["listeners", "notifications"])
def test_addons_import_only_the_documented_core_modules(addon: str) -> None:
    graph = import_graph()
    used = {t for m, deps in graph.items() if m.split(".")[0] == addon for t in deps
            if t.split(".")[0] == "eventbus"}
    assert used - CORE_API_FOR_ADDONS == set()


def test_no_module_names_a_driver_outside_its_own_file() -> None:
    """Facts about a driver live on its class: nobody else compares against its name."""
    offenders = []
    for pkg in ("eventbus", "listeners"):  # notifications has a "database" *channel*
        for path in (ROOT / pkg).rglob("*.py"):
            if path.parent.name == "queue" and path.parent.parent.name == "eventbus":
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Compare):
                    names = [c.value for c in [node.left, *node.comparators] if isinstance(c, ast.Constant)]
                    flat = [n for v in names for n in (v if isinstance(v, tuple) else (v,))]
                    if set(flat) & {"redis", "database", "sync", "null"}:
                        offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


def test_notifications_reach_the_core_through_one_module() -> None:
    """Only ``notifications._core`` imports eventbus: the whole dependency is visible in one file."""
    graph = import_graph()
    offenders = {m for m, deps in graph.items() if m.startswith("notifications")
                 and m != "notifications._core" and any(d.split(".")[0] == "eventbus" for d in deps)}
    assert offenders == set()
