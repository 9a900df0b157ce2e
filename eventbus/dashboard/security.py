"""Who may use the dashboard, and proof that a POST came from its own pages.

**The host** comes first: a request whose ``Host`` is not one of the ``allowed_hosts`` (by
default the loopback names; ``eventbus dashboard`` adds the address it binds) is answered 400
and nothing else, whatever the gate would say. A page on any site can make a browser send
requests to a name it controls that resolves to 127.0.0.1 (DNS rebinding): only the ``Host``
tells them apart from the dashboard's own.

**The gate** (Horizon's, safe by default): with an ``authorize(request) -> bool`` callable, that
decides (it may be ``async``). With a ``token``, a request needs ``Authorization: Bearer TOKEN``
or the cookie set after visiting any page with ``?token=TOKEN`` once (else 401). With neither,
only local clients get in: a loopback address, and no sign that a proxy passed the request on:
no forwarding header (``X-Forwarded-For``, ``Forwarded``, ``X-Real-IP``, ``X-Forwarded-Host``,
``Via``) and not HTTP/1.0, which nginx's default ``proxy_pass`` speaks (with no forwarding
header at all). Behind a proxy, use a token or ``authorize``.

**CSRF**, signed double-submit: each browser gets a random cookie; each form carries
``issued-at.HMAC(secret, cookie|issued-at)``. A POST needs both to match, a token younger than
:data:`TOKEN_AGE_S`, and no cross-site ``Origin``/``Sec-Fetch-Site``. An attacker who can plant a
cookie still cannot mint a field without the secret. Actions are POST only.
"""

from __future__ import annotations

import hashlib
import hmac
import inspect
import ipaddress
import secrets
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Union
from urllib.parse import parse_qs, urlsplit

from starlette.requests import Request

Authorize = Callable[[Request], Union[bool, Awaitable[bool]]]

CSRF_COOKIE = "eventbus_csrf"
TOKEN_COOKIE = "eventbus_token"
TOKEN_AGE_S = 12 * 3600
MAX_FORM_BYTES = 256 * 1024
MAX_FORM_FIELDS = 2000
FORWARDING_HEADERS = ("x-forwarded-for", "forwarded", "x-real-ip", "x-forwarded-host", "via")
#: The names a local client reaches a loopback address by (the default ``allowed_hosts``).
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
#: The ``Origin`` a browser sends from an opaque origin (a sandboxed frame, a ``data:`` page).
OPAQUE_ORIGIN = "null"


def host_of(header: str | None) -> str | None:
    """The host name of a ``Host`` header (lower case, an IPv6 address without its brackets),
    or None when it is not a plain ``host[:port]``."""
    if not header or any(c in header for c in "/?#@\\ \t") or not header.isascii():
        return None
    try:
        parts = urlsplit("//" + header)
        parts.port  # noqa: B018 - raises ValueError for a port that is not one
    except ValueError:
        return None
    return parts.hostname or None


class AllowedHosts:
    """The ``Host`` names the dashboard answers: exact names (case-insensitive, any port),
    ``*.example.com`` for its subdomains, ``*`` for any (then nothing is checked)."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = tuple(name.strip().lower().strip("[]") for name in names if name.strip())
        for name in self.names:
            if "*" in name and name != "*" and not (name.startswith("*.") and "*" not in name[1:]):
                raise ValueError(f"an allowed host is a name, *.domain or *, not {name!r}")
        self.any = "*" in self.names

    def allow(self, header: str | None) -> bool:
        if self.any:
            return True
        host = host_of(header)
        return host is not None and any(
            host == name or (name.startswith("*.") and host.endswith(name[1:])) for name in self.names)


def is_local(request: Request) -> bool:
    """A loopback client that no proxy speaks for (see the module docstring)."""
    if any(h in request.headers for h in FORWARDING_HEADERS):
        return False
    if request.scope.get("http_version") == "1.0":
        return False
    host = request.client.host if request.client else ""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def token_digest(token: str) -> str:
    return hashlib.sha256(b"eventbus-dashboard|" + token.encode()).hexdigest()


def same_text(given: str, expected: str) -> bool:
    """``hmac.compare_digest`` on any text a client sends (it refuses non-ASCII str)."""
    return hmac.compare_digest(given.encode("utf-8", "surrogateescape"),
                               expected.encode("utf-8", "surrogateescape"))


class Gate:
    """Decides whether a request may see the dashboard (see the module docstring)."""

    def __init__(self, *, authorize: Authorize | None = None, token: str | None = None) -> None:
        self.authorize = authorize
        self.token = token

    @property
    def status_code(self) -> int:
        """What a refused request gets: 401 when a token would let it in, else 403."""
        return 401 if self.authorize is None and self.token is not None else 403

    def describe(self) -> str:
        if self.authorize is not None:
            return "your authorize callable refused this request"
        if self.token is not None:
            return "a token is required"
        return ("only local clients may use the dashboard, and a request a proxy passed on is not "
                "one (pass authorize= or token= to open it up)")

    async def allows(self, request: Request) -> bool:
        if self.authorize is not None:
            answer = self.authorize(request)
            if inspect.isawaitable(answer):
                answer = await answer
            return answer is True
        if self.token is not None:
            return self._has_token(request)
        return is_local(request)

    def _has_token(self, request: Request) -> bool:
        assert self.token is not None
        given = request.headers.get("authorization", "")
        if given.lower().startswith("bearer ") and same_text(given[7:].strip(), self.token):
            return True
        cookie = request.cookies.get(TOKEN_COOKIE, "")
        return bool(cookie) and same_text(cookie, token_digest(self.token))

    def offered_token(self, request: Request) -> str | None:
        """``?token=`` that is right (the caller sets the cookie and drops it from the URL)."""
        given = request.query_params.get("token")
        if self.token is None or given is None or not same_text(given, self.token):
            return None
        return given


class Csrf:
    """Signed double-submit tokens bound to the browser's CSRF cookie."""

    def __init__(self, secret: str | None = None) -> None:
        self.secret = (secret or secrets.token_urlsafe(32)).encode()

    def _sign(self, cookie: str, issued: str) -> str:
        return hmac.new(self.secret, f"{cookie}|{issued}".encode(), hashlib.sha256).hexdigest()

    @staticmethod
    def new_cookie() -> str:
        return secrets.token_urlsafe(32)

    def token(self, cookie: str) -> str:
        issued = str(int(time.time()))
        return f"{issued}.{self._sign(cookie, issued)}"

    def valid(self, cookie: str | None, token: str | None) -> bool:
        if not cookie or not token or "." not in token:
            return False
        issued, _, signature = token.partition(".")
        if not (issued.isascii() and issued.isdigit() and len(issued) <= 12) \
                or time.time() - int(issued) > TOKEN_AGE_S:
            return False
        return same_text(signature, self._sign(cookie, issued))


def same_origin(request: Request) -> bool:
    """No browser signal that the POST came from another site."""
    fetch_site = request.headers.get("sec-fetch-site")
    if fetch_site is not None and fetch_site not in ("same-origin", "none"):
        return False
    origin = request.headers.get("origin")
    if origin is None:
        return True
    if origin == OPAQUE_ORIGIN:
        return False
    try:
        return urlsplit(origin).netloc == request.headers.get("host", "")
    except ValueError:  # not a URL at all
        return False


class FormTooLarge(Exception):
    """A POSTed form past :data:`MAX_FORM_BYTES` or :data:`MAX_FORM_FIELDS` (answered 413)."""


async def read_form(request: Request) -> dict[str, list[str]]:
    """An ``application/x-www-form-urlencoded`` body, parsed here (no python-multipart needed)."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise FormTooLarge()
    if not request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
        return {}
    try:
        return parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True,
                        max_num_fields=MAX_FORM_FIELDS)
    except ValueError:  # more fields than that
        raise FormTooLarge() from None


SECURITY_HEADERS = {
    "content-security-policy": ("default-src 'none'; script-src 'self'; style-src 'self'; "
                                "img-src 'self' data:; connect-src 'self'; form-action 'self'; "
                                "frame-ancestors 'none'; base-uri 'none'"),
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "x-frame-options": "DENY",
    "cache-control": "no-store",
}
