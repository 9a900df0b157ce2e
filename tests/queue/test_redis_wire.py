"""The Redis driver's hot-path connection (``eventbus.queue.redis.wire``): one per thread and
per process, so that a forked child never writes to its parent's socket; made by redis-py, so
that what redis-py connects to (TLS here) the hot path reaches too."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
from collections.abc import Iterator

import pytest
import redis
from helpers import REDIS_URL, free_port, wait_for

import eventbus
from eventbus.payload import Payload
from eventbus.queue.redis.wire import Wire


def test_a_forked_child_opens_its_own_connection(redis_client: redis.Redis) -> None:
    wire = Wire(REDIS_URL, timeout=5.0, name="eventbus:wire-test")
    parent_id = wire.call("CLIENT", "ID")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its first call must not go over the parent's socket
        try:
            os.write(write, str(wire.call("CLIENT", "ID")).encode())
        finally:
            os._exit(0)
    os.close(write)
    child_id = int(os.read(read, 64) or b"0")
    os.waitpid(pid, 0)
    os.close(read)
    assert child_id and child_id != parent_id
    assert wire.call("CLIENT", "ID") == parent_id  # the parent keeps its own
    wire.close()


@pytest.fixture
def tls_redis(tmp_path: pathlib.Path) -> Iterator[str]:
    """A private Redis that speaks only TLS (a self-signed certificate made here); its URL."""
    if shutil.which("openssl") is None or shutil.which("redis-server") is None:
        pytest.skip("needs openssl and redis-server")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "key.pem",
                    "-out", "cert.pem", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], cwd=tmp_path, check=True, capture_output=True)
    port = free_port()
    server = subprocess.Popen(["redis-server", "--port", "0", "--tls-port", str(port), "--bind", "127.0.0.1",
                               "--tls-cert-file", "cert.pem", "--tls-key-file", "key.pem",
                               "--tls-ca-cert-file", "cert.pem", "--tls-auth-clients", "no",
                               "--save", "", "--appendonly", "no"], cwd=tmp_path, stdout=subprocess.DEVNULL)
    url = f"rediss://127.0.0.1:{port}/0?ssl_ca_certs={tmp_path / 'cert.pem'}"
    try:
        wait_for(lambda: _answers(url), timeout=10)
        yield url
    finally:
        server.terminate()
        server.wait()


def _answers(url: str) -> bool:
    try:
        return bool(redis.Redis.from_url(url).ping())
    except redis.ConnectionError:
        return False


def test_the_hot_path_speaks_tls(tls_redis: str) -> None:
    """A ``rediss://`` connection pushes and reserves over the hot path, through TLS."""
    eventbus.configure(default="tls", connections={"tls": {"driver": "redis", "url": tls_redis}})
    queue = eventbus.connection()
    assert queue._wire is not None  # type: ignore[attr-defined]
    uuid = queue.push(Payload(display_name="T", command_name="t.Job", command={}))
    job = queue.pop()
    assert job is not None and job.uuid == uuid and job.delete()
    conn = queue._wire._connection().conn  # type: ignore[attr-defined]
    assert isinstance(conn, redis.SSLConnection)
    eventbus.configure()
