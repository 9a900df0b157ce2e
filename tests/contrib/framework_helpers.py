"""What the framework tests share: an SMTP inbox, clean environments, processes run to the end."""

from __future__ import annotations

import contextlib
import email
import email.policy
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

from helpers import ROOT

EXAMPLES = ROOT / "examples"


class Inbox:
    """The messages the SMTP server accepted, parsed."""

    def __init__(self) -> None:
        self.envelopes: list[Any] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.envelopes.append(envelope)
        return "250 Message accepted"

    @property
    def messages(self) -> list[email.message.EmailMessage]:
        return [email.message_from_bytes(e.original_content, policy=email.policy.default)  # type: ignore[misc]
                for e in self.envelopes]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without eventbus settings (test URLs kept) nor the framework
    apps the tests set up here, plus ``extra``."""
    env = {k: v for k, v in os.environ.items()
           if (not k.startswith("EVENTBUS_") or k.startswith("EVENTBUS_TEST_"))
           and k not in ("DJANGO_SETTINGS_MODULE", "FLASK_APP")}
    env.update(extra)
    return env


def run_process(command: Sequence[str], *, env: dict[str, str], cwd: Any = None,
                timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run a worker (or an example) to the end in its own process group; kill the group on timeout."""
    proc = subprocess.Popen(list(command), env=env, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError(f"{' '.join(command)} did not finish in {timeout}s\n{out}\n{err}") from None
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def python_path(*paths: Any) -> str:
    return os.pathsep.join(str(p) for p in [*paths, ROOT])


PYTHON = sys.executable


@contextlib.contextmanager
def serving(app: Any, timeout_s: float = 30.0) -> Iterator[str]:
    """Serve the ASGI ``app`` with uvicorn on a free port of 127.0.0.1 in a thread (its lifespan
    included) until the block ends; yield its base URL."""
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise AssertionError("uvicorn did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout_s)
