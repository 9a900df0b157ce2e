"""The worker as users run it: a subprocess on real Redis."""

from __future__ import annotations

import json
import os
import pathlib
import re
import signal
import time
from urllib.parse import urlsplit

import pytest
import redis
from apps import jobs
from helpers import REDIS_URL, children_of, run_worker, traces, wait_for, wait_until_catching
from proxies import TcpProxy

import eventbus

pytestmark = pytest.mark.integration


def test_runs_jobs_and_reports_one_line_each(use_redis: redis.Redis, start_worker: object) -> None:
    for n in range(3):
        jobs.Record(n).dispatch()
    code, out, _ = run_worker(start_worker, "--stop-when-empty", "--sleep", "0")
    assert code == 0
    assert traces(use_redis, "ran") == ["0", "1", "2"]
    lines = out.strip().splitlines()
    assert len(lines) == 3 and all("apps.jobs.Record [default]" in l and l.endswith("DONE") for l in lines)
    assert eventbus.connection().size() == 0


def test_quiet_prints_no_job_lines(use_redis: redis.Redis, start_worker: object) -> None:
    jobs.Record(1).dispatch()
    code, out, _ = run_worker(start_worker, "--stop-when-empty", "--quiet")
    assert code == 0 and out == "" and traces(use_redis, "ran") == ["1"]


def test_queue_priority_order(use_redis: redis.Redis, start_worker: object) -> None:
    jobs.Record(1).dispatch(queue="low")
    jobs.Record(2).dispatch(queue="high")
    code, _, _ = run_worker(start_worker, "--queue", "high,low", "--stop-when-empty")
    assert code == 0 and traces(use_redis, "ran") == ["2", "1"]


def test_retries_with_backoff_then_failed_once_and_a_record(use_redis: redis.Redis, start_worker: object) -> None:
    uuid = jobs.Flaky(7).dispatch()
    code, out, _ = run_until(start_worker, lambda: traces(use_redis, "failed"))
    assert code == 0
    attempts = [a.split(":") for a in traces(use_redis, "attempt")]
    assert [a[1] for a in attempts] == ["1", "2", "3"]
    gaps = [float(attempts[i + 1][2]) - float(attempts[i][2]) for i in range(2)]
    assert gaps[0] >= 0.2 and gaps[1] >= 0.4, gaps  # backoff [0.2, 0.4]
    assert traces(use_redis, "failed") == ["7:RuntimeError:flaky 7 failed on attempt 3"]
    assert out.count("RELEASED") == 2 and out.count("FAIL") == 1
    record = eventbus.runtime.failed_store().find(uuid)
    assert record is not None and record.queue == "default" and record.connection == "redis"
    assert record.summary == "RuntimeError: flaky 7 failed on attempt 3"
    assert "Traceback" in record.exception and "in handle" in record.exception
    assert json.loads(record.payload)["uuid"] == uuid


def test_worker_tries_option_applies_when_the_job_has_none(use_redis: redis.Redis, start_worker: object) -> None:
    jobs.Record(1).dispatch()  # runs fine: one try is enough
    jobs.ExplodingFailedHook().dispatch()
    code, _, err = run_worker(start_worker, "--stop-when-empty", "--tries", "2", "--backoff", "0")
    assert code == 0
    assert traces(use_redis, "failed") == ["hook ran"]  # failed() once, after 2 tries
    assert "the failed() hook of" in err  # a broken hook is logged, the worker goes on
    assert len(eventbus.runtime.failed_store().all()) == 1


def test_max_exceptions_fails_before_tries_run_out(use_redis: redis.Redis, start_worker: object) -> None:
    jobs.MaxExceptions().dispatch()
    code, _, _ = run_worker(start_worker, "--stop-when-empty")
    assert code == 0 and traces(use_redis, "attempt") == ["1", "2"] and traces(use_redis, "failed") == ["again"]


def test_release_inside_handle(use_redis: redis.Redis, start_worker: object) -> None:
    jobs.Releaser().dispatch()
    code, out, _ = run_until(start_worker, lambda: len(traces(use_redis, "attempt")) == 2)
    attempts = [a.split(":") for a in traces(use_redis, "attempt")]
    assert code == 0 and [a[0] for a in attempts] == ["1", "2"]
    assert float(attempts[1][1]) - float(attempts[0][1]) >= 0.5
    assert "RELEASED" in out and out.strip().endswith("DONE")


def run_until(start_worker: object, condition: object, *args: str) -> tuple[int, str, str]:
    """A long-running worker, stopped with SIGTERM once ``condition()`` holds."""
    w = start_worker("--sleep", "0.05", *args)  # type: ignore[operator]
    wait_for(condition, timeout=20)
    time.sleep(0.2)
    w.signal(signal.SIGTERM)
    code = w.wait()
    out, err = w.output()
    return code, out, err


def test_delayed_jobs_do_not_run_early(use_redis: redis.Redis, start_worker: object) -> None:
    pushed = time.time()
    jobs.Record(1).dispatch(delay=1.5)
    w = start_worker("--sleep", "0.1")
    wait_for(lambda: traces(use_redis, "ran") == ["1"], timeout=10)
    started = float(traces(use_redis, "started")[0].split(":")[1])
    assert started - pushed >= 1.5
    assert started - pushed < 3.0  # woken by the due job, not a long poll
    w.signal(signal.SIGTERM)
    assert w.wait() == 0


def test_timeout_interrupts_counts_and_fails_at_once(use_redis: redis.Redis, start_worker: object) -> None:
    jobs.Slow().dispatch()
    started = time.monotonic()
    code, out, _ = run_worker(start_worker, "--stop-when-empty", "--sleep", "0")
    assert code == 0
    assert time.monotonic() - started < 10  # not left reserved until retry_after (90s)
    assert traces(use_redis, "attempt") == ["1", "2"]
    assert traces(use_redis, "failed") == ["JobTimeoutError:apps.jobs.Slow timed out after 1 seconds"]
    record = eventbus.runtime.failed_store().all()[0]
    assert "timed out" in record.summary


def test_a_job_that_cannot_be_interrupted_ends_the_worker(use_redis: redis.Redis, start_worker: object) -> None:
    jobs.Stubborn().dispatch()
    code, _, err = run_worker(start_worker, "--stop-when-empty", "--timeout", "1", env={"EVENTBUS_TIMEOUT_GRACE": "1"})
    assert code == 1
    assert "could not be interrupted" in err
    assert traces(use_redis, "failed") == ["JobTimeoutError:apps.jobs.Stubborn timed out and could not be interrupted"]
    assert eventbus.connection().size() == 0 and len(eventbus.runtime.failed_store().all()) == 1


def test_sigterm_lets_the_current_job_finish(use_redis: redis.Redis, start_worker: object) -> None:
    jobs.Record(1, sleep=1.0).dispatch()
    jobs.Record(2).dispatch()
    w = start_worker("--sleep", "0.1")
    wait_for(lambda: traces(use_redis, "started"))
    w.signal(signal.SIGTERM)
    assert w.wait() == 0
    assert traces(use_redis, "ran") == ["1"]  # finished; the next job stays queued
    assert eventbus.connection().size() == 1


def test_sigterm_while_idle_exits_promptly(use_redis: redis.Redis, start_worker: object) -> None:
    w = start_worker("--sleep", "30")
    wait_until_catching(w.proc.pid, signal.SIGINT, signal.SIGTERM)
    time.sleep(0.3)  # now idle in its wait
    started = time.monotonic()
    w.signal(signal.SIGINT)
    assert w.wait() == 0 and time.monotonic() - started < 3


def test_kill_9_mid_job_and_the_job_runs_again_after_retry_after(use_redis: redis.Redis, start_worker: object) -> None:
    env = {"TEST_RETRY_AFTER": "2", "EVENTBUS_TIMEOUT_GRACE": "0.4"}  # 1.5 + 0.4 < 2
    jobs.Record(1, sleep=30).dispatch()
    w = start_worker("--timeout", "1.5", env=env)
    wait_for(lambda: traces(use_redis, "started"))
    w.proc.kill()
    w.proc.wait()
    use_redis.delete("trace:started")
    # the job is still reserved: a second worker takes it when retry_after has passed
    again = start_worker("--sleep", "0.2", "--timeout", "1.5", "--tries", "3", env=env)
    wait_for(lambda: traces(use_redis, "started"), timeout=10)
    again.signal(signal.SIGTERM)
    again.wait()


def test_two_workers_never_run_the_same_job(use_redis: redis.Redis, start_worker: object) -> None:
    eventbus.connection().bulk([eventbus.dispatching.make_payload(jobs.Counted(n)) for n in range(400)])
    a = start_worker("--stop-when-empty", "--quiet")
    b = start_worker("--stop-when-empty", "--quiet")
    assert a.wait() == 0 and b.wait() == 0
    counts = {int(k): int(v) for k, v in use_redis.hgetall("trace:count").items()}
    assert len(counts) == 400 and set(counts.values()) == {1}


def test_pause_and_resume(use_redis: redis.Redis, start_worker: object) -> None:
    w = start_worker("--sleep", "0.1")
    wait_until_catching(w.proc.pid, signal.SIGUSR2, signal.SIGCONT)
    w.signal(signal.SIGUSR2)
    time.sleep(0.3)
    jobs.Record(1).dispatch()
    time.sleep(1.0)
    assert traces(use_redis, "ran") == []
    w.signal(signal.SIGCONT)
    wait_for(lambda: traces(use_redis, "ran") == ["1"], timeout=10)
    w.signal(signal.SIGTERM)
    assert w.wait() == 0


def test_restart_command_stops_workers_after_their_job(use_redis: redis.Redis, start_worker: object, worker_env: dict) -> None:
    import subprocess
    import sys

    w = start_worker("--sleep", "0.1")
    wait_until_catching(w.proc.pid, signal.SIGTERM)
    subprocess.run([sys.executable, "-m", "eventbus", "restart", "--app", "apps.jobs"], env=worker_env, check=True,
                   capture_output=True)
    assert w.wait(10) == 0


def test_max_jobs_counts_failed_jobs_too(use_redis: redis.Redis, start_worker: object) -> None:
    jobs.ExplodingFailedHook().dispatch()
    jobs.Record(1).dispatch()
    jobs.Record(2).dispatch()
    code, out, _ = run_worker(start_worker, "--max-jobs", "2")
    assert code == 0 and out.count("\n") == 2 and traces(use_redis, "ran") == ["1"]


def test_once_runs_a_single_job(use_redis: redis.Redis, start_worker: object) -> None:
    jobs.Record(1).dispatch()
    jobs.Record(2).dispatch()
    code, _, _ = run_worker(start_worker, "--once")
    assert code == 0 and traces(use_redis, "ran") == ["1"]


def test_max_time(use_redis: redis.Redis, start_worker: object) -> None:
    started = time.monotonic()
    code, _, _ = run_worker(start_worker, "--max-time", "1", "--sleep", "0.2")
    assert code == 0 and time.monotonic() - started < 8


def test_memory_limit_exits_12(use_redis: redis.Redis, start_worker: object) -> None:
    jobs.Record(1).dispatch()
    code, _, err = run_worker(start_worker, "--memory", "1")
    assert code == 12 and "memory limit" in err and traces(use_redis, "ran") == ["1"]


def test_async_handle(use_redis: redis.Redis, start_worker: object) -> None:
    for n in range(3):
        jobs.AsyncJob(n).dispatch()
    code, _, _ = run_worker(start_worker, "--stop-when-empty")
    assert code == 0 and traces(use_redis, "ran") == ["async:0", "async:1", "async:2"]


def test_chain_runs_in_order_and_stops_at_a_failure(use_redis: redis.Redis, start_worker: object) -> None:
    eventbus.chain([jobs.First(), jobs.Second(), jobs.Third()]).dispatch()
    eventbus.chain([jobs.First(), jobs.Second(fail=True), jobs.Third()]).dispatch()
    code, _, _ = run_worker(start_worker, "--stop-when-empty")
    assert code == 0
    # the chains interleave; the failing one never reaches its third job
    import collections

    assert collections.Counter(traces(use_redis, "chain")) == {"first": 2, "second": 2, "third": 1}
    assert traces(use_redis, "chain")[-1] == "third"


@pytest.mark.parametrize("raw, reason", [
    ("this is not json", "payload is not JSON"),
    (json.dumps({"uuid": "u-1", "job": "os.system", "data": {"commandName": "x", "command": {}}}),
     "unknown handler 'os.system'"),
    (json.dumps({"uuid": "u-2", "job": "eventbus.CallQueuedHandler@call",
                 "data": {"commandName": "builtins.eval", "command": {}}}), "refusing to load 'builtins.eval'"),
    (json.dumps({"uuid": "u-3", "job": "eventbus.CallQueuedHandler@call",
                 "data": {"commandName": "apps.jobs.Record", "command": {"n": {"__t__": "obj", "cls": "os.system", "v": {}}}}}),
     "refusing to load 'os.system'"),
])
def test_refused_payloads_go_to_the_failed_store_and_the_worker_goes_on(
        use_redis: redis.Redis, start_worker: object, raw: str, reason: str) -> None:
    q = eventbus.connection()
    q.push_raw(raw)
    jobs.Record(1).dispatch()
    code, out, _ = run_worker(start_worker, "--stop-when-empty")
    assert code == 0 and traces(use_redis, "ran") == ["1"]
    records = eventbus.runtime.failed_store().all()
    assert len(records) == 1 and reason in records[0].exception and records[0].payload == raw
    assert q.size() == 0


def test_signed_payloads(use_redis: redis.Redis, start_worker: object) -> None:
    eventbus.configure(connections={"redis": {"driver": "redis", "url": REDIS_URL}}, key="k1")
    jobs.Record(1).dispatch()
    eventbus.configure(connections={"redis": {"driver": "redis", "url": REDIS_URL}})
    jobs.Record(2).dispatch()  # unsigned
    code, _, _ = run_worker(start_worker, "--stop-when-empty", env={"EVENTBUS_KEY": "k1"})
    assert code == 0 and traces(use_redis, "ran") == ["1"]
    [record] = eventbus.runtime.failed_store().all()
    assert "signature does not match" in record.summary


def test_redis_unreachable_at_start_is_one_line_and_non_zero(start_worker: object) -> None:
    code, _, err = run_worker(start_worker, "--stop-when-empty", env={"EVENTBUS_REDIS_URL": "redis://127.0.0.1:1/0"})
    assert code == 1
    assert err.strip().startswith("eventbus: error: cannot reach Redis at redis://127.0.0.1:1/0")
    assert "Traceback" not in err


def test_a_connection_dropped_as_the_worker_starts_is_opened_again(use_redis: redis.Redis,
                                                                    start_worker: object) -> None:
    """The server answers, but the worker's first connection is lost on the way (its first reply
    never arrives): the worker connects again and works, where it used to exit with "cannot
    reach" (a CI run of the PostgreSQL connection-loss test met this, its cut falling on the
    worker's start)."""
    target = urlsplit(REDIS_URL)
    proxy = TcpProxy(target.hostname or "127.0.0.1", target.port or 6379)
    try:
        jobs.Record(1).dispatch()
        proxy.drop_next_reply = True
        code, _, err = run_worker(start_worker, "--stop-when-empty",
                                  env={"EVENTBUS_REDIS_URL": proxy.url(int(target.path.strip("/") or 0))})
        assert proxy.replies_dropped == 1
        assert code == 0, err
        assert traces(use_redis, "ran") == ["1"]
    finally:
        proxy.close()


def test_timeout_must_be_below_retry_after(start_worker: object) -> None:
    code, _, err = run_worker(start_worker, "--timeout", "90")
    assert code == 2 and "must be below the retry_after (90s)" in err and "Traceback" not in err


def test_processes_supervises_and_forwards_sigterm(use_redis: redis.Redis, start_worker: object) -> None:
    import os

    w = start_worker("--processes", "2", "--sleep", "0.1")
    wait_for(lambda: len(children_of(w.proc.pid)) == 2, timeout=15)
    wait_until_catching(w.proc.pid, signal.SIGTERM)
    first = children_of(w.proc.pid)
    os.kill(first[0], signal.SIGKILL)  # a crashed child is replaced
    wait_for(lambda: len(children_of(w.proc.pid)) == 2 and first[0] not in children_of(w.proc.pid), timeout=15)
    for n in range(10):
        jobs.Record(n).dispatch()
    wait_for(lambda: len(traces(use_redis, "ran")) == 10, timeout=15)
    w.signal(signal.SIGTERM)
    assert w.wait(20) == 0
    assert children_of(w.proc.pid) == []


def test_children_stop_when_their_supervisor_is_killed(use_redis: redis.Redis, start_worker: object) -> None:
    import os

    w = start_worker("--processes", "2", "--sleep", "0.1")
    wait_for(lambda: len(children_of(w.proc.pid)) == 2, timeout=15)
    children = children_of(w.proc.pid)
    for child in children:
        wait_until_catching(child, signal.SIGTERM)
    os.kill(w.proc.pid, signal.SIGKILL)  # no chance to forward anything
    w.proc.wait()

    def gone(pid: int) -> bool:
        try:
            return pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
        except OSError:
            return True

    wait_for(lambda: all(gone(c) for c in children), timeout=15)  # orphans would steal jobs forever


def test_down_and_up_maintenance_mode(use_redis: redis.Redis, start_worker: object, worker_env: dict) -> None:
    import subprocess
    import sys

    def cli(*args: str) -> None:
        subprocess.run([sys.executable, "-m", "eventbus", *args, "--app", "apps.jobs"], env=worker_env,
                       check=True, capture_output=True)

    cli("down")
    try:
        w = start_worker("--sleep", "0.1")
        forced = start_worker("--sleep", "0.1", "--force", "--queue", "forced")
        jobs.Record(1).dispatch()
        jobs.Record(2).dispatch(queue="forced")
        wait_for(lambda: traces(use_redis, "ran") == ["2"], timeout=10)  # --force works in maintenance
        time.sleep(1.5)
        assert traces(use_redis, "ran") == ["2"]
        cli("up")
        wait_for(lambda: traces(use_redis, "ran") == ["2", "1"], timeout=10)
        for worker in (w, forced):
            worker.signal(signal.SIGTERM)
            assert worker.wait() == 0
    finally:
        cli("up")


def test_processes_with_stop_when_empty_exit_together(use_redis: redis.Redis, start_worker: object) -> None:
    for n in range(50):
        jobs.Record(n).dispatch()
    code, _, _ = run_worker(start_worker, "--processes", "2", "--stop-when-empty", "--quiet")
    assert code == 0 and sorted(map(int, traces(use_redis, "ran"))) == list(range(50))


def test_a_paused_worker_with_sleep_0_does_not_spin(use_redis: redis.Redis, start_worker: object) -> None:
    import os

    w = start_worker("--sleep", "0")
    wait_until_catching(w.proc.pid, signal.SIGUSR2)
    w.signal(signal.SIGUSR2)
    time.sleep(0.3)

    def cpu_seconds() -> float:
        import pathlib

        fields = pathlib.Path(f"/proc/{w.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    before = cpu_seconds()
    time.sleep(2.0)
    assert cpu_seconds() - before < 0.5  # a spinning loop would burn ~2s
    w.signal(signal.SIGTERM)
    assert w.wait() == 0


def test_a_bad_value_in_the_signal_store_is_ignored_with_a_warning(
        use_redis: redis.Redis, start_worker: object) -> None:
    use_redis.hset("queues:signals", mapping={"restart": "soon", "down": "\xff"})
    jobs.Record(1).dispatch()
    code, _, err = run_worker(start_worker, "--stop-when-empty", "--quiet")
    assert code == 0, err
    assert traces(use_redis, "ran") == ["1"]
    assert "ignoring worker signal 'restart'" in err


@pytest.mark.parametrize("start", [[], ["--spawn"]], ids=["forked", "spawned"])
def test_a_child_that_keeps_dying_at_start_is_restarted_with_backoff(
        use_redis: redis.Redis, worker_env: dict, tmp_path: pathlib.Path, start: list[str]) -> None:
    import subprocess
    import sys
    import threading

    log = tmp_path / "starts.log"
    proc = subprocess.Popen([sys.executable, "-m", "eventbus", "work", "--app", "apps.crashing_child",
                             "--processes", "2", *start], env={**worker_env, "CRASH_LOG": str(log)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    err: list[str] = []
    reader = threading.Thread(target=lambda: err.extend(proc.stderr or []), daemon=True)
    reader.start()

    def delays(name: str) -> list[float]:
        return [float(d) for d in re.findall(rf"worker {name} .* restarting in ([0-9.]+)s", "".join(err))]

    try:
        wait_for(lambda: all(len(delays(n)) >= 3 for n in ("default-1", "default-2")), timeout=60)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
        reader.join(5)
    names = {pid: name for name, pid in re.findall(r"worker (\S+) \(pid (\d+)\) exited", "".join(err))}
    lines = [(names.get(pid), float(t)) for pid, t in (line.split() for line in log.read_text().splitlines())]
    assert {name for name, _ in lines} >= {"default-1", "default-2"}  # children are named NAME-i
    for name in ("default-1", "default-2"):
        assert delays(name)[:3] == [0.5, 1.0, 2.0], "".join(err)  # each wait doubles
        starts = [t for n, t in lines if n == name]
        gaps = [b - a for a, b in zip(starts, starts[1:])]
        assert all(gap >= delay for gap, delay in zip(gaps, delays(name))), (gaps, delays(name))


def test_payload_text_reaches_the_terminal_escaped_and_a_failure_is_logged_once(
        use_redis: redis.Redis, start_worker: object) -> None:
    jobs.Shouting().dispatch(queue="q\x1b[1m")
    code, out, err = run_worker(start_worker, "--stop-when-empty", "--queue", "q\x1b[1m")
    assert code == 0
    assert "\x1b" not in out + err and "\u202e" not in err
    assert "Shouting\\x1b[2J\\x1b]0;pwned\\x07 [q\\x1b[1m]" in out
    assert err.count("RuntimeError: red \\x1b[31malert\\u202e") == 2  # the log line, the traceback
    assert err.count("Traceback") == 1


def test_a_worker_without_an_app_says_so(use_redis: redis.Redis, worker_env: dict) -> None:
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "eventbus", "work", "--stop-when-empty"],
                            env=worker_env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "no --app given" in result.stderr


def test_watch_restarts_the_worker_when_the_app_changes(
        use_redis: redis.Redis, worker_env: dict, tmp_path: pathlib.Path) -> None:
    import subprocess
    import sys
    import textwrap

    pytest.importorskip("watchfiles")
    package = tmp_path / "watched"
    package.mkdir()
    (package / "__init__.py").write_text("")
    app = package / "app.py"

    def write_app(version: str) -> None:
        app.write_text(textwrap.dedent(f"""
            import eventbus
            from apps.jobs import trace

            class Hello(eventbus.Job):
                def handle(self) -> None:
                    trace("version", "{version}")
        """))

    write_app("v1")
    env = {**worker_env, "PYTHONPATH": f"{tmp_path}:{worker_env['PYTHONPATH']}"}
    proc = subprocess.Popen([sys.executable, "-m", "eventbus", "work", "--watch", "--app", "watched.app",
                             "--sleep", "0.1", "--quiet"], env=env, cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        sys.path.insert(0, str(tmp_path))
        from watched.app import Hello  # type: ignore[import-not-found]

        Hello().dispatch()
        wait_for(lambda: traces(use_redis, "version") == ["v1"], timeout=30)
        write_app("v2")  # the running worker still has v1 loaded: only a restart can show v2
        deadline = time.monotonic() + 30
        while traces(use_redis, "version")[-1:] != ["v2"] and time.monotonic() < deadline:
            Hello().dispatch()
            time.sleep(1)
        assert traces(use_redis, "version")[-1] == "v2"
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("watched.app", None)
        sys.modules.pop("watched", None)
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)


@pytest.mark.parametrize("concurrency", [1, 4])
def test_a_restart_asked_as_the_worker_starts_reaches_it(use_redis: redis.Redis, concurrency: int) -> None:
    """``eventbus restart`` asked once the worker shows it runs (its signal handlers are in place,
    its observers told) but before its loop began must stop it: a deploy's restart must not be
    missed by a worker forked at that moment."""
    from eventbus import control, runtime
    from eventbus.monitoring.observer import WorkerObserver
    from eventbus.worker import Worker, WorkerOptions

    class RestartAsItStarts(WorkerObserver):
        def worker_started(self, worker: object) -> None:
            control.restart()

    worker = Worker(eventbus.connection(), failed=runtime.failed_store(), observer=RestartAsItStarts(),
                    options=WorkerOptions(sleep_s=0.1, memory_mb=0, max_time_s=10, concurrency=concurrency))
    started = time.monotonic()
    assert worker.run() == 0
    assert worker.restart_requested, f"ran {time.monotonic() - started:.1f}s and stopped on --max-time"
    assert time.monotonic() - started < 5
