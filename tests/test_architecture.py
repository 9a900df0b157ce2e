"""The shape of the code: no import cycles (imports inside functions count), and the layering.

The import graph is read from the source with :mod:`ast`, not from ``sys.modules``: an import
made inside a function is an arrow like any other (a late import that dodges a cycle hides the
arrow, it does not remove it), and so is one under ``if TYPE_CHECKING:``: an annotation that
names a module above is a dependency on it all the same. What a lower module needs of a higher
one is a protocol it defines itself (``ObservedWorker``, ``RunsJobs``, ``Sendable``, ...).

A second graph follows what runs when a module is imported: the imports that execute, and the
packages an import runs first (importing ``a.b.c`` runs ``a`` and ``a.b``). A cycle there is an
import that fails for whoever imports one of its modules first.
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
    "eventbus.serializer", "eventbus.sql", "eventbus.dispatching.transactions", "eventbus.urls",
    "eventbus.queue", "eventbus.queue.base", "eventbus.testing", "eventbus.ext",
}


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking_block(node: ast.AST) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _nodes(tree: ast.AST, annotations: bool) -> list[ast.AST]:
    """Every node; without ``annotations``, not the bodies of ``if TYPE_CHECKING:``."""
    if annotations:
        return list(ast.walk(tree))
    found: list[ast.AST] = []
    for child in ast.iter_child_nodes(tree):
        if not _is_type_checking_block(child):
            found.append(child)
            found.extend(_nodes(child, annotations))
    return found


def imports_of(path: pathlib.Path, modules: set[str], *, annotations: bool = True,
               packages: bool = False) -> set[str]:
    """The project modules that ``path`` imports (the deepest existing module of each name).

    ``annotations``: imports under ``if TYPE_CHECKING:`` count. ``packages``: importing
    ``a.b.c`` is an arrow to the packages ``a`` and ``a.b`` too, which run first (but not to the
    importer's own ancestors, which are running already when it is imported)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in _nodes(ast.parse(path.read_text()), annotations):
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
    if packages:
        ancestors = {name.rsplit(".", n)[0] for n in range(1, name.count(".") + 1)}
        for target in list(resolved):
            parent = target.rpartition(".")[0]
            while parent:
                if parent in modules and parent not in ancestors and parent != name:
                    resolved.add(parent)
                parent = parent.rpartition(".")[0]
    return resolved


def import_graph() -> dict[str, set[str]]:
    """Who depends on whom: every import, in functions and under ``TYPE_CHECKING`` too."""
    paths = [p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")]
    modules = {module_name(p) for p in paths}
    return {module_name(p): imports_of(p, modules) for p in paths}


def run_time_graph() -> dict[str, set[str]]:
    """What runs what when imported: the imports that execute (not ``TYPE_CHECKING``), and the
    packages each import runs first. A cycle here is an import that fails for whoever imports
    one of its modules first (``from eventbus.state import RedisStateStore`` on its own did)."""
    paths = [p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")]
    modules = {module_name(p) for p in paths}
    return {module_name(p): imports_of(p, modules, annotations=False, packages=True) for p in paths}


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


def test_the_graph_sees_late_and_annotation_only_imports(tmp_path: pathlib.Path) -> None:
    """The reader counts a late import and one under TYPE_CHECKING, or the next test proves nothing."""
    graph = import_graph()
    assert "eventbus.queue.drivers" in graph["eventbus.config"]
    running = run_time_graph()  # importing eventbus.queue.redis.errors runs the package eventbus.queue.redis first
    assert {"eventbus.queue.redis.errors", "eventbus.queue.redis"} <= running["eventbus.state.redis"]
    assert "eventbus.queue.redis" not in running["eventbus.queue.redis.queue"]  # its own package: running already
    assert "eventbus.queue.base" not in running["eventbus.events"]  # only under TYPE_CHECKING there
    assert "eventbus.queue.base" in graph["eventbus.events"]  # under TYPE_CHECKING there
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import b\ndef f():\n    import c\n"
    path = ROOT / "eventbus" / "_graph_probe.py"
    path.write_text(source)
    try:
        assert imports_of(path, {"eventbus._graph_probe", "b", "c"}) == {"b", "c"}
    finally:
        path.unlink()
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_no_import_cycle() -> None:
    assert find_cycle(import_graph()) is None


def test_no_import_cycle_when_the_packages_run() -> None:
    assert find_cycle(run_time_graph()) is None


#: Who may import the worker itself (its package, its loop): who builds and runs one.
RUNS_WORKERS = {"eventbus", "eventbus.worker", "eventbus.cli.work", "eventbus.cli.supervise", "eventbus.scheduling.runner",
                "eventbus.testing.memory"}


def test_what_the_worker_calls_sees_a_narrow_view_of_it() -> None:
    """The worker's helpers (the concurrent runner, the outcomes, the prefetch, the watchdog)
    and its observers get what they use (a protocol, callables, the options), never the
    ``Worker``: they cannot reach into its loop, and the loop stays free to change."""
    graph = import_graph()
    offenders = {m for m, deps in graph.items() if deps & {"eventbus.worker", "eventbus.worker.loop"}}
    assert offenders <= RUNS_WORKERS, sorted(offenders - RUNS_WORKERS)


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
            if (ROOT / "eventbus" / "queue") in path.parents:
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


#: The outer layers, which may import an integration: the CLI, the framework glue, the dashboard.
OUTER_LAYERS = ("eventbus.integrations", "eventbus.cli", "eventbus.contrib", "eventbus.dashboard")


def test_the_core_never_imports_an_integration() -> None:
    """Tracing joins the push and the worker through the runtime's hooks (``trace_pushes``,
    ``observe_workers``); an integration the environment switches on is imported by name, by
    the runtime, when the settings are read. So no import of the core loads one."""
    graph = import_graph()
    offenders = {m: sorted(t for t in deps if t.startswith("eventbus.integrations"))
                 for m, deps in graph.items()
                 if m.split(".")[0] == "eventbus" and not m.startswith(OUTER_LAYERS)}
    assert {m: d for m, d in offenders.items() if d} == {}


#: Modules directly in eventbus/ (``__init__`` and ``__main__`` included): the families live in
#: packages of their own (dispatching, worker, queue drivers, batching, ...).
TOP_LEVEL_MODULES_AT_MOST = 20


def test_families_live_in_their_wings_and_the_hall_does_not_grow() -> None:
    flat = sorted(p.name for p in (ROOT / "eventbus").glob("*.py"))
    assert len(flat) <= TOP_LEVEL_MODULES_AT_MOST, flat
    strays = [p.relative_to(ROOT).as_posix() for pattern in ("worker*.py", "*dispatching.py", "queue/redis_*.py",
                                                              "queue/database_*.py")
              for p in (ROOT / "eventbus").glob(pattern)]
    assert strays == [], ("the worker's modules go in eventbus/worker/, the dispatching side's in "
                          "eventbus/dispatching/, a driver's in its package")
    for wing in ("dispatching", "worker", "queue"):  # the tests mirror the source
        assert list((ROOT / "tests" / wing).glob("test_*.py")), f"tests/{wing}/ holds no tests"


@pytest.mark.parametrize("old", sorted(__import__("eventbus._moved", fromlist=["MOVED"]).MOVED))
def test_an_old_module_path_warns_and_gives_the_module_at_its_new_place(old: str) -> None:
    import importlib
    import sys

    from eventbus._moved import MOVED

    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {MOVED[old]}"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(MOVED[old])
    assert module.__name__ == MOVED[old]


# -- process state ----------------------------------------------------------------------------

#: Calls whose result is state that changes: containers, locks, context and thread-locals.
_MUTABLE_FACTORIES = {"dict", "list", "set", "defaultdict", "OrderedDict", "deque", "Counter",
                      "Lock", "RLock", "Condition", "Event", "Semaphore", "local", "ContextVar",
                      "WeakSet", "WeakKeyDictionary", "WeakValueDictionary"}
_MUTABLE_LITERALS = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)

#: The module-level state that stays outside eventbus/runtime.py, and why. Everything else is
#: the runtime's: its per-configuration ``cache()`` or its ``registries()``.
STATE_ALLOWED = {
    # per context or per thread by nature: the runtime cannot hold one per context
    "eventbus.dispatching.collecting:_bulk_buffer": "a ContextVar: the bulk_pushes() block of this context",
    "eventbus.dispatching.collecting:_taking": "the lock guarding the lists the ContextVar holds",
    "eventbus.dispatching.transactions:_pending": "a ContextVar: pushes waiting for this context's commit",
    "eventbus.aio:_local": "a thread-local: the event loop of each thread",
    "eventbus.contrib.sqlalchemy:_current": "a ContextVar: the session of this request or job",
    # below the runtime in the import graph (the runtime imports them): they cannot reach it
    "eventbus.queue.drivers:_drivers": "driver table; config validates names through it, below runtime",
    "eventbus.queue.drivers:_lock": "guards the driver table",
    "eventbus.queue.drivers:global _entry_points_loaded": "the eventbus.drivers entry points, loaded once",
    "eventbus.sql:_engines": "engines by URL, below runtime; runtime.close() and reset() dispose them",
    "eventbus.sql:_created": "tables made by URL, forgotten with the engines",
    "eventbus.sql:_lock": "guards the engines",
    "eventbus.sql:global _lock": "a forked child replaces a lock its parent may have held",
    "eventbus.queue.base:_warned_signals": "warn once per process about a bad worker signal value",
    # process-wide by the platform: signals and fork belong to the process, not a configuration
    "eventbus.worker.timeouts:global _main_ident": "the thread that may install signal handlers",
    "eventbus.worker.timeouts:global _installed": "the SIGALRM handler is the process's",
    "eventbus.worker.timeouts:global _armed": "the one alarm a process has",
    "eventbus.queue.redis.wire:global _forks": "fork counter: a child drops its parent's sockets",
    # framework glue the framework itself makes process-global (one app, one engine set)
    "eventbus.dispatching.plan:push_interceptors": "fake queues installed by eventbus.testing (public)",
    "eventbus.dispatching.transactions:_holders": "ORM transaction holders the integrations install",
    "eventbus.contrib._sqlalchemy_transactions:_followed": "SQLAlchemy event listeners, once per class",
    "eventbus.contrib.sqlalchemy:_sources": "the sessionmakers given to use_sessions()",
    "eventbus.contrib.sqlalchemy:global _installed": "the SQLAlchemy hooks, installed once",
    "eventbus.contrib.django.wiring:global _installed": "Django's signals, connected once",
    "eventbus.contrib.flask:global _installed": "the job scope, registered once",
    "eventbus.contrib.flask:global _app": "the Flask app jobs run in (Flask's own app is global)",
    "eventbus.integrations.otel:global _enabled": "OpenTelemetry's tracer provider is process-global",
    "eventbus.integrations.otel:global _provider": "OpenTelemetry's tracer provider is process-global",
}


def module_state(path: pathlib.Path, module: str | None = None) -> list[str]:
    """``module:name`` for each module-level mutable value (an UPPER_CASE name is a constant
    table, ``__all__`` the exports) and ``module:global name`` for each ``global`` statement."""
    module = module or module_name(path)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if not isinstance(target, ast.Name) or target.id.isupper() or target.id.startswith("__"):
            continue
        func = value.func if isinstance(value, ast.Call) else None
        called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if isinstance(value, _MUTABLE_LITERALS) or called in _MUTABLE_FACTORIES:
            found.append(f"{module}:{target.id}")
    found += [f"{module}:global {name}" for node in ast.walk(tree) if isinstance(node, ast.Global)
              for name in node.names]
    return sorted(set(found))


def test_the_state_scan_sees_containers_locks_context_variables_and_globals(tmp_path: pathlib.Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("import threading, contextvars\nTABLE = {'a': 1}\n__all__ = ['f']\n"
                     "_cache = {}\n_seen: set[str] = set()\n_lock = threading.Lock()\n"
                     "_var = contextvars.ContextVar('v')\n_count = 0\n"
                     "def f():\n    global _count\n    _count += 1\n")
    found = module_state(probe, "eventbus.probe")
    assert [entry.split(":")[1] for entry in found] == ["_cache", "_lock", "_seen", "_var", "global _count"]
    assert not set(found) & set(STATE_ALLOWED)  # each of them would fail the test below


def test_process_state_lives_in_the_runtime() -> None:
    """State outside eventbus/runtime.py is in STATE_ALLOWED with its reason, or a bug: a cache
    built from the settings that ``configure()`` cannot drop, a table tests must reset by hand."""
    found = [entry for path in sorted((ROOT / "eventbus").rglob("*.py"))
             if path.name != "runtime.py" or path.parent.name != "eventbus"
             for entry in module_state(path)]
    strays = [entry for entry in found if entry not in STATE_ALLOWED]
    assert strays == [], ("keep it in eventbus.runtime (cache() for what one configuration "
                          "builds, registries() for what the app registers), or add it to "
                          "STATE_ALLOWED with the reason it cannot be")
    assert sorted(set(STATE_ALLOWED) - set(found)) == [], "STATE_ALLOWED names state that is gone"
