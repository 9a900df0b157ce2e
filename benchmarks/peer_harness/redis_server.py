"""A private redis-server for the run, so nothing else on the machine flushes or fills its database.

Started on a free loopback port without persistence (as the project's Redis is configured) and
stopped when the run ends.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@contextlib.contextmanager
def private_redis(binary: str = "redis-server") -> Iterator[str]:
    """Yield the URL of a fresh redis-server (database 0) that lives as long as the block."""
    path = shutil.which(binary)
    if path is None:
        raise FileNotFoundError(f"{binary} not found: pass --redis-url to use a running server")
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="eventbus-bench-redis-") as tmp:
        proc = subprocess.Popen([path, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                 "--appendonly", "no", "--dir", tmp], stdout=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 10
            while not _answers(port):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{binary} did not start on port {port}")
                time.sleep(0.05)
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            proc.terminate()
            proc.wait(timeout=10)
