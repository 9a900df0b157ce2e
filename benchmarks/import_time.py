"""What ``import eventbus`` costs a process: the time, and which optional libraries it loads.

    PYTHONPATH=. python benchmarks/import_time.py [--runs 20] [--against OTHER_TREE]

Each run is a fresh interpreter (``python -c``) that times ``import eventbus`` alone, so
interpreter start-up is left out; the bare interpreter's own import of ``asyncio`` is printed
beside it as the machine's yardstick. The median and the best of ``--runs`` are printed, wall
time and the process's CPU time (CPU time moves less when other processes share the machine).
``--against`` measures another checkout the same way, interleaved run by run, so both see the
same load. Every run also lists the heavy optional modules the import loaded (there should be
none: SQLAlchemy, redis-py, ... are imported when a connection first needs them).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
#: Modules ``import eventbus`` must not load: each belongs to a driver, store or add-on.
HEAVY = ("sqlalchemy", "redis", "redis.asyncio", "jinja2", "httpx", "aiosmtplib", "click",
         "importlib.metadata", "email.mime", "zoneinfo")

PROBE = """
import json, sys, time
wall, cpu = time.perf_counter(), time.process_time()
import {module}
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
heavy = [m for m in {heavy!r} if m in sys.modules]
print(json.dumps({{"wall_ms": wall * 1000, "cpu_ms": cpu * 1000, "heavy": heavy}}))
"""


def measure(tree: pathlib.Path | None, module: str = "eventbus") -> dict[str, object]:
    """One fresh interpreter importing ``module`` (from ``tree``, when given, else as installed)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVENTBUS_")}
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    out = subprocess.run([sys.executable, "-c", PROBE.format(module=module, heavy=HEAVY)], env=env,
                         cwd=tree or ROOT, capture_output=True, text=True, check=True).stdout
    result: dict[str, object] = json.loads(out.strip().splitlines()[-1])
    return result


def summary(label: str, runs: list[dict[str, object]]) -> str:
    wall = [float(str(r["wall_ms"])) for r in runs]
    cpu = [float(str(r["cpu_ms"])) for r in runs]
    heavy = sorted({m for r in runs for m in r.get("heavy", [])})  # type: ignore[attr-defined]
    return (f"{label:<28} wall median {statistics.median(wall):6.1f} ms, best {min(wall):6.1f} ms; "
            f"cpu median {statistics.median(cpu):6.1f} ms; heavy modules loaded: {heavy or 'none'}")


def compile_tree(tree: pathlib.Path) -> None:
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "eventbus")],
                   stdout=subprocess.DEVNULL, check=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--against", type=pathlib.Path, default=None,
                        help="another checkout of eventbus to measure the same way")
    args = parser.parse_args()
    for tree in (ROOT, args.against):  # the bytecode pip writes for an installed package, which
        if tree is not None:  # the first import does not write where PYTHONDONTWRITEBYTECODE is set
            compile_tree(tree)
            measure(tree)
    ours: list[dict[str, object]] = []
    theirs: list[dict[str, object]] = []
    yardstick: list[dict[str, object]] = []
    for _ in range(args.runs):
        ours.append(measure(ROOT))
        if args.against:
            theirs.append(measure(args.against))
        yardstick.append(measure(None, "asyncio"))
    print(summary("import eventbus (this tree)", ours))
    if args.against:
        print(summary(f"import eventbus ({args.against})", theirs))
    print(summary("import asyncio (yardstick)", yardstick))


if __name__ == "__main__":
    main()
