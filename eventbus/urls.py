"""URLs in settings: reading their query without form decoding, and printing them without secrets.

Connection, mail and SMS settings are URLs that carry credentials. Anything that prints one (an
error message, a log line, ``repr(settings())``) goes through :func:`redact_url`, which hides the
password and every query value whose name says it is a secret, and never echoes a URL it cannot
parse. Query strings are read with :func:`query_params`, which decodes ``%XX`` escapes but keeps
``+`` as a plus sign: ``?from=+15550100`` is a phone number, not `` 15550100``.
"""

from __future__ import annotations

import re
from urllib.parse import SplitResult, unquote, urlsplit, urlunsplit

SECRET_WORDS = ("password", "passwd", "pass", "secret", "token", "key", "auth", "credential",
                "signature", "sig")
REDACTED = "***"
UNPARSEABLE = "<unparseable URL>"


def query_params(query: str) -> dict[str, list[str]]:
    """``a=1&b=%2B1&b=+2`` -> ``{"a": ["1"], "b": ["+1", "+2"]}`` (no form decoding)."""
    params: dict[str, list[str]] = {}
    for part in query.split("&"):
        if not part:
            continue
        name, _, value = part.partition("=")
        params.setdefault(unquote(name), []).append(unquote(value))
    return params


def last_param(params: dict[str, list[str]], name: str, default: str | None = None) -> str | None:
    """The last value given for ``name`` (later values win, as in a command line)."""
    values = params.get(name)
    return values[-1] if values else default


def is_secret_name(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in SECRET_WORDS)


def redact_url(url: str) -> str:
    """The URL with its password and secret-looking query values replaced by ``***``.

    A URL that cannot be parsed is never echoed (it may be a password pasted in the wrong place),
    nor is text without ``://`` that holds a ``:`` or an ``@`` (``postgresql:/user:pass@host``
    is no URL anything reads, and its password would show as it is). A plain word (``log``,
    ``memory``) is shown. A list of hosts (``redis+cluster://h1:7000,h2:7001``) is read host by
    host.
    """
    if "://" not in url and (":" in url or "@" in url):
        return UNPARSEABLE
    try:
        parts = urlsplit(url)
        if "," in parts.netloc:
            return _redact_hosts(parts)
        port = parts.port
    except ValueError:
        return UNPARSEABLE
    netloc = parts.netloc
    if parts.password is not None or "@" in netloc:
        user = parts.username or ""
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        userinfo = f"{user}:{REDACTED}" if parts.password is not None else user
        netloc = f"{userinfo}@{host}" + (f":{port}" if port else "")
    query = "&".join(_redact_pair(pair) for pair in parts.query.split("&")) if parts.query else ""
    if netloc == parts.netloc and query == parts.query:
        return url  # nothing to hide: as given (urlunsplit would turn sqlite:///x into sqlite:/x)
    return urlunsplit(parts._replace(netloc=netloc, query=query))


_USERINFO = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/?#@:]*):[^\s/?#@]*@")


def redact_urls_in(text: str) -> str:
    """``text`` (a library's error message) with the password of every URL in it hidden."""
    return _USERINFO.sub(lambda m: f"{m.group(1)}:{REDACTED}@", text)


def _redact_hosts(parts: SplitResult) -> str:
    """:func:`redact_url` for a netloc with several ``host:port`` (each must parse as one)."""
    userinfo, at, hosts = parts.netloc.rpartition("@")
    for host in hosts.split(","):
        urlsplit(f"//{host}").port  # raises ValueError for a host that is not host[:port]
    user, colon, _ = userinfo.partition(":")
    netloc = f"{user}{':' + REDACTED if colon else ''}{at}{hosts}"
    query = "&".join(_redact_pair(pair) for pair in parts.query.split("&")) if parts.query else ""
    return urlunsplit(parts._replace(netloc=netloc, query=query))


def _redact_pair(pair: str) -> str:
    name, sep, value = pair.partition("=")
    if sep and value and is_secret_name(unquote(name)):
        return f"{name}={REDACTED}"
    return pair
