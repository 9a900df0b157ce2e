"""One run of one peer, inside that peer's environment; prints one JSON document on stdout.

    python -m peer_harness.measure PEER --jobs N [--metrics dispatch,bulk,drain,latency]

A PostgreSQL peer gets a fresh database, dropped afterwards. Every phase that fails is reported
with a one-line reason instead of a figure; the run itself does not fail.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import pathlib
import platform
import sys
import tempfile
from collections.abc import Iterator
from typing import Any

from peer_harness import phases
from peer_jobs import PeerSpec, by_name

#: In the order they run: the dispatch phase leaves its jobs queued for the default drain.
METRICS = ("bulk", "dispatch", "memory", "drain", "best", "latency", "async")


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"[:160] if not isinstance(exc, phases.PhaseError) else text[:160]


@contextlib.contextmanager
def fresh_database(admin_url: str, name: str) -> Iterator[str]:
    """A new, empty PostgreSQL database for this run (dropped on the way out)."""
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield admin_url.rsplit("/", 1)[0] + "/" + name
    finally:
        with psycopg.connect(admin_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def server_version(spec: PeerSpec) -> str:
    if spec.backend == "redis":
        from peer_jobs import _redis

        return "Redis " + str(_redis.client().info("server")["redis_version"])
    from peer_jobs import _pg

    row = _pg.connection().execute("SHOW server_version").fetchone()
    return "PostgreSQL " + (str(row[0]).split()[0] if row else "?")


def applicable(spec: PeerSpec, metric: str) -> bool:
    if metric in ("latency", "memory"):
        return spec.backend == "redis"
    if metric == "async":
        return spec.async_native
    return not (spec.floor and metric == "best")


def run(spec: PeerSpec, args: argparse.Namespace, logdir: pathlib.Path) -> dict[str, Any]:
    result: dict[str, Any] = {"peer": spec.name, "figures": {}, "errors": {},
                              "python": platform.python_version()}
    try:
        peer = importlib.import_module(spec.module).Peer()
        result.update(version=peer.version(), server=server_version(spec), bulk_api=peer.bulk_api,
                      workers=peer.workers, default_setting=peer.default_setting,
                      settings=list(peer.settings), async_setting_label=peer.async_setting_label)
    except Exception as exc:  # a peer that will not even start is a row of n/a
        result["errors"]["all"] = one_line(exc)
        return result
    wanted = [m for m in METRICS if m in args.metrics and applicable(spec, m)]
    if "bulk" in wanted and not (peer.has_bulk and hasattr(peer, "bulk")):
        wanted.remove("bulk")
    try:
        try:
            phases.warm_up(peer)
        except Exception as exc:  # it cannot even take a few jobs: nothing to measure
            result["errors"]["all"] = one_line(exc)
            wanted = []
        for metric in wanted:
            try:
                measure(metric, peer, args, logdir, result["figures"])
            except Exception as exc:
                result["errors"][metric] = one_line(exc)
    finally:
        peer.close()
    return result


def measure(metric: str, peer: Any, args: argparse.Namespace, logdir: pathlib.Path,
            figures: dict[str, Any]) -> None:
    """Measure ``metric`` and put its figures into ``figures``."""
    if metric == "bulk":
        figures["bulk"] = phases.bulk(peer, args.jobs)
    elif metric == "dispatch" or (metric == "memory" and "dispatch" not in args.metrics):
        rate, memory = phases.dispatch(peer, args.jobs)
        if "dispatch" in args.metrics:
            figures["dispatch"] = rate
        if "memory" in args.metrics and memory is not None:
            figures["memory"] = memory
    elif metric == "drain":
        if not {"dispatch", "memory"} & set(args.metrics):
            phases.refill(peer, args.jobs)
        figures["drain"] = phases.drain(peer, args.jobs, peer.worker_commands(args.processes, burst=True),
                                        logdir)
    elif metric == "best":
        figures["drain_at"] = {}
        for label, setting in peer.settings.items():
            try:
                phases.refill(peer, args.jobs)
                commands = peer.worker_commands(args.processes, burst=True, setting=setting)
                figures["drain_at"][label] = phases.drain(peer, args.jobs, commands, logdir)
            except Exception as exc:  # one setting failing leaves the others' figures
                figures["drain_at"][label] = one_line(exc)
    elif metric == "latency":
        figures["latency"] = phases.latency(peer, args.latency_jobs, logdir)
    elif metric == "async":
        figures["async"] = phases.async_io(peer, args.async_jobs, logdir)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("peer")
    parser.add_argument("--jobs", type=int, default=10000)
    parser.add_argument("--latency-jobs", type=int, default=200)
    parser.add_argument("--async-jobs", type=int, default=2000)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--metrics", default=",".join(METRICS))
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/12")
    parser.add_argument("--pg-url", default="postgresql://postgres@127.0.0.1:5432/postgres",
                        help="an existing database to connect to for creating the run's own")
    args = parser.parse_args()
    args.metrics = args.metrics.split(",")
    spec = by_name(args.peer)
    os.environ["BENCH_REDIS_URL"] = args.redis_url
    with tempfile.TemporaryDirectory(prefix="eventbus-bench-") as tmp:
        if spec.backend == "postgres":
            name = "eventbus_bench_" + spec.name.replace("-", "_")
            try:
                with fresh_database(args.pg_url, name) as url:
                    os.environ["BENCH_PG_URL"] = url
                    result = run(spec, args, pathlib.Path(tmp))
            except Exception as exc:  # no PostgreSQL, no rights to create a database
                result = {"peer": spec.name, "figures": {}, "errors": {"all": one_line(exc)}}
        else:
            result = run(spec, args, pathlib.Path(tmp))
    sys.stdout.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
