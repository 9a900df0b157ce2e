"""The CPU of one payload: built (``make_payload``), dispatched to the ``null`` driver, and changed
(``with_headers``, a trace context added on the way out), without a key and signed with one.

    PYTHONPATH=. python benchmarks/payload.py [--n 20000] [--rounds 5] [--against OTHER_TREE]

Each measurement is ``--n`` calls timed with ``time.process_time()`` (CPU of this process, which
moves less than wall time on a shared machine); the best and the median of ``--rounds`` are
printed in microseconds a call. ``--against`` runs another checkout the same way in alternating
fresh processes, so both see the same load. No server is needed.
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

PROBE = r"""
import json, statistics, sys, time
import eventbus
from eventbus.dispatching import make_payload, with_headers
from bench_app import Noop

n, rounds = int(sys.argv[1]), int(sys.argv[2])

def timed(fn):
    runs = []
    for _ in range(rounds):
        started = time.process_time()
        for _ in range(n):
            fn()
        runs.append((time.process_time() - started) / n * 1e6)
    return [min(runs), statistics.median(runs)]

out = {}
for signed in (False, True):
    eventbus.configure(default="n", connections={"n": {"driver": "null"}}, key="k" * 32 if signed else None)
    tag = " signed" if signed else ""
    out["make_payload" + tag] = timed(lambda: make_payload(Noop()))
    out["dispatch" + tag] = timed(lambda: eventbus.dispatch(Noop()))
    payload = make_payload(Noop())
    out["with_headers" + tag] = timed(lambda: with_headers(payload, {"traceparent": "00-1-2-01"}))
print(json.dumps(out))
"""


def run(tree: pathlib.Path, n: int, rounds: int) -> dict[str, list[float]]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), str(ROOT / "benchmarks")])}
    done = subprocess.run([sys.executable, "-c", PROBE, str(n), str(rounds)], env=env, cwd=tree,
                          capture_output=True, text=True, check=True)
    result: dict[str, list[float]] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--processes", type=int, default=3, help="fresh processes per tree")
    parser.add_argument("--against", type=pathlib.Path, help="another checkout, measured interleaved")
    args = parser.parse_args()
    trees = [ROOT] + ([args.against.resolve()] if args.against else [])
    results: dict[pathlib.Path, list[dict[str, list[float]]]] = {tree: [] for tree in trees}
    for _ in range(args.processes):
        for tree in trees:
            results[tree].append(run(tree, args.n, args.rounds))
    for tree in trees:
        print(f"{'this tree' if tree == ROOT else tree}:")
        for name in results[tree][0]:
            best = min(r[name][0] for r in results[tree])
            median = statistics.median(r[name][1] for r in results[tree])
            print(f"  {name:<22} best {best:6.2f} µs, median {median:6.2f} µs a call")


if __name__ == "__main__":
    main()
