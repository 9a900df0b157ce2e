"""``eventbus dashboard``: the token from a file or the environment (never only on the command
line, where ``ps`` shows it), and the Host names it answers."""

from __future__ import annotations

import contextlib
import os
import pathlib
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest
from click.testing import CliRunner

from eventbus.cli import main
from helpers import wait_for
from observing import free_port

pytest.importorskip("uvicorn")


@pytest.fixture
def serve(worker_env: dict[str, str]) -> Iterator[object]:
    started: list[subprocess.Popen[str]] = []

    def start(*args: str, env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], int]:
        port = free_port()
        proc = subprocess.Popen([sys.executable, "-m", "eventbus", "dashboard", "--port", str(port), *args],
                                env={**worker_env, **(env or {})}, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        started.append(proc)
        wait_for(lambda: status(port, "/") != 0, timeout=30)
        return proc, port

    yield start
    for proc in started:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 9)
        proc.wait()


def status(port: int, path: str, **headers: str) -> int:
    try:
        return httpx.get(f"http://127.0.0.1:{port}{path}", headers=headers, timeout=5).status_code
    except httpx.HTTPError:
        return 0


def test_the_token_comes_from_a_file_and_never_shows_in_ps(serve: object, tmp_path: pathlib.Path) -> None:
    secret = tmp_path / "token"
    secret.write_text("file-t0ken\n")
    proc, port = serve("--host", "0.0.0.0", "--token-file", str(secret))  # type: ignore[operator]
    assert status(port, "/") == 401
    assert status(port, "/", authorization="Bearer file-t0ken") == 200
    assert b"file-t0ken" not in pathlib.Path(f"/proc/{proc.pid}/cmdline").read_bytes()


def test_the_token_comes_from_the_environment(serve: object) -> None:
    proc, port = serve("--host", "0.0.0.0", env={"EVENTBUS_DASHBOARD_TOKEN": "env-t0ken"})  # type: ignore[operator]
    assert status(port, "/") == 401 and status(port, "/", authorization="Bearer env-t0ken") == 200
    assert b"env-t0ken" not in pathlib.Path(f"/proc/{proc.pid}/cmdline").read_bytes()


@pytest.mark.parametrize("args, message", [
    (["--token", "a", "--token-file", "x"], "--token-file or --token, not both"),
    (["--token-file", "no-such-file"], "cannot read --token-file 'no-such-file'"),
    (["--token-file", "empty"], "--token-file 'empty' is empty"),
    (["--host", "0.0.0.0"], "refusing to serve the dashboard on 0.0.0.0"),
    (["--allowed-host", "a*b.example.com"], "--allowed-host: an allowed host is"),
])
def test_bad_token_options_are_one_line_and_exit_2(args: list[str], message: str) -> None:
    pathlib.Path("empty").write_text("  \n")
    result = CliRunner().invoke(main, ["dashboard", *args])
    assert result.exit_code == 2 and message in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1


def test_a_token_on_the_command_line_is_warned_about(serve: object) -> None:
    proc, port = serve("--token", "cli-t0ken")  # type: ignore[operator]
    assert status(port, "/", authorization="Bearer cli-t0ken") == 200
    os.killpg(proc.pid, 9)
    assert "--token is visible to every user of this machine" in proc.communicate()[1]


def test_it_answers_the_loopback_names_its_address_and_the_allowed_hosts(serve: object) -> None:
    _, port = serve("--host", "0.0.0.0", "--allowed-host", "ops.example.com",  # type: ignore[operator]
                    env={"EVENTBUS_DASHBOARD_TOKEN": "t", "EVENTBUS_DASHBOARD_ALLOWED_HOSTS": "*.corp.test"})
    auth = {"authorization": "Bearer t"}
    for host in ("localhost", "127.0.0.1", "ops.example.com", "eu.corp.test"):
        assert status(port, "/", host=host, **auth) == 200, host
    for host in ("rebind.attacker.test", "10.1.2.3", "corp.test"):
        assert status(port, "/", host=host, **auth) == 400, host
