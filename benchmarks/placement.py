"""Why the two-process drain of ``peers.py`` varies from run to run: where Linux puts the workers.

    python benchmarks/placement.py [--only eventbus,huey,floor] [--jobs 20000] [--rounds 4] [--pinned]

Two worker processes and the Redis server are three busy processes; on a machine with two CPUs
the scheduler keeps the two workers on one CPU (Redis alone on the other) for most of a drain and
moves them apart now and then, and the drain runs at a different rate in each arrangement. This
drains ``--jobs`` one-INCR jobs with two worker processes of each peer (the job and the workers of
``peers.py``, in its environments) from a private redis-server, reads every 20 ms how many jobs
ran and which CPU each worker process and the server last ran on, and prints the rate in each
arrangement:

- together: both workers on one CPU, the server on the other;
- apart: the workers on different CPUs;
- moving: the scheduler moved one of them during the sample.

``floor`` is a bare worker loop beside them (``peer_jobs/redis_floor_worker.py``: 32 bodies a
pop, each parsed and its job run, nothing else): what a drain costs here without a queue library.

Then, with ``--pinned``, the same drain with the arrangement forced (``taskset``): both workers
on CPU 1 and the server on CPU 0. Linux only (``/proc``, ``sched_setaffinity``).
"""

from __future__ import annotations

import argparse
import collections
import importlib
import json
import os
import pathlib
import signal
import statistics
import subprocess
import sys
import time
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from peer_harness import redis_server, venvs  # noqa: E402
from peer_jobs import by_name  # noqa: E402

SAMPLE_S = 0.02
#: Samples at the start and the end are left out: worker start, and the last jobs.
EDGE_JOBS = 500


def cpu_of(pid: int) -> tuple[int, int]:
    """(CPU ticks used, CPU it last ran on) of a process, from /proc/PID/stat."""
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12]), int(fields[36])


def session_processes(leader: int) -> list[int]:
    """Every live process of the session ``leader`` started (the workers and their parents)."""
    found = []
    for entry in pathlib.Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getsid(int(entry.name)) == leader:
                    found.append(int(entry.name))
            except (ProcessLookupError, PermissionError):
                continue
    return found


def busiest(pids: list[int], before: dict[int, int]) -> list[int]:
    """The two processes that used the most CPU since ``before``: the workers, not their parents."""
    used = {}
    for pid in pids:
        try:
            used[pid] = cpu_of(pid)[0] - before.get(pid, 0)
        except (FileNotFoundError, ProcessLookupError):
            continue
    return sorted(used, key=used.__getitem__, reverse=True)[:2]


def drain_once(peer: Any, jobs: int, server_pid: int, *, pinned: bool) -> list[tuple[str, int, float]]:
    """One drain; (arrangement, jobs, seconds) for each sample."""
    peer.reset()
    peer.dispatch(jobs)
    batched = getattr(peer, "batched_worker_commands", None)  # the floor: its pop of 32, as before
    commands = batched(2) if batched else peer.worker_commands(2, burst=True)
    if pinned:
        os.sched_setaffinity(server_pid, {0})
        commands = [["taskset", "-c", "1", *command] for command in commands]
    procs = [subprocess.Popen(command, start_new_session=True, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL) for command in commands]
    samples: list[tuple[str, int, float]] = []
    try:
        while peer.count() < EDGE_JOBS:
            time.sleep(0.002)
        pids = [pid for proc in procs for pid in session_processes(proc.pid)]
        start = {pid: cpu_of(pid)[0] for pid in pids}
        time.sleep(0.1)
        workers = busiest(pids, start)
        last = None
        while (count := peer.count()) < jobs - EDGE_JOBS:
            now = time.perf_counter()
            cpus = tuple(cpu_of(pid)[1] for pid in (*workers, server_pid))
            if last is not None:
                was_count, was_at, was_cpus = last
                if cpus[:2] != was_cpus[:2]:
                    where = "moving"
                elif cpus[0] == cpus[1]:
                    where = "together"
                else:
                    where = "apart"
                samples.append((where, count - was_count, now - was_at))
            last = (count, now, cpus)
            time.sleep(SAMPLE_S)
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
            proc.wait()
        if pinned:
            os.sched_setaffinity(server_pid, set(range(os.cpu_count() or 1)))
    return samples


def spec_of(name: str) -> Any:
    """A peer of ``peers.py`` by name; ``floor`` is the bare worker loop (``redis_floor_worker``)."""
    return by_name("redis-py EVALSHA loop" if name == "floor" else name)


def child(name: str, jobs: int, rounds: int, pinned: bool) -> None:
    """In the peer's environment: the drains, then one JSON line of jobs and seconds per arrangement."""
    peer = importlib.import_module(spec_of(name).module).Peer()
    server_pid = int(peer.redis.info("server")["process_id"])
    totals: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0])
    pinned_rates = []
    for _ in range(rounds):
        for where, done, seconds in drain_once(peer, jobs, server_pid, pinned=False):
            totals[where][0] += done
            totals[where][1] += seconds
    for _ in range(rounds if pinned else 0):
        samples = drain_once(peer, jobs, server_pid, pinned=True)
        pinned_rates.append(sum(s[1] for s in samples) / sum(s[2] for s in samples))
    print(json.dumps({"observed": totals, "pinned": pinned_rates}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="eventbus,huey,floor",
                        help="Redis peers of peers.py; floor: a bare worker loop (a batched pop and the job)")
    parser.add_argument("--jobs", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--pinned", action="store_true", help="also drain with both workers on CPU 1")
    parser.add_argument("--venvs", type=pathlib.Path, default=venvs.DEFAULT_ROOT)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.jobs, args.rounds, args.pinned)
        return
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVENTBUS_", "BENCH_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), str(ROOT)])
    with redis_server.private_redis() as url:
        env["BENCH_REDIS_URL"] = url
        print(f"{os.cpu_count()} CPUs; {args.jobs:,} jobs a drain, {args.rounds} drains a peer, "
              f"2 worker processes; rates between the first and the last {EDGE_JOBS} jobs\n")
        print("| peer | arrangement | share of the drain | jobs/s |")
        print("|---|---|---|---|")
        for name in args.only.split(","):
            spec = spec_of(name)
            python = venvs.ensure(args.venvs, spec.env_name, spec.requirements, ROOT)
            command = [str(python), str(pathlib.Path(__file__).resolve()), "--child", name, "--jobs",
                       str(args.jobs), "--rounds", str(args.rounds), *(["--pinned"] if args.pinned else [])]
            done = subprocess.run(command, env=env, cwd=HERE, capture_output=True, text=True, check=True)
            result = json.loads(done.stdout.strip().splitlines()[-1])
            observed = result["observed"]
            total_s = sum(seconds for _, seconds in observed.values())
            for where in ("together", "apart", "moving"):
                if where in observed and observed[where][1] > 0:
                    jobs, seconds = observed[where]
                    print(f"| {name} | {where} | {seconds / total_s:.0%} | {jobs / seconds:,.0f} |")
            if result["pinned"]:
                rates = result["pinned"]
                print(f"| {name} | together, pinned | all | {statistics.median(rates):,.0f} "
                      f"(median of {len(rates)}) |")


if __name__ == "__main__":
    main()
