"""eventbus side by side with BullMQ (for Node and for Python), taskiq, saq, streaQ, Huey,
Dramatiq, RQ, Celery and arq on Redis, and with procrastinate, PgQueuer and oban on PostgreSQL:
the same job, the same server, the same machine, in one run.

    python benchmarks/peers.py                      # everything: 10,000 jobs, medians of 3
    python benchmarks/peers.py --only redis --jobs 2000 --repeat 1
    python benchmarks/peers.py --only eventbus,huey --metrics dispatch,drain

The job is one INCR of a Redis counter (one UPDATE of a counter row for the PostgreSQL peers).
Measured for each peer: dispatch with one call per job, and the Redis memory each queued job
takes; its bulk API; drain of the queued jobs by two worker processes at the peer's defaults
(rate from the first INCR to the last, so worker start is excluded) and at each of its other
concurrency settings (the best is shown, and which it was); the rate including start, and the time
from launch to the first job; idle-worker latency p50/p99 from the enqueue call to the job running,
one job at a time into one idle worker (Redis only); for the async-native peers, one process at
concurrency 50 draining jobs that each await 50 ms. The floor is bare redis-py loops: EVALSHA per
job, the same pipelined, a BLMOVE/INCR/LREM worker, a BLPOP worker for latency; on PostgreSQL,
bare psycopg loops (an INSERT a job; a worker taking a row, running the UPDATE and committing in
one transaction). Ratios are
peer / eventbus: above 1 the peer is faster, or for latency and memory bigger. Issue 29's targets
are checked under the tables.

The peers are never project dependencies: each is installed with eventbus (``pip install -e`` of
this tree) into its own throwaway venv under $EVENTBUS_BENCH_VENV (default ~/.cache/eventbus-bench),
one venv per peer because their pins conflict. A peer that fails to install or run shows as
"n/a (reason)". Before each run the machine is sampled; a run that starts on a busy machine is
marked with ~. Redis: the script starts a private redis-server (no persistence) on a free loopback
port, so that nothing else on the machine flushes or fills the benchmark's database; --redis-url
uses a running server instead (that database is flushed between phases). PostgreSQL: each run
creates its own database and drops it afterwards (--pg-url names the database to connect to for that).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import pathlib
import platform
import subprocess
import sys
import time
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from peer_harness import machine, redis_server, table, targets, venvs  # noqa: E402
from peer_jobs import ALIASES, PEERS, PeerSpec  # noqa: E402

METRICS = ("dispatch", "bulk", "drain", "best", "latency", "memory", "async")


def select(only: str | None) -> list[PeerSpec]:
    if not only:
        return list(PEERS)
    names = {ALIASES.get(name, name) for name in only.split(",")}
    chosen = [p for p in PEERS if p.name in names or p.backend in names]
    unknown = names - {p.name for p in chosen} - {p.backend for p in chosen}
    if unknown or not chosen:
        sys.exit(f"--only: unknown {', '.join(sorted(unknown)) or only}; "
                 f"known: redis, postgres, floor, {', '.join(p.name for p in PEERS)}")
    return chosen


def environments(specs: list[PeerSpec], args: argparse.Namespace) -> dict[str, pathlib.Path | str]:
    """The python of each needed environment, or why it could not be built."""
    found: dict[str, pathlib.Path | str] = {}
    for spec in specs:
        if spec.env_name in found:
            continue
        log(f"environment {spec.env_name}: {', '.join(spec.requirements + spec.npm) or 'eventbus only'}")
        try:
            found[spec.env_name] = venvs.ensure(args.venvs, spec.env_name, spec.requirements, ROOT,
                                                python=spec.python, npm=spec.npm, reinstall=args.reinstall)
        except venvs.InstallError as exc:
            found[spec.env_name] = str(exc)
    return found


def run_once(spec: PeerSpec, python: pathlib.Path, args: argparse.Namespace) -> dict[str, Any]:
    """One measuring subprocess in the peer's environment; its JSON, or a row of n/a."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVENTBUS_", "BENCH_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), str(ROOT)])
    command = [str(python), "-m", "peer_harness.measure", spec.name, "--jobs", str(args.jobs),
               "--latency-jobs", str(args.latency_jobs), "--async-jobs", str(args.async_jobs),
               "--processes", str(args.processes),
               "--metrics", ",".join(args.metrics), "--redis-url", args.redis_url, "--pg-url", args.pg_url]
    try:
        done = subprocess.run(command, cwd=HERE, env=env, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return failed(spec, f"run took more than {args.timeout:.0f} s")
    lines = done.stdout.strip().splitlines()
    try:
        return json.loads(lines[-1]) if lines else failed(spec, last_line(done.stderr))
    except json.JSONDecodeError:
        return failed(spec, last_line(done.stdout))


def failed(spec: PeerSpec, reason: str) -> dict[str, Any]:
    return {"peer": spec.name, "figures": {}, "errors": {"all": reason}}


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:160] if lines else "no output"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="redis, postgres, or peer names, comma separated")
    parser.add_argument("--jobs", type=int, default=10000)
    parser.add_argument("--repeat", type=int, default=3, help="runs per peer; the table shows medians")
    parser.add_argument("--metrics", default=",".join(METRICS),
                        help="of " + ",".join(METRICS) + " (best: the drains at the other settings)")
    parser.add_argument("--latency-jobs", type=int, default=200)
    parser.add_argument("--async-jobs", type=int, default=2000, help="jobs of the async I/O drain")
    parser.add_argument("--processes", type=int, default=2, help="worker processes for drain")
    parser.add_argument("--redis-url", help="use this server's database (flushed between phases) "
                        "instead of a private redis-server")
    parser.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--venvs", type=pathlib.Path, default=venvs.DEFAULT_ROOT)
    parser.add_argument("--reinstall", action="store_true", help="rebuild the environments")
    parser.add_argument("--idle-threshold", type=float, default=0.2, help="busy CPU fraction that counts as busy")
    parser.add_argument("--idle-wait", type=float, default=120.0, help="seconds to wait for an idle machine")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds for one peer's run")
    parser.add_argument("--json", type=pathlib.Path, help="also write every run's figures here")
    parser.add_argument("--report", type=pathlib.Path, metavar="JSON",
                        help="print the table of a run saved with --json, measuring nothing")
    args = parser.parse_args()
    args.metrics = [m for m in args.metrics.split(",") if m]
    if unknown := set(args.metrics) - set(METRICS):
        parser.error(f"--metrics: unknown {', '.join(sorted(unknown))}")
    return args


def main() -> None:
    args = parse()
    specs = select(args.only)
    if args.report:
        saved = json.loads(args.report.read_text())
        for key in ("jobs", "repeat", "processes"):
            setattr(args, key, int(saved["args"][key]))
        args.metrics = [m for m in METRICS if m in saved["args"]["metrics"]]
        runs = {ALIASES.get(name, name): value for name, value in saved["runs"].items()}
        specs = [s for s in specs if s.name in runs]
        report(specs, {s.name: table.Summary(s, runs[s.name]) for s in specs}, args,
               saved.get("date") or "undated run")
        return
    pythons = environments(specs, args)
    with contextlib.ExitStack() as stack:
        if args.redis_url is None:
            args.redis_url = stack.enter_context(redis_server.private_redis())
            log(f"private Redis at {args.redis_url}")
        runs = measure_all(specs, pythons, args)
    today = str(datetime.date.today())
    if args.json:  # first, so that the figures outlive a failing report
        args.json.write_text(json.dumps({"date": today, "args": {k: str(v) for k, v in vars(args).items()},
                                         "runs": runs}, indent=1))
    report(specs, {spec.name: table.Summary(spec, runs[spec.name]) for spec in specs}, args, today)


def measure_all(specs: list[PeerSpec], pythons: dict[str, pathlib.Path | str],
                args: argparse.Namespace) -> dict[str, list[dict[str, Any]]]:
    """Every peer once a round, ``--repeat`` rounds (interleaved, so slow drifts hit all alike)."""
    runs: dict[str, list[dict[str, Any]]] = {spec.name: [] for spec in specs}
    for round_ in range(1, args.repeat + 1):
        for spec in specs:
            python = pythons[spec.env_name]
            if isinstance(python, str):
                runs[spec.name].append(failed(spec, python))
                continue
            sample = machine.wait_for_idle(threshold=args.idle_threshold, max_wait_s=args.idle_wait)
            started, meter = time.monotonic(), machine.Meter()
            result = run_once(spec, python, args)
            others = meter.others()
            contended = sample.contended or others >= args.idle_threshold
            result.update(machine=f"before: {sample.describe()}; during: other work {others:.0%} of the CPUs",
                          contended=contended)
            runs[spec.name].append(result)
            log(f"[{round_}/{args.repeat}] {spec.name}: {result['machine']}"
                f"{' (contended)' if contended else ''}, {time.monotonic() - started:.0f} s"
                + (f"; errors: {result['errors']}" if result.get("errors") else ""))
    return runs


def report(specs: list[PeerSpec], summaries: dict[str, table.Summary], args: argparse.Namespace,
           date: str) -> None:
    servers = sorted({s.server for s in summaries.values() if s.server})
    print(f"{date}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"{', '.join(servers)} on loopback; {args.jobs:,} jobs, medians of {args.repeat}; "
          f"ratio = peer / eventbus")
    for backend, job in (("redis", "one INCR"), ("postgres", "one UPDATE")):
        group = [summaries[s.name] for s in specs if s.backend == backend]
        if group:
            print(f"\n{'Redis' if backend == 'redis' else 'PostgreSQL'} (each job {job}):\n")
            print(table.render(group, args.metrics, args.processes))
            print()
            print(table.notes(group, platform.python_version()))
    if checks := targets.check(summaries):
        print("\nTargets of issue 29, on these medians (eventbus at its defaults, each peer at its best):\n")
        print("\n".join(checks))


if __name__ == "__main__":
    main()
