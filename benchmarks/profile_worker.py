"""Where the time of one job goes: an eventbus Redis worker draining N one-INCR jobs under py-spy.

    python benchmarks/profile_worker.py [--jobs 10000] [--rate 1000]

Starts a private redis-server, queues N jobs (peer_jobs.eventbus_redis.Incr, the job of peers.py),
and runs one ``eventbus work --stop-when-empty`` process under ``py-spy record --idle`` (sampling,
so the worker runs at full speed; idle samples count, so the shares are of wall time, waiting for
Redis included). py-spy comes from PATH or is installed into a throwaway venv beside the peers'
($EVENTBUS_BENCH_VENV). Prints the share of samples by layer (where the sampled frame was: waiting
on a socket, redis-py, JSON, ...) and by step of the worker's turn (pop, decode, handle, delete,
events, ...), the busiest functions, and the Redis commands one job cost (INFO commandstats).
"""

from __future__ import annotations

import argparse
import collections
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from peer_harness import redis_server, venvs  # noqa: E402

FRAME = re.compile(r"^(?P<func>.*) \((?P<file>[^():]*)(?::(?P<line>\d+))?\)$")

# Layer of the innermost frame that says something: first match wins, checked from the leaf up.
LAYERS: list[tuple[str, Callable[[str, str], bool]]] = [
    ("waiting on the Redis socket", lambda f, fn: "redis/" in f and fn in {
        "_read_from_socket", "read_from_socket", "can_read_destructive", "_readline", "readline",
        "read_response", "recv", "recv_into", "sendall", "send_packed_command"}),
    ("redis-py client code", lambda f, fn: "/redis/" in f),
    ("JSON", lambda f, fn: "/json/" in f),
    ("blinker", lambda f, fn: "/blinker/" in f),
    ("logging", lambda f, fn: "/logging/" in f),
    ("eventbus code", lambda f, fn: "/eventbus/" in f),
    ("the job's own code", lambda f, fn: "peer_jobs" in f),
    ("other Python (stdlib, uuid, signal, ...)", lambda f, fn: True),
]

# Step of the worker's turn: the outermost eventbus (or job) frame that names one.
STEPS: list[tuple[str, Callable[[str, str], bool]]] = [
    ("start-up (imports, configure, connect)", lambda f, fn: fn in {"_find_and_load", "<module>"}
     and not f.endswith("eventbus/__main__.py")),
    ("job handle(): its INCR round trip", lambda f, fn: "peer_jobs" in f and fn == "handle"),
    ("reserve + acknowledge (one script per batch)", lambda f, fn: f.endswith("queue/redis/queue.py")
     and fn in {"pop", "reserve"}),
    ("wait for work (blocking pop on :notify, reservation in the same reply)",
     lambda f, fn: f.endswith("queue/redis/queue.py") and fn in {"wait", "wait_and_reserve"}),
    ("delete (acknowledge script, when not batched)", lambda f, fn: f.endswith("queue/redis/queue.py")
     and fn in {"delete_reserved", "delete"}),
    ("prefetch bookkeeping (held jobs, deadlines)", lambda f, fn: f.endswith("eventbus/worker/prefetch.py")),
    ("worker signals check (restart/pause keys)", lambda f, fn: f.endswith("queue/redis/queue.py") and fn == "signals"),
    ("event emission (JobProcessing/JobProcessed/Looping)", lambda f, fn: f.endswith("eventbus/dispatcher.py")
     or f.endswith("eventbus/events.py")),
    ("payload decode + command unserialize", lambda f, fn: f.endswith(("eventbus/payload.py",
     "eventbus/serializer.py", "eventbus/registry.py", "eventbus/encryption.py"))),
    ("timeout arming", lambda f, fn: f.endswith("eventbus/worker/timeouts.py")),
    ("memory check", lambda f, fn: fn == "memory_mb"),
    ("rest of the handler", lambda f, fn: f.endswith("eventbus/worker/handler.py")),
    ("rest of processing (attempt rules)", lambda f, fn: f.endswith("eventbus/worker/processing.py")),
    ("rest of the worker loop", lambda f, fn: f.endswith(("eventbus/worker/loop.py", "eventbus/worker/outcomes.py"))),
    ("other", lambda f, fn: True),
]


def parse_stacks(path: pathlib.Path) -> list[tuple[list[tuple[str, str]], int]]:
    """py-spy's raw (collapsed) output: root-first frames, then the sample count."""
    stacks = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        stack, _, count = line.rpartition(" ")
        frames = []
        for raw in stack.split(";"):
            m = FRAME.match(raw)
            # py-spy writes package-relative paths (redis/client.py) and qualified names (Worker.run)
            frames.append(("/" + m["file"], m["func"].split(".<locals>")[0].rsplit(".", 1)[-1]) if m else ("", raw))
        stacks.append((frames, int(count)))
    return stacks


def classify(frames: list[tuple[str, str]], rules: list[tuple[str, Callable[[str, str], bool]]],
             *, leaf_first: bool) -> str:
    ordered = list(reversed(frames)) if leaf_first else frames
    for name, rule in rules:
        if any(rule(f, fn) for f, fn in ordered):
            return name
    return rules[-1][0]


def layer_of(frames: list[tuple[str, str]]) -> str:
    for f, fn in reversed(frames):  # the innermost frame decides
        for name, rule in LAYERS[:-1]:
            if rule(f, fn):
                return name
        if not f.endswith(("/socket.py", "/selectors.py")):
            break
    return LAYERS[-1][0]


def table(title: str, counts: collections.Counter[str], total: int) -> str:
    lines = [f"{title}:"]
    for name, n in counts.most_common():
        lines.append(f"  {100 * n / total:5.1f}%  {name}")
    return "\n".join(lines)


def py_spy(args: argparse.Namespace) -> str:
    found = shutil.which("py-spy")
    if found:
        return found
    python = venvs.ensure(args.venvs, "profile", ("py-spy",), ROOT)
    return str(python.parent / "py-spy")


def commandstats(url: str) -> dict[str, int]:
    import redis

    return {k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in
            redis.Redis.from_url(url).info("commandstats").items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=10000)
    parser.add_argument("--rate", type=int, default=250, help="py-spy samples a second")
    parser.add_argument("--venvs", type=pathlib.Path, default=venvs.DEFAULT_ROOT)
    parser.add_argument("--keep", type=pathlib.Path, help="also keep py-spy's raw stacks here")
    args = parser.parse_args()
    spy = py_spy(args)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVENTBUS_", "BENCH_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), str(ROOT)])
    with redis_server.private_redis() as url, tempfile.TemporaryDirectory() as tmp:
        env["BENCH_REDIS_URL"] = url
        load = [sys.executable, "-c", f"from peer_jobs.eventbus_redis import Peer; Peer().bulk({args.jobs})"]
        worker = [sys.executable, "-m", "eventbus", "work", "redis", "--app", "peer_jobs.eventbus_redis",
                  "--queue", "bench", "--stop-when-empty", "--quiet"]
        subprocess.run(load, env=env, cwd=HERE, check=True)
        started = time.perf_counter()
        subprocess.run(worker, env=env, cwd=HERE, check=True)
        plain = time.perf_counter() - started
        subprocess.run(load, env=env, cwd=HERE, check=True)
        before = commandstats(url)
        raw = pathlib.Path(args.keep or pathlib.Path(tmp) / "stacks.txt")
        started = time.perf_counter()
        subprocess.run([spy, "record", "--idle", "--rate", str(args.rate), "--format", "raw", "-o", str(raw),
                        "--", *worker], env=env, cwd=HERE, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        elapsed = time.perf_counter() - started
        after = commandstats(url)
        stacks = parse_stacks(raw)
    calls = {k: after.get(k, 0) - before.get(k, 0) for k in after}
    total = sum(n for _, n in stacks)
    steps: collections.Counter[str] = collections.Counter()
    layers: collections.Counter[str] = collections.Counter()
    leaves: collections.Counter[str] = collections.Counter()
    threads = sum(n for frames, n in stacks if frames and frames[0][1] == "_bootstrap")
    stacks = [(frames, n) for frames, n in stacks if not frames or frames[0][1] != "_bootstrap"]
    total = sum(n for _, n in stacks)
    for frames, n in stacks:
        steps[classify(frames, STEPS, leaf_first=False)] += n
        layers[layer_of(frames)] += n
        f, fn = frames[-1]
        leaves[f"{fn} ({'/'.join(f.split('/')[-2:])})"] += n
    print(f"one worker process, {args.jobs:,} jobs: {args.jobs / plain:,.0f}/s without the profiler, "
          f"{args.jobs / elapsed:,.0f}/s under py-spy (worker start included in both)")
    print(f"{total:,} samples of the main thread ({threads:,} more of idle helper threads left out)\n")
    print(table("by step of the worker's turn", steps, total) + "\n")
    print(table("by layer (innermost frame)", layers, total) + "\n")
    print(table("busiest innermost frames (top 15)", collections.Counter(dict(leaves.most_common(15))), total))
    print("\nRedis commands a job (INFO commandstats; EVALSHA and the job's INCRBY are the round trips,"
          " the rest run inside the Lua scripts):")
    for name, n in sorted(calls.items(), key=lambda kv: -kv[1]):
        if n and name not in {"info"}:
            print(f"  {n / args.jobs:6.2f}  {name}")


if __name__ == "__main__":
    main()
