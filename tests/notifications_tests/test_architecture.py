"""The shape of the notifications package: no import cycle, the core reached through one module.

Imports inside functions count (a late import that dodges a cycle is still a cycle); imports under
``if TYPE_CHECKING:`` do not (they never run).
"""

from __future__ import annotations

import ast
import pathlib

import notifications

PACKAGE = pathlib.Path(notifications.__file__).resolve().parent
CORE_GATEWAY = "notifications._core"


def module_name(path: pathlib.Path) -> str:
    parts = ["notifications", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def _is_type_checking_block(node: ast.AST) -> bool:
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _runtime_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement that can run, at any depth, outside ``if TYPE_CHECKING:``."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if _is_type_checking_block(node):
            for child in getattr(node, "orelse", []):
                visit(child)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _absolute(module: str, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    is_package = MODULES[module].name == "__init__.py"
    base = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imported_modules(module: str) -> set[str]:
    """Fully qualified names of the modules ``module`` imports (``from a import b``: a.b if b is a module)."""
    names: set[str] = set()
    for node in _runtime_imports(ast.parse(MODULES[module].read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
            continue
        base = _absolute(module, node)
        for alias in node.names:
            candidate = f"{base}.{alias.name}"
            names.add(candidate if candidate in MODULES else base)
    return names


def import_graph() -> dict[str, set[str]]:
    return {m: {i for i in imported_modules(m) if i in MODULES and i != m} for m in MODULES}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path (first module repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        state[node] = 2
        path.pop()
        return None

    for start in sorted(graph):
        if start not in state:
            found = visit(start)
            if found:
                return found
    return None


def test_the_graph_sees_function_level_imports_and_skips_type_checking_blocks() -> None:
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import a\n"
                     "else:\n    import b\ndef f():\n    import c\n")
    assert sorted(n.names[0].name for n in _runtime_imports(tree) if isinstance(n, ast.Import)) == ["b", "c"]
    assert find_cycle({"x": {"y"}, "y": {"z"}, "z": {"x"}}) == ["x", "y", "z", "x"]
    assert find_cycle({"x": {"y"}, "y": set()}) is None


def test_no_import_cycle_inside_notifications() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_core_is_imported_in_one_place() -> None:
    """The core's modules are being renamed; only notifications._core may name them."""
    importers = sorted(m for m in MODULES
                       if any(i == "eventbus" or i.startswith("eventbus.") for i in imported_modules(m)))
    assert importers == [CORE_GATEWAY]
