"""A TCP relay between a client and a real server that can slow down, cut or refuse connections.

The server stays the real thing; the relay only plays the network: a slow link (every reply held
``reply_delay_s``), a connection lost after the server did the work but before its reply arrived
(``drop_next_reply``), a server that is down (``refuse``: every connection accepted and closed at
once).
"""

from __future__ import annotations

import socket
import threading
import time


class TcpProxy:
    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.reply_delay_s = 0.0
        self.drop_next_reply = False
        self.refuse = False
        self.accepted = 0
        self.replies_dropped = 0
        self._sockets: list[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._accept, name="tcp-proxy", daemon=True).start()

    def url(self, db: int) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self.accepted += 1
            if self.refuse:
                client.close()
                continue
            upstream = socket.create_connection(self.target)
            self._sockets += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, True), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, replies: bool) -> None:
        try:
            while data := source.recv(65536):
                if replies and self.reply_delay_s:
                    time.sleep(self.reply_delay_s)
                if replies and self.drop_next_reply:
                    self.drop_next_reply = False
                    self.replies_dropped += 1
                    break
                sink.sendall(data)
        except OSError:
            pass
        for sock in (source, sink):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        self._closed = True
        self.listener.close()
        for sock in self._sockets:
            sock.close()
