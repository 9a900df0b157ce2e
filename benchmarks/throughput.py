"""Queue throughput and latency on this machine.

    python benchmarks/throughput.py                         # Redis (db 13)
    python benchmarks/throughput.py --connection database   # SQLite file in a temp dir
    python benchmarks/throughput.py --connection database --url postgresql+psycopg://postgres@127.0.0.1/test
    python benchmarks/throughput.py --connection beanstalkd # beanstalk://127.0.0.1:11300 or --url
    python benchmarks/throughput.py --connection sqs        # moto's local SQS in this process, or --url ENDPOINT

Prints: enqueue one by one and in bulk (jobs/s), drain with 1 and 2 worker processes (jobs/s),
and idle-worker latency p50/p99 from push to the start of handle.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import redis  # noqa: E402

import eventbus  # noqa: E402
from _common import REDIS_URL, percentiles, rate, start_workers, timed, worker_env  # noqa: E402
from bench_app import RECORD, Latency, Noop  # noqa: E402
from eventbus.dispatching import make_payload  # noqa: E402

# Workers of --connection beanstalkd|sqs use this module as their app: the connection comes from
# the environment (the local SQS endpoint only exists once the benchmark runs).
if os.environ.get("BENCH_QUEUE_CONNECTIONS"):
    eventbus.configure(connections=json.loads(os.environ["BENCH_QUEUE_CONNECTIONS"]))
WORKER_ARGS: list[str] = []


def configure_remote(connection: str, url: str | None) -> dict[str, object]:
    """A beanstalkd or SQS connection for the benchmark and its workers (``--app throughput``)."""
    if connection == "beanstalkd":
        conn: dict[str, object] = {"driver": "beanstalkd", "url": url or "beanstalk://127.0.0.1:11300"}
    else:
        import boto3

        if url is None:
            import logging

            from moto.server import ThreadedMotoServer

            logging.getLogger("werkzeug").setLevel(logging.ERROR)
            server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
            server.start()
            url = "http://{}:{}".format(*server.get_host_and_port())
        conn = {"driver": "sqs", "endpoint_url": url, "key": "bench", "secret": "bench"}
        boto3.client("sqs", endpoint_url=url, region_name="us-east-1", aws_access_key_id="bench",
                     aws_secret_access_key="bench").create_queue(QueueName="default")
    eventbus.configure(default=connection, connections={connection: conn})
    os.environ["BENCH_QUEUE_CONNECTIONS"] = json.dumps({connection: conn})  # for worker_env()
    WORKER_ARGS.extend(["--app", "throughput"])
    eventbus.connection().clear()
    return conn


def configure(connection: str, url: str | None) -> str | None:
    if connection == "redis":
        eventbus.configure(default="redis", connections={"redis": {"driver": "redis", "url": REDIS_URL}})
        redis.Redis.from_url(REDIS_URL).flushdb()
        return None
    if connection in ("beanstalkd", "sqs"):
        configure_remote(connection, url)
        return None
    url = url or f"sqlite:///{tempfile.mkdtemp()}/bench.sqlite3"
    eventbus.configure(default="database", connections={"database": {"driver": "database", "url": url}})
    eventbus.connection().clear()
    return url


def drain(n: int, processes: int, env: dict[str, str]) -> float:
    q = eventbus.connection()
    q.bulk([make_payload(Noop()) for _ in range(n)])
    started = time.perf_counter()
    workers = start_workers(processes, env, *WORKER_ARGS, "--stop-when-empty")
    for w in workers:
        w.wait()
    elapsed = time.perf_counter() - started
    assert q.size() == 0, f"{q.size()} jobs left"
    return elapsed


def latency(count: int, env: dict[str, str]) -> tuple[float, float]:
    RECORD.delete("bench:latency")
    [worker] = start_workers(1, env, *WORKER_ARGS, "--sleep", "3")
    time.sleep(2.0)  # let it start and go idle
    for _ in range(count):
        Latency(time.time()).dispatch()
        time.sleep(0.02)
    deadline = time.time() + 60
    while RECORD.llen("bench:latency") < count and time.time() < deadline:
        time.sleep(0.05)
    worker.terminate()
    worker.wait()
    return percentiles([float(v) for v in RECORD.lrange("bench:latency", 0, -1)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connection", choices=["redis", "database", "beanstalkd", "sqs"], default="redis")
    parser.add_argument("--url", help="database URL (default: a fresh SQLite file), beanstalk:// URL "
                                      "or SQS endpoint")
    parser.add_argument("--jobs", type=int, default=None,
                        help="default 20000 (sqs: 500: the local endpoint slows as its queue grows)")
    parser.add_argument("--latency-jobs", type=int, default=200)
    args = parser.parse_args()
    args.jobs = args.jobs or (500 if args.connection == "sqs" else 20000)
    db_url = configure(args.connection, args.url)
    env = worker_env(args.connection, db_url)
    q = eventbus.connection()
    where = db_url or (q.config.get("url") or q.config.get("endpoint_url") if args.connection in
                       ("beanstalkd", "sqs") else REDIS_URL)
    print(f"connection: {args.connection} {where}, {args.jobs} no-op jobs")

    seconds = timed(lambda: [Noop().dispatch() for _ in range(args.jobs)])
    print(f"enqueue one by one      {rate(args.jobs, seconds)}")
    q.clear()
    payloads = [make_payload(Noop()) for _ in range(args.jobs)]
    seconds = timed(lambda: q.bulk(payloads))
    print(f"enqueue in bulk         {rate(args.jobs, seconds)}")
    q.clear()
    for processes in (1, 2):
        print(f"drain, {processes} worker process{'es' if processes > 1 else ''}  "
              f"{rate(args.jobs, drain(args.jobs, processes, env))}")
    p50, p99 = latency(args.latency_jobs, env)
    print(f"idle-worker latency     p50 {p50 * 1000:.2f} ms, p99 {p99 * 1000:.2f} ms "
          f"over {args.latency_jobs} jobs (push to handle start)")


if __name__ == "__main__":
    main()
