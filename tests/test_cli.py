"""The eventbus command: failed-job tools, queue tools, errors and exit codes."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import click
import pytest
import redis
from apps import jobs
from click.testing import CliRunner
from helpers import REDIS_URL

import eventbus
from eventbus.cli import main
from eventbus.failed.base import describe_exception


def invoke(*args: str) -> object:
    result = CliRunner().invoke(main, list(args))
    return result


def _fail_one(n: int = 1) -> str:
    """Put one job into the failed store as a worker would."""
    payload = eventbus.dispatching.make_payload(jobs.Record(n))
    try:
        raise RuntimeError(f"broken {n}")
    except RuntimeError as exc:
        eventbus.runtime.failed_store().log("redis", "default", payload.to_json(), describe_exception(exc), payload.uuid)
    return payload.uuid


def test_failed_lists_full_uuid_connection_queue_name_and_exception(use_redis: redis.Redis) -> None:
    uuid = _fail_one()
    result = invoke("failed")
    assert result.exit_code == 0, result.output
    row = result.output.splitlines()[1]
    for part in (uuid, "redis", "default", "apps.jobs.Record", "RuntimeError: broken 1"):
        assert part in row


def test_failed_with_no_records(use_redis: redis.Redis) -> None:
    assert "No failed jobs." in invoke("failed").output


def test_retry_pushes_back_with_attempts_reset_and_the_same_uuid(use_redis: redis.Redis) -> None:
    uuid = _fail_one()
    result = invoke("retry", uuid)
    assert result.exit_code == 0, result.output
    [raw] = eventbus.connection().peek()
    doc = json.loads(raw)
    assert doc["uuid"] == uuid and doc["attempts"] == 0
    assert eventbus.runtime.failed_store().all() == []


def test_retry_all_and_unknown_uuid(use_redis: redis.Redis) -> None:
    _fail_one(1)
    _fail_one(2)
    assert invoke("retry", "all").exit_code == 0
    assert eventbus.connection().size() == 2
    result = invoke("retry", "no-such-uuid")
    assert result.exit_code == 1 and "no failed job with uuid no-such-uuid" in result.output


def test_forget_and_flush_and_prune(use_redis: redis.Redis) -> None:
    uuid = _fail_one(1)
    _fail_one(2)
    assert invoke("forget", uuid).exit_code == 0
    assert invoke("forget", uuid).exit_code == 1
    assert "Deleted 0 failed jobs." in invoke("prune-failed", "--hours", "1", "--force").output
    assert "Deleted 1 failed jobs." in invoke("prune-failed", "--hours", "0", "--force").output
    _fail_one(3)
    assert "Deleted 0 failed jobs." in invoke("flush", "--hours", "1", "--force").output
    assert "Deleted 1 failed jobs." in invoke("flush", "--force").output


def test_size_clear_peek(use_redis: redis.Redis) -> None:
    jobs.Record(1).dispatch()
    jobs.Record(2).dispatch(queue="other")
    jobs.Record(3).dispatch(queue="other", delay=60)
    listing = ("QUEUE          READY  DELAYED  RESERVED  SIZE\n"
               "redis:default      1        0         0     1\n"
               "redis:other        1        1         0     2\n")
    assert invoke("size", "--queue", "default,other").output == listing
    assert invoke("size").output == listing  # every queue that holds jobs, not just the default
    assert invoke("monitor", "--max", "3").exit_code == 0
    assert invoke("monitor", "--max", "2").output == (
        "QUEUE          STATUS  READY  DELAYED  RESERVED  SIZE\n"
        "redis:default  OK          1        0         0     1\n"
        "redis:other    ALERT       1        1         0     2\n")
    rows = [json.loads(line) for line in invoke("size", "--json").output.splitlines()]
    assert rows[1] == {"connection": "redis", "queue": "other", "ready": 1, "delayed": 1, "reserved": 0,
                       "size": 2, "oldest_ready_age_s": rows[1]["oldest_ready_age_s"]}
    assert 0 <= rows[1]["oldest_ready_age_s"] < 5
    assert json.loads(invoke("peek").output)["data"]["command"]["n"] == 1
    assert "Cleared 2 jobs from redis:other." in invoke("clear", "redis", "--queue", "other", "--force").output
    assert eventbus.connection().size("other") == 0


def test_unknown_connection_is_exit_2_with_one_line() -> None:
    result = invoke("size", "nowhere")
    assert result.exit_code == 2
    assert result.output.strip() == ("eventbus: error: unknown connection 'nowhere' "
                                     "(configured: database, null, redis, sync)")


def test_app_option_before_or_after_the_subcommand(use_redis: redis.Redis, worker_env: dict) -> None:
    for args in (["--app", "apps.shop_listeners", "events"], ["events", "--app", "apps.shop_listeners"]):
        out = subprocess.run([sys.executable, "-m", "eventbus", *args], env=worker_env, capture_output=True,
                             text=True, check=True).stdout
        assert "apps.shop_listeners.Remember (queued" in out


def test_app_from_the_environment(worker_env: dict) -> None:
    out = subprocess.run([sys.executable, "-m", "eventbus", "events"], capture_output=True, text=True,
                         env={**worker_env, "EVENTBUS_APP": "apps.shop_listeners"}).stdout
    assert "record_sync (sync)" in out


def test_missing_app_module_is_exit_2(worker_env: dict) -> None:
    proc = subprocess.run([sys.executable, "-m", "eventbus", "size", "--app", "no.such.module"],
                          env=worker_env, capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "eventbus: error: cannot import app module 'no.such.module': No module named 'no'"


def test_help_shows_examples() -> None:
    assert "eventbus work --stop-when-empty" in invoke("work", "--help").output


@pytest.mark.parametrize("args", [["work", "--processes", "0"], ["work", "--backoff", "x"]])
def test_usage_errors_exit_2(args: list[str]) -> None:
    assert invoke(*args).exit_code == 2


def test_restart_down_up_touch_only_this_apps_prefix(redis_client: redis.Redis) -> None:
    from eventbus import control
    other = {"driver": "redis", "url": REDIS_URL, "prefix": "other-app:"}
    mine = {"driver": "redis", "url": REDIS_URL, "prefix": "my-app:"}
    eventbus.configure(default="redis", connections={"redis": other})
    eventbus.connection().set_signal("restart", 1.0)
    eventbus.configure(default="redis", connections={"redis": mine, "database": {"driver": "null"}})
    control.restart()
    control.down()
    assert set(eventbus.connection().signals()) == {"restart", "down"}
    eventbus.configure(default="redis", connections={"redis": other})
    assert eventbus.connection().signals() == {"restart": 1.0}  # the other app's workers: untouched


def test_signalling_workers_never_creates_a_sqlite_file_nor_touches_the_builtin_redis(
        tmp_path: pathlib.Path, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch) -> None:
    """An app on the SQLite default never configured ``redis``: that server may be another
    app's, whose workers a ``restart`` here must not restart."""
    monkeypatch.setenv("EVENTBUS_REDIS_URL", REDIS_URL)  # the built-in redis connection answers
    for command in ("restart", "down", "up"):
        result = CliRunner().invoke(main, [command])
        assert result.exit_code == 0, result.output
        assert result.output == "No worker has run on database yet: nothing to tell.\n"
    assert not (tmp_path / "eventbus.sqlite3").exists()
    assert redis_client.keys("*") == []


def test_failed_escapes_what_payloads_say(use_redis: redis.Redis) -> None:
    raw = json.dumps({"uuid": "u\x1b[1m", "displayName": "Name\x1b]0;title\x07", "data": {}})
    eventbus.failed_store().log("redis", "q\x1b[2J", raw, "Boom: \x1b[31mred\u202e", "u\x1b[1m")
    result = CliRunner().invoke(main, ["failed"])
    assert result.exit_code == 0
    assert "\x1b" not in result.output and "\u202e" not in result.output
    assert "Name\\x1b]0;title\\x07" in result.output and "q\\x1b[2J" in result.output
    result = CliRunner().invoke(main, ["peek", "--queue", "q"])
    eventbus.connection().push_raw("body\x1b[2J", "q")
    result = CliRunner().invoke(main, ["peek", "--queue", "q"])
    assert result.output == "body\\x1b[2J\n"


@pytest.mark.parametrize("grace", ["abc", "-1", "nan"])
def test_a_bad_timeout_grace_is_exit_2_with_one_line(worker_env: dict, grace: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "eventbus", "work", "--stop-when-empty"],
                          env={**worker_env, "EVENTBUS_TIMEOUT_GRACE": grace}, capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (f"eventbus: error: EVENTBUS_TIMEOUT_GRACE must be a number of seconds >= 0, "
                                   f"not {grace!r}")


def test_the_command_table_names_the_module_of_each_built_in_command() -> None:
    """``eventbus.cli.base.BUILT_IN_COMMANDS`` says where each command is defined, so that
    calling one imports its module alone: the table and the modules agree."""
    from eventbus.cli.base import BUILT_IN_COMMANDS

    listed = main.list_commands(click.Context(main))  # imports every command's module
    defined = {name: command.callback.__module__ for name, command in main.commands.items()
               if command.callback is not None and command.callback.__module__.startswith("eventbus.cli.")}
    assert {name: f"eventbus.cli.{module}" for name, module in BUILT_IN_COMMANDS.items()} == defined
    assert set(BUILT_IN_COMMANDS) <= set(listed)


def test_calling_a_command_imports_its_module_alone(tmp_path: pathlib.Path) -> None:
    """``eventbus work`` starts without the scheduler, the dashboard, the other commands or the
    add-ons' entry points (``benchmarks/startup.py`` times the start)."""
    code = ("import sys\nfrom eventbus.cli import main\nmain.get_command(None, 'work')\n"
            "print([m for m in ('eventbus.cli.schedule', 'eventbus.scheduling', 'eventbus.cli.observe', "
            "'eventbus.cli.failed', 'eventbus.dashboard', 'importlib.metadata') if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(pathlib.Path(__file__).resolve().parent.parent)},
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
