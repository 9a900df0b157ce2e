"""The commands that watch queues and workers: status, workers, monitor, pause/resume, and the
failed-job tools (failed --queue/--limit/--json, failed show, retry --queue)."""

from __future__ import annotations

import json
import os
import pathlib
import socket
import subprocess
import sys
import time

import pytest
import redis
from click.testing import CliRunner, Result

import eventbus
from apps import jobs
from eventbus import runtime
from eventbus.cli import main
from eventbus.failed.base import describe_exception
from eventbus.monitoring import pausing
from eventbus.monitoring.metrics import MetricsRecorder
from eventbus.monitoring.registry import CurrentJob, WorkerInfo, WorkerRegistry
from helpers import REDIS_URL, wait_for
from observing import BACKENDS, Backend, use_backend


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: pathlib.Path, redis_client: redis.Redis) -> Backend:
    return use_backend(request.param, tmp_path)


def fail_one(n: int = 1, queue: str = "default", connection: str = "redis", job: object = None) -> str:
    """Put one job into the failed store as a worker would."""
    payload = eventbus.dispatching.make_payload(job or jobs.Record(n))
    try:
        raise RuntimeError(f"broken {n}")
    except RuntimeError as exc:
        runtime.failed_store().log(connection, queue, payload.to_json(), describe_exception(exc), payload.uuid)
    return payload.uuid


def heartbeat(connection: str, **changes: object) -> WorkerInfo:
    info = WorkerInfo(name="default-1", host="web-1", pid=4242, connection=connection,
                      queues=("default", "mail"), started_at=time.time() - 60, status="working",
                      processed=15, failed=1, last_heartbeat=time.time(),
                      job=CurrentJob("apps.jobs.Record", "3f2a-uuid", "default", 2, time.time() - 7530))
    info = WorkerInfo(**{**info.__dict__, **changes})
    WorkerRegistry(runtime.state(connection), connection).heartbeat(info)
    return info


def test_status_lists_queues_workers_and_failed_jobs(backend: Backend) -> None:
    conn = backend.connection
    jobs.Record(1).dispatch()
    jobs.Record(2).dispatch(queue="mail", delay=60)
    recorder = MetricsRecorder(conn)
    recorder.record("drained", "apps.jobs.Record", "done", 0.1)  # a queue that held jobs
    recorder.flush(runtime.state())
    pausing.pause(runtime.state(), conn, "mail")
    heartbeat(conn)
    fail_one(connection=conn)
    result = invoke("status")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == ["QUEUE", "STATUS", "READY", "DELAYED", "RESERVED", "OLDEST"]
    assert lines[1].split()[:5] == [f"{conn}:default", "active", "1", "0", "0"]
    assert lines[2].split() == [f"{conn}:drained", "active", "0", "0", "0", "-"]
    assert lines[3].split() == [f"{conn}:mail", "paused", "0", "1", "0", "-"]
    assert lines[5].split()[:3] == ["WORKER", "PID", "HOST"]
    assert lines[6].split()[:3] == ["default-1", "4242", "web-1"] and "3f2a-uuid" in lines[6]
    assert "default,mail" in lines[6] and "working" in lines[6] and "2h 05m" in lines[6]
    assert lines[-1] == "Failed jobs: 1"
    doc = json.loads(invoke("status", "--json").output)
    assert [(q["queue"], q["ready"], q["delayed"], q["paused"]) for q in doc["queues"]] == [
        ("default", 1, 0, False), ("drained", 0, 0, False), ("mail", 0, 1, True)]
    assert 0 <= doc["queues"][0]["oldest_ready_age_s"] < 30
    assert doc["workers"][0]["job"]["uuid"] == "3f2a-uuid" and doc["failed"] == 1 and doc["problems"] == []


def test_status_watch_redraws_in_place(use_redis: redis.Redis) -> None:
    jobs.Record(1).dispatch()
    result = invoke("status", "--watch", "--interval", "0.05", "--times", "3")
    assert result.exit_code == 0
    assert result.output.count("redis:default") == 3  # three frames (not a tty: no escape codes)


def test_status_reports_an_unreachable_connection_and_shows_the_rest(use_redis: redis.Redis) -> None:
    eventbus.configure(default="redis", connections={
        "redis": {"driver": "redis", "url": REDIS_URL, "block_for": 1},
        "database": {"driver": "null"},
        "down": {"driver": "redis", "url": "redis://127.0.0.1:1/0"}})
    jobs.Record(1).dispatch()
    result = invoke("status", "--json")
    assert result.exit_code == 2
    doc = json.loads(result.output.splitlines()[0])
    assert [q["queue"] for q in doc["queues"]] == ["default"]
    assert len(doc["problems"]) == 1 and doc["problems"][0].startswith("down: cannot reach Redis")


def test_workers_lists_each_worker_and_json(backend: Backend) -> None:
    assert invoke("workers").output == "No workers running.\n"
    heartbeat(backend.connection)
    heartbeat(backend.connection, name="default-2", pid=4243, job=None, status="idle")
    result = invoke("workers")
    assert result.exit_code == 0, result.output
    header, first, second = result.output.splitlines()
    assert header.split() == ["WORKER", "PID", "HOST", "CONNECTION", "QUEUES", "STARTED", "STATUS", "JOB",
                              "UUID", "RUNNING", "PROCESSED", "FAILED", "HEARTBEAT"]
    assert first.split()[:5] == ["default-1", "4242", "web-1", backend.connection, "default,mail"]
    assert first.split()[7:13] == ["working", "apps.jobs.Record", "3f2a-uuid", "2h", "05m", "15"]
    assert second.split()[7:10] == ["idle", "-", "-"]
    rows = [json.loads(line) for line in invoke("workers", "--json").output.splitlines()]
    assert [r["name"] for r in rows] == ["default-1", "default-2"] and rows[0]["processed"] == 15


def test_failed_filters_limits_and_json(use_redis: redis.Redis) -> None:
    fail_one(1, "mail")
    time.sleep(0.01)
    fail_one(2, "default")
    time.sleep(0.01)
    newest = fail_one(3, "mail")
    rows = invoke("failed", "--queue", "mail").output.splitlines()[1:]
    assert len(rows) == 2 and all(" mail " in r for r in rows)
    assert invoke("failed", "--limit", "1").output.splitlines()[1].startswith(newest)
    docs = [json.loads(line) for line in invoke("failed", "--json", "--queue", "mail").output.splitlines()]
    assert [d["uuid"] for d in docs][0] == newest
    assert docs[0]["job"] == "apps.jobs.Record" and docs[0]["exception"] == "RuntimeError: broken 3"


def test_failed_show_prints_exception_traceback_and_payload(use_redis: redis.Redis) -> None:
    uuid = fail_one(7)
    result = invoke("failed", "show", uuid)
    assert result.exit_code == 0, result.output
    out = result.output
    assert f"UUID:       {uuid}" in out and "Job:        apps.jobs.Record" in out
    assert "Exception:  RuntimeError: broken 7" in out
    assert "Traceback (most recent call last):" in out and "raise RuntimeError" in out
    assert '"n": 7' in out and '"displayName": "apps.jobs.Record"' in out
    doc = json.loads(invoke("failed", "show", uuid, "--json").output)
    assert doc["summary"] == "RuntimeError: broken 7" and "Traceback" in doc["traceback"]
    assert invoke("failed", "show", "nope").exit_code == 1


class Secret(eventbus.Job):
    encrypted = True

    def __init__(self, card: str) -> None:
        self.card = card


def test_failed_show_keeps_an_encrypted_jobs_state_sealed(use_redis: redis.Redis) -> None:
    pytest.importorskip("cryptography")
    eventbus.configure(default="redis", key="k" * 32,
                       connections={"redis": {"driver": "redis", "url": REDIS_URL}})
    card = "4111-1111-1111-1111"
    uuid = fail_one(job=Secret(card))
    out = invoke("failed", "show", uuid).output
    # neither the card nor two of its groups together; its digits alone can occur in a timestamp
    # (pushedAt 1795797141.411167 once made "4111" appear)
    assert card not in out and "4111-1111" not in out and "1111-1111" not in out
    assert "encrypted" in out
    assert "__encrypted__" not in out  # not even the ciphertext


def test_failed_show_escapes_terminal_sequences(use_redis: redis.Redis) -> None:
    raw = json.dumps({"uuid": "u1", "displayName": "Name\x1b]0;t\x07", "data": {"command": {"x": "\x1b[2J"}}})
    runtime.failed_store().log("redis", "q", raw, "Boom: \x1b[31mred\n\nTraceback \x1b[1m", "u1")
    out = invoke("failed", "show", "u1").output
    assert "\x1b" not in out and "Name\\x1b]0;t\\x07" in out


def test_retry_queue_pushes_back_that_queues_failed_jobs(use_redis: redis.Redis) -> None:
    fail_one(1, "mail")
    fail_one(2, "mail")
    kept = fail_one(3, "default")
    result = invoke("retry", "--queue", "mail")
    assert result.exit_code == 0 and result.output.count("back onto mail") == 2
    assert eventbus.connection().size("mail") == 2
    assert [r.uuid for r in runtime.failed_store().all()] == [kept]
    assert "No failed jobs on queue mail." in invoke("retry", "--queue", "mail").output
    assert invoke("retry").exit_code == 2 and invoke("retry", kept, "--queue", "x").exit_code == 2


def test_monitor_emits_queue_busy_and_prints_alerts(backend: Backend) -> None:
    for n in range(3):
        jobs.Record(n).dispatch()
    jobs.Record(9).dispatch(queue="quiet")
    heard: list[eventbus.QueueBusy] = []
    eventbus.listen(eventbus.QueueBusy, heard.append)
    result = invoke("monitor", "--max", "3")
    assert result.exit_code == 1, result.output  # it fired
    conn = backend.connection
    assert result.output.splitlines()[1].split() == [f"{conn}:default", "ALERT", "3", "0", "0", "3"]
    assert result.output.splitlines()[2].split() == [f"{conn}:quiet", "OK", "1", "0", "0", "1"]
    assert [(e.connection_name, e.queue, e.size, e.threshold) for e in heard] == [(conn, "default", 3, 3)]
    rows = [json.loads(x) for x in invoke("monitor", f"{conn}:quiet", "--max", "1", "--json").output.splitlines()]
    assert [(r["queue"], r["status"], r["size"]) for r in rows] == [("quiet", "ALERT", 1)]
    assert len(heard) == 2


def test_monitor_tells_the_apps_listeners(use_redis: redis.Redis, worker_env: dict[str, str],
                                          tmp_path: pathlib.Path) -> None:
    (tmp_path / "busy_app.py").write_text(
        "import eventbus\n"
        "def page(event):\n"
        "    print(f'PAGE {event.queue} {event.size}')\n"
        "eventbus.listen(eventbus.QueueBusy, page)\n")
    jobs.Record(1).dispatch()
    jobs.Record(2).dispatch()
    proc = subprocess.run([sys.executable, "-m", "eventbus", "monitor", "--max", "2", "--app", "busy_app"],
                          env=worker_env, capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert proc.returncode == 1, proc.stderr  # it fired, and the event still reached the app
    assert "PAGE default 2" in proc.stdout and "ALERT" in proc.stdout


def test_pause_and_resume_commands(backend: Backend) -> None:
    conn = backend.connection
    assert invoke("pause", "mail").output == f"Paused {conn}:mail; workers skip it within a second.\n"
    assert pausing.paused_queues(runtime.state(), conn) == {"mail"}
    assert invoke("resume", "mail").output == f"Resumed {conn}:mail.\n"
    assert invoke("resume", "mail").output == f"{conn}:mail was not paused.\n"


def test_dashboard_refuses_a_public_address_without_a_token() -> None:
    result = invoke("dashboard", "--host", "0.0.0.0")
    assert result.exit_code == 2
    assert "refusing to serve the dashboard on 0.0.0.0" in result.output


def test_events_json(worker_env: dict[str, str]) -> None:
    out = subprocess.run([sys.executable, "-m", "eventbus", "events", "--json", "--app", "apps.shop_listeners"],
                         env=worker_env, capture_output=True, text=True, check=True).stdout
    rows = [json.loads(line) for line in out.splitlines()]
    assert rows and all(set(r) == {"event", "listeners"} for r in rows)
    assert any("apps.shop_listeners.Remember (queued" in x for r in rows for x in r["listeners"])


def _serve_dashboard(worker_env: dict[str, str], *args: str) -> tuple[subprocess.Popen[str], int]:
    from observing import free_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "eventbus", "dashboard", "--port", str(port), *args],
                            env=worker_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    return proc, port


def _get(url: str, **headers: str) -> int:
    import httpx

    try:
        return httpx.get(url, headers=headers, timeout=5).status_code
    except httpx.HTTPError:
        return 0


def test_the_dashboard_command_serves_on_loopback(use_redis: redis.Redis, worker_env: dict[str, str]) -> None:
    pytest.importorskip("uvicorn")
    proc, port = _serve_dashboard(worker_env)
    try:
        wait_for(lambda: _get(f"http://127.0.0.1:{port}/") == 200, timeout=30)
        assert _get(f"http://127.0.0.1:{port}/", **{"x-forwarded-for": "198.51.100.1"}) == 403
    finally:
        os.killpg(proc.pid, 9)
        proc.wait()
    assert "eventbus dashboard on http://127.0.0.1:" in proc.stdout.read()  # type: ignore[union-attr]


def test_the_dashboard_command_on_a_public_address_needs_the_token(use_redis: redis.Redis,
                                                                   worker_env: dict[str, str]) -> None:
    pytest.importorskip("uvicorn")
    proc, port = _serve_dashboard({**worker_env, "EVENTBUS_DASHBOARD_TOKEN": "t0ken"}, "--host", "0.0.0.0")
    try:
        wait_for(lambda: _get(f"http://127.0.0.1:{port}/") == 401, timeout=30)
        assert _get(f"http://127.0.0.1:{port}/", authorization="Bearer t0ken") == 200
    finally:
        os.killpg(proc.pid, 9)
        proc.wait()


def test_a_metrics_port_in_use_is_one_line_and_exit_2(use_redis: redis.Redis, worker_env: dict[str, str]) -> None:
    pytest.importorskip("prometheus_client")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = subprocess.run([sys.executable, "-m", "eventbus", "work", "--app", "apps.jobs", "--once",
                               "--metrics-port", str(port)], env=worker_env, capture_output=True, text=True,
                              timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith(f"eventbus: error: cannot serve metrics on 127.0.0.1:{port}")


def test_job_processed_carries_the_runtime(use_redis: redis.Redis) -> None:
    from eventbus.worker import Worker, WorkerOptions

    heard: list[eventbus.JobProcessed] = []
    eventbus.listen(eventbus.JobProcessed, heard.append)
    jobs.Record(1, sleep=0.2).dispatch()
    worker = Worker(eventbus.connection(), failed=runtime.failed_store(),
                    options=WorkerOptions(stop_when_empty=True, sleep_s=0, memory_mb=0))
    assert worker.run() == 0
    [event] = heard
    assert 0.2 <= event.runtime_s < 5
