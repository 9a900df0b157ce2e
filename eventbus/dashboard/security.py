"""Who may use the dashboard, and proof that a POST came from its own pages.

**The gate** (Horizon's, safe by default): with an ``authorize(request) -> bool`` callable, that
decides (it may be ``async``). With a ``token``, a request needs ``Authorization: Bearer TOKEN``
or the cookie set after visiting any page with ``?token=TOKEN`` once. With neither, only local
clients get in: a loopback address and no ``X-Forwarded-For``/``Forwarded`` header (a request a
local reverse proxy passes on from elsewhere is refused).

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
from collections.abc import Awaitable, Callable
from typing import Union
from urllib.parse import parse_qs, urlsplit

from starlette.requests import Request

Authorize = Callable[[Request], Union[bool, Awaitable[bool]]]

CSRF_COOKIE = "eventbus_csrf"
TOKEN_COOKIE = "eventbus_token"
TOKEN_AGE_S = 12 * 3600
MAX_FORM_BYTES = 256 * 1024
FORWARDING_HEADERS = ("x-forwarded-for", "forwarded", "x-real-ip")
#: The ``Origin`` a browser sends from an opaque origin (a sandboxed frame, a ``data:`` page).
OPAQUE_ORIGIN = "null"


def is_local(request: Request) -> bool:
    """A loopback client that no proxy speaks for."""
    if any(h in request.headers for h in FORWARDING_HEADERS):
        return False
    host = request.client.host if request.client else ""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def token_digest(token: str) -> str:
    return hashlib.sha256(b"eventbus-dashboard|" + token.encode()).hexdigest()


class Gate:
    """Decides whether a request may see the dashboard (see the module docstring)."""

    def __init__(self, *, authorize: Authorize | None = None, token: str | None = None) -> None:
        self.authorize = authorize
        self.token = token

    def describe(self) -> str:
        if self.authorize is not None:
            return "your authorize callable refused this request"
        if self.token is not None:
            return "a token is required"
        return "only local clients may use the dashboard (pass authorize= or token= to open it up)"

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
        if given.lower().startswith("bearer ") and hmac.compare_digest(given[7:].strip(), self.token):
            return True
        cookie = request.cookies.get(TOKEN_COOKIE, "")
        return bool(cookie) and hmac.compare_digest(cookie, token_digest(self.token))

    def offered_token(self, request: Request) -> str | None:
        """``?token=`` that is right (the caller sets the cookie and drops it from the URL)."""
        given = request.query_params.get("token")
        if self.token is None or given is None or not hmac.compare_digest(given, self.token):
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
        if not issued.isdigit() or time.time() - int(issued) > TOKEN_AGE_S:
            return False
        return hmac.compare_digest(signature, self._sign(cookie, issued))


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
    return urlsplit(origin).netloc == request.headers.get("host", "")


class FormTooLarge(Exception):
    pass


async def read_form(request: Request) -> dict[str, list[str]]:
    """An ``application/x-www-form-urlencoded`` body, parsed here (no python-multipart needed)."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise FormTooLarge()
    if not request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
        return {}
    return parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True, max_num_fields=2000)


SECURITY_HEADERS = {
    "content-security-policy": ("default-src 'none'; script-src 'self'; style-src 'self'; "
                                "img-src 'self' data:; connect-src 'self'; form-action 'self'; "
                                "frame-ancestors 'none'; base-uri 'none'"),
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "x-frame-options": "DENY",
    "cache-control": "no-store",
}
