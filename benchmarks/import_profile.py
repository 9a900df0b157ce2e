"""How long ``import eventbus`` takes in a fresh process, and where the time goes.

    python benchmarks/import_profile.py [--runs 20] [--top 15] [--module eventbus]

Starts ``--runs`` fresh interpreters, alternating ``python -c "import eventbus"`` with a bare
``python -c pass``, and prints the medians: the import timed inside the process (``perf_counter``
around the statement), and the whole process's wall time beside the bare interpreter's. Then
runs ``python -X importtime -c "import eventbus"`` five times and prints the modules with the
largest median cumulative and self times, and the self time summed by top-level package (the
project's own modules and each dependency). Issue 29's target, ``import eventbus`` under 100 ms,
is checked on the in-process median. Every figure is this machine's, with its load at the time.
"""

from __future__ import annotations

import argparse
import collections
import os
import pathlib
import re
import statistics
import subprocess
import sys
import time

TARGET_S = 0.100
IMPORTTIME_RUNS = 5
LINE = re.compile(r"^import time:\s+(\d+)\s+\|\s+(\d+)\s+\|(\s*)(\S+)\s*$")


def environment() -> dict[str, str]:
    """This environment without the project's settings, so nothing configures itself differently."""
    return {k: v for k, v in os.environ.items() if not k.startswith("EVENTBUS_")}


def wall(code: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, *code], check=True, env=environment(), capture_output=True)
    return time.perf_counter() - started


def in_process(module: str) -> float:
    code = (f"import time; t = time.perf_counter(); import {module}; "
            "print(time.perf_counter() - t)")
    done = subprocess.run([sys.executable, "-c", code], check=True, env=environment(),
                          capture_output=True, text=True)
    return float(done.stdout.strip())


def importtime(module: str) -> list[tuple[str, int, int, int]]:
    """(module, self µs, cumulative µs, depth) for every line of one ``-X importtime`` run."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"], check=True,
                          env=environment(), capture_output=True, text=True)
    rows = []
    for line in done.stderr.splitlines():
        if match := LINE.match(line):
            self_us, cumulative_us, indent, name = match.groups()
            rows.append((name, int(self_us), int(cumulative_us), len(indent) // 2))
    return rows


def medians(runs: list[list[tuple[str, int, int, int]]]) -> dict[str, tuple[float, float]]:
    """Each module's median (self µs, cumulative µs) over the runs it appeared in."""
    seen: dict[str, list[tuple[int, int]]] = collections.defaultdict(list)
    for rows in runs:
        for name, self_us, cumulative_us, _ in rows:
            seen[name].append((self_us, cumulative_us))
    return {name: (statistics.median(s for s, _ in values), statistics.median(c for _, c in values))
            for name, values in seen.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20, help="fresh processes of each kind")
    parser.add_argument("--top", type=int, default=15, help="modules listed")
    parser.add_argument("--module", default="eventbus")
    args = parser.parse_args()
    # The bytecode pip writes for an installed package (an editable tree gets it from its first
    # import, unless PYTHONDONTWRITEBYTECODE is set): without it every run would time the compiler.
    root = pathlib.Path(__file__).resolve().parent.parent
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "eventbus")],
                   stdout=subprocess.DEVNULL, check=True)
    inside, whole, bare = [], [], []
    for _ in range(args.runs):
        inside.append(in_process(args.module))
        whole.append(wall(["-c", f"import {args.module}"]))
        bare.append(wall(["-c", "pass"]))
    import_s, whole_s, bare_s = (statistics.median(v) for v in (inside, whole, bare))
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, medians of {args.runs} fresh processes:")
    print(f"  import {args.module}, timed inside the process: {import_s * 1000:.1f} ms "
          f"(min {min(inside) * 1000:.1f}, max {max(inside) * 1000:.1f})")
    print(f"  python -c 'import {args.module}': {whole_s * 1000:.1f} ms wall; python -c pass: "
          f"{bare_s * 1000:.1f} ms; difference {(whole_s - bare_s) * 1000:.1f} ms")
    runs = [importtime(args.module) for _ in range(IMPORTTIME_RUNS)]
    table = medians(runs)
    print(f"\n-X importtime, medians of {IMPORTTIME_RUNS} runs; largest cumulative (ms, self in brackets):")
    for name, (self_us, cumulative_us) in sorted(table.items(), key=lambda kv: -kv[1][1])[:args.top]:
        print(f"  {cumulative_us / 1000:8.1f}  ({self_us / 1000:5.1f})  {name}")
    print("\nlargest self time (ms):")
    for name, (self_us, _) in sorted(table.items(), key=lambda kv: -kv[1][0])[:args.top]:
        print(f"  {self_us / 1000:8.1f}  {name}")
    packages: dict[str, float] = collections.defaultdict(float)
    for name, (self_us, _) in table.items():
        packages[name.split(".")[0]] += self_us
    total = sum(packages.values())
    print(f"\nself time by top-level package ({total / 1000:.1f} ms in all, {len(table)} modules):")
    for name, self_us in sorted(packages.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"  {self_us / 1000:8.1f}  {self_us / total:4.0%}  {name}")
    verdict = "met" if import_s < TARGET_S else "MISSED"
    print(f"\nTarget of issue 29: {verdict}: import {args.module} under {TARGET_S * 1000:.0f} ms "
          f"({import_s * 1000:.1f} ms)")


if __name__ == "__main__":
    main()
