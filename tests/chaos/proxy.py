"""A small threaded TCP proxy that can pass traffic, reset every connection, or black-hole.

``pass``: bytes flow both ways. ``reset()``: every open connection is closed with a TCP reset
(the client sees ``ECONNRESET``), new ones are accepted as usual. ``blackhole()``: connections
stay open and new ones are accepted, but nothing is forwarded in either direction (what arrives
is dropped, as a network that loses every packet would). ``restore()`` passes traffic again and
resets the connections that lost bytes in the black hole, as their TCP streams would have timed
out: after a black hole nobody can trust a half-delivered stream.

A control port takes one line (``blackhole``, ``restore``, ``reset``) and answers ``ok``, so a
job inside a worker can choose the exact moment of a fault.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import struct
import threading
from collections.abc import Iterator

log = logging.getLogger(__name__)


def _abort(sock: socket.socket) -> None:
    """Close with RST (linger 0) and wake a thread blocked in recv on it."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()


class _Pair:
    def __init__(self, client: socket.socket, upstream: socket.socket | None) -> None:
        self.client = client
        self.upstream = upstream
        self.tainted = upstream is None  # accepted inside a black hole: never connected
        self.closed = False

    def close(self) -> None:
        self.closed = True
        _abort(self.client)
        if self.upstream is not None:
            _abort(self.upstream)


class Proxy:
    """Listens on 127.0.0.1:``port`` and forwards to ``target_host``:``target_port``."""

    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self.mode = "pass"
        self.resets = 0
        self._pairs: list[_Pair] = []
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._control = socket.create_server(("127.0.0.1", 0))
        self.control_port = int(self._control.getsockname()[1])
        self._stopped = threading.Event()
        for target in (self._accept_loop, self._control_loop):
            threading.Thread(target=target, daemon=True, name="chaos-proxy").start()

    def url(self, db: int = 0) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    @property
    def control_address(self) -> str:
        return f"127.0.0.1:{self.control_port}"

    # -- commands -------------------------------------------------------------------------------
    def reset(self) -> int:
        """Reset every open connection; return how many."""
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            pair.close()
        self.resets += 1
        return len(pairs)

    def blackhole(self) -> None:
        with self._lock:
            self.mode = "blackhole"

    def restore(self) -> None:
        with self._lock:
            self.mode = "pass"
            tainted = [p for p in self._pairs if p.tainted]
            self._pairs = [p for p in self._pairs if not p.tainted]
        for pair in tainted:
            pair.close()

    def close(self) -> None:
        self._stopped.set()
        for sock in (self._listener, self._control):
            _abort(sock)
        self.reset()

    # -- plumbing -------------------------------------------------------------------------------
    def _accept_loop(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = None
            if self.mode == "pass":
                try:
                    upstream = socket.create_connection(self.target, timeout=5)
                    upstream.settimeout(None)
                except OSError:
                    _abort(client)  # the server is down: refuse like it would
                    continue
            pair = _Pair(client, upstream)
            with self._lock:
                self._pairs.append(pair)
            threading.Thread(target=self._pump, args=(pair, True), daemon=True).start()
            if upstream is not None:
                threading.Thread(target=self._pump, args=(pair, False), daemon=True).start()

    def _pump(self, pair: _Pair, from_client: bool) -> None:
        src = pair.client if from_client else pair.upstream
        assert src is not None
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if self.mode != "pass" or pair.upstream is None:
                    pair.tainted = True  # dropped: this stream can no longer be trusted
                    continue
                (pair.upstream if from_client else pair.client).sendall(data)
        except OSError:
            pass
        if not pair.closed:
            with self._lock:
                if pair in self._pairs:
                    self._pairs.remove(pair)
            pair.close()

    def _control_loop(self) -> None:
        while not self._stopped.is_set():
            try:
                conn, _ = self._control.accept()
            except OSError:
                return
            with conn, conn.makefile("rw") as f:
                command = f.readline().strip()
                action = {"blackhole": self.blackhole, "restore": self.restore, "reset": self.reset}.get(command)
                if action is not None:
                    action()
                f.write("ok\n" if action is not None else f"unknown command {command!r}\n")
                f.flush()


@contextlib.contextmanager
def proxy_to(port: int) -> Iterator[Proxy]:
    proxy = Proxy(port)
    try:
        yield proxy
    finally:
        proxy.close()


def send_command(address: str, command: str, timeout: float = 5.0) -> None:
    """Tell a proxy's control port to ``blackhole``, ``restore`` or ``reset`` (used by jobs)."""
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as conn, conn.makefile("rw") as f:
        f.write(command + "\n")
        f.flush()
        answer = f.readline().strip()
    if answer != "ok":
        raise RuntimeError(f"proxy refused {command!r}: {answer}")
