"""A real SMTP server (aiosmtpd) and a local HTTP server standing in for the SMS providers."""

from __future__ import annotations

import asyncio
import email
import email.policy
import http.server
import json
import socket
import ssl
import subprocess
import threading
import time
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, AuthResult, LoginPassword

from notifications import channels


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Inbox:
    """What the SMTP server received: envelopes and parsed messages, and the connections it had."""

    def __init__(self) -> None:
        self.envelopes: list[Any] = []
        self.sessions: set[int] = set()
        self.session_of: list[int] = []  # the session (connection) each envelope came on
        self.connections: list[SMTP] = []  # every connection accepted, open or closed
        self.most_open = 0  # the most connections open at one moment
        self.loop: Any = None
        self.refused: set[str] = set()  # recipients answered with 550 (permanent)
        self.deferred: set[str] = set()  # recipients answered with 451 (try again later)
        self.rcpt_attempts: list[str] = []  # every RCPT TO the server was sent
        self.data_delay_s = 0.0  # how long the server takes to accept a message
        self.quits = 0  # connections the client ended with QUIT

    async def handle_RCPT(self, server: Any, session: Any, envelope: Any, address: str, options: list[str]) -> str:
        self.rcpt_attempts.append(address)
        if address in self.refused:
            return "550 5.1.1 No such user here"
        if address in self.deferred:
            return "451 4.3.0 Mailbox busy, try again later"
        envelope.rcpt_tos.append(address)
        envelope.rcpt_options.extend(options)
        return "250 OK"

    async def handle_QUIT(self, server: Any, session: Any, envelope: Any) -> str:
        self.quits += 1
        return "221 Bye"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        if self.data_delay_s:
            await asyncio.sleep(self.data_delay_s)
        self.envelopes.append(envelope)
        self.sessions.add(id(session))
        self.session_of.append(id(session))
        return "250 Message accepted"

    @property
    def messages(self) -> list[email.message.EmailMessage]:
        return [email.message_from_bytes(e.original_content, policy=email.policy.default)  # type: ignore[misc]
                for e in self.envelopes]

    @property
    def open_connections(self) -> int:
        return sum(1 for c in self.connections if c.transport is not None)

    def drop_connections(self, saying: bytes = b"") -> None:
        """Close every open connection from the server's side, as an idle timeout would (some
        servers say ``421`` first)."""
        done = threading.Event()

        def drop() -> None:
            for connection in self.connections:
                if connection.transport is not None:
                    connection.transport.write(saying)
                    connection.transport.close()
            done.set()

        self.loop.call_soon_threadsafe(drop)
        assert done.wait(5)

    def forget_connections(self) -> None:
        self.connections, self.most_open = [], 0


class CountingSMTP(SMTP):
    """aiosmtpd's SMTP, telling the inbox about each connection it accepts."""

    def __init__(self, inbox: Inbox, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.inbox = inbox

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self.inbox.connections.append(self)
        self.inbox.most_open = max(self.inbox.most_open, self.inbox.open_connections)


class InboxController(Controller):
    """A Controller whose connections the inbox counts (not counting the start-up probe)."""

    def __init__(self, inbox: Inbox, **kwargs: Any) -> None:
        super().__init__(inbox, **kwargs)
        self.inbox = inbox

    def factory(self) -> SMTP:
        return CountingSMTP(self.inbox, self.handler, **self.SMTP_kwargs)

    def start(self) -> None:
        super().start()
        self.inbox.loop = self.loop
        self.inbox.forget_connections()  # start() made one to check the server answers


def forget_channels() -> None:
    channels.reset()
    for name in channels.registered_channels():
        channels.unregister(name)


@pytest.fixture(autouse=True)
def fresh_channels() -> Iterator[None]:
    forget_channels()
    yield
    forget_channels()


@pytest.fixture
def smtp_server() -> Iterator[tuple[Inbox, int]]:
    inbox = Inbox()
    port = free_port()
    controller = InboxController(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    yield inbox, port
    controller.stop()


@pytest.fixture(scope="session")
def self_signed_cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    d = tmp_path_factory.mktemp("tls")
    cert, key = str(d / "cert.pem"), str(d / "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                    "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", cert],
                   check=True, capture_output=True)
    return cert, key


@pytest.fixture
def tls_smtp_server(self_signed_cert: tuple[str, str]) -> Iterator[tuple[Inbox, int, str]]:
    cert, key = self_signed_cert
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    inbox = Inbox()
    port = free_port()

    def authenticate(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> AuthResult:
        ok = isinstance(data, LoginPassword) and data.login == b"shop" and data.password == b"s3cret"
        return AuthResult(success=ok)

    controller = Controller(inbox, hostname="127.0.0.1", port=port, tls_context=context, require_starttls=True,
                            auth_required=True, authenticator=authenticate)
    controller.start()
    yield inbox, port, cert
    controller.stop()


@pytest.fixture
def lenient_tls_smtp_server(self_signed_cert: tuple[str, str]) -> Iterator[tuple[Inbox, int, str, list[bool]]]:
    """Offers STARTTLS but also accepts AUTH without it; records whether each AUTH came over TLS."""
    cert, key = self_signed_cert
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    inbox, port, auth_over_tls = Inbox(), free_port(), []

    def authenticate(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> AuthResult:
        auth_over_tls.append(session.ssl is not None)
        return AuthResult(success=isinstance(data, LoginPassword) and data.password == b"s3cret")

    controller = Controller(inbox, hostname="127.0.0.1", port=port, tls_context=context, require_starttls=False,
                            auth_require_tls=False, authenticator=authenticate)
    controller.start()
    yield inbox, port, cert, auth_over_tls
    controller.stop()


class ProviderStub(http.server.BaseHTTPRequestHandler):
    """Answers like Twilio's Messages API and Vonage's SMS API; records every request.

    HTTP/1.1 with keep-alive, so a client that reuses its connection shows one client address.
    """

    protocol_version = "HTTP/1.1"
    requests: list[dict[str, Any]] = []
    closed: list[tuple[str, int]] = []  # client addresses whose connection ended
    fail_with: int | None = None
    script: list[tuple[int, dict[str, str]]] = []  # (status, headers) answered first, in order

    def log_message(self, *args: Any) -> None:
        pass

    def finish(self) -> None:
        super().finish()
        self.closed.append(self.client_address)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        body = self.rfile.read(length).decode()
        form = {k: v[0] for k, v in urllib.parse.parse_qs(body).items()}
        self.requests.append({"path": self.path, "headers": dict(self.headers), "form": form,
                              "at": time.monotonic(), "client": self.client_address})
        if self.script:
            status, headers = self.script.pop(0)
            self._reply(status, {"code": 20429, "message": f"scripted {status}", "status": status}, headers)
        elif self.fail_with:
            self._reply(self.fail_with, {"code": 20500, "message": "Internal Server Error", "status": self.fail_with})
        elif self.path.startswith("/2010-04-01/Accounts/"):
            if form.get("To", "").startswith("+1999"):
                self._reply(400, {"code": 21211, "message": "The 'To' number is not a valid phone number.",
                                  "status": 400})
            else:
                self._reply(201, {"sid": "SM123", "status": "queued", "to": form.get("To"), "body": form.get("Body")})
        elif self.path == "/sms/json":
            if form.get("to", "").startswith("1999"):
                self._reply(200, {"message-count": "1", "messages": [{"status": "3", "error-text": "Invalid To Number"}]})
            else:
                self._reply(200, {"message-count": "1", "messages": [{"to": form.get("to"), "message-id": "abc",
                                                                      "status": "0"}]})
        else:
            self._reply(404, {"message": "not found"})

    def _reply(self, status: int, data: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        raw = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(raw)


@pytest.fixture
def provider_stub() -> Iterator[tuple[type[ProviderStub], int]]:
    ProviderStub.requests = []
    ProviderStub.closed = []
    ProviderStub.fail_with = None
    ProviderStub.script = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ProviderStub)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield ProviderStub, server.server_address[1]
    server.shutdown()
    server.server_close()


class SlackStub(http.server.BaseHTTPRequestHandler):
    """Answers like a Slack incoming webhook (200 ``ok``); records each JSON body it was posted.

    ``script`` holds (status, text, headers) answered first, in order.
    """

    protocol_version = "HTTP/1.1"
    posts: list[dict[str, Any]] = []
    paths: list[str] = []
    script: list[tuple[int, str, dict[str, str]]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.posts.append(json.loads(body))
        self.paths.append(self.path)
        status, text, headers = self.script.pop(0) if self.script else (200, "ok", {})
        raw = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(raw)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(raw)


@pytest.fixture
def slack_stub() -> Iterator[tuple[type[SlackStub], str]]:
    """A local webhook standing in for Slack's, and its URL."""
    SlackStub.posts, SlackStub.paths, SlackStub.script = [], [], []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), SlackStub)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield SlackStub, f"http://127.0.0.1:{server.server_address[1]}/services/T000/B000/XXXX"
    server.shutdown()
    server.server_close()
