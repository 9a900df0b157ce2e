"""How soon ``eventbus work --processes N`` runs its first job: seconds from launching the command
to the first job's INCR, on a private redis-server, median of ``--runs``.

    PYTHONPATH=. python benchmarks/startup.py [--runs 5] [--processes 2] [--spawn] [--against OTHER_TREE]

Each run queues ``--jobs`` one-INCR jobs (the jobs of ``benchmarks/peers.py``), launches the
worker with ``--stop-when-empty`` and polls the counter every millisecond until it moves. The
time includes the interpreter's start, ``import eventbus``, the app's import and the children's
start (forked from the supervisor after the import, or fresh interpreters with ``--spawn``).
``--against`` runs another checkout's worker the same way, interleaved run by run, so both see
the same load.

The worker runs in the plain venv ``peers.py`` gives eventbus (``$EVENTBUS_BENCH_VENV/eventbus``,
built on first use: eventbus from this tree and its own dependencies, nothing else), so the
figure is what an installed eventbus takes, not what this interpreter's site-packages add (an
optional library such as OpenTelemetry, which redis-py imports when it finds it, or a ``.pth``
file). ``--python`` runs it with this interpreter instead.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"
sys.path.insert(0, str(BENCH))

from peer_harness import venvs  # noqa: E402
from peer_harness.redis_server import private_redis  # noqa: E402

COUNTER = "bench:counter"


def queue_jobs(python: str, url: str, n: int) -> None:
    """n jobs on the ``bench`` queue, pushed by a separate interpreter (this one stays bare)."""
    code = ("import eventbus; from peer_jobs import eventbus_redis as app; "
            f"eventbus.dispatch_many([app.Incr() for _ in range({n})])")
    subprocess.run([python, "-c", code], env=_env(url, ROOT), cwd=BENCH, check=True)


def first_job_s(python: str, url: str, tree: pathlib.Path, processes: int, extra: list[str]) -> float:
    """Seconds from launching the worker command to the counter's first move."""
    import redis

    client = redis.Redis.from_url(url)
    command = [python, "-m", "eventbus", "work", "redis", "--app", "peer_jobs.eventbus_redis",
               "--queue", "bench", "--processes", str(processes), "--quiet", "--stop-when-empty", *extra]
    launched = time.perf_counter()
    proc = subprocess.Popen(command, env=_env(url, tree), cwd=BENCH, stdout=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        while not client.get(COUNTER):
            if proc.poll() is not None:
                raise RuntimeError(f"the worker exited with {proc.returncode} before running a job")
            time.sleep(0.001)
        took = time.perf_counter() - launched
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        client.flushdb()
        client.close()
    return took


def _env(url: str, tree: pathlib.Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVENTBUS_", "BENCH_"))}
    env["BENCH_REDIS_URL"] = url
    env["PYTHONPATH"] = os.pathsep.join([str(tree), str(BENCH)])
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--jobs", type=int, default=200, help="jobs queued before each launch")
    parser.add_argument("--spawn", action="store_true", help="start the children afresh (--spawn)")
    parser.add_argument("--against", type=pathlib.Path, help="another checkout, measured interleaved")
    parser.add_argument("--python", action="store_true",
                        help="run the worker with this interpreter, not in the benchmark venv")
    parser.add_argument("--venvs", type=pathlib.Path, default=venvs.DEFAULT_ROOT,
                        help="where the benchmark venvs live (as for peers.py)")
    args = parser.parse_args()
    trees = {"this tree": ROOT, **({str(args.against): args.against.resolve()} if args.against else {})}
    python = sys.executable if args.python else str(venvs.ensure(args.venvs, "eventbus", [], ROOT))
    for tree in trees.values():  # what pip does for an installed package (see venvs.byte_compile)
        venvs.byte_compile(python, tree)
    extra = ["--spawn"] if args.spawn else []
    times: dict[str, list[float]] = {label: [] for label in trees}
    with private_redis() as url:
        for _ in range(args.runs):
            for label, tree in trees.items():
                queue_jobs(python, url, args.jobs)
                times[label].append(first_job_s(python, url, tree, args.processes,
                                                extra if tree == ROOT else []))
    for label, runs in times.items():
        shown = ", ".join(f"{t:.3f}" for t in runs)
        print(f"{label}: first job {statistics.median(runs):.3f} s after launch (median of "
              f"{len(runs)}; best {min(runs):.3f}; runs {shown})")


if __name__ == "__main__":
    main()
