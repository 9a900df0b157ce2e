"""State keys made from user data: a unique job's id, an overlap key, a throttle key.

Such a value may be any text an app's users can influence (an email address, a URL, a file
name), of any length and with any character: a state key may not (at most 255 characters, no
NUL), so the value goes into the key as a digest, as rate-limit keys always did. A name the
developer chose (a job class, a limiter) stays readable while it is short.
"""

from __future__ import annotations

import hashlib

#: A readable name longer than this goes into keys as its digest too.
MAX_NAME_LENGTH = 120


def digest(value: object) -> str:
    """128 bits of SHA-256 of ``value``'s text, in hex: any text, always 32 safe characters."""
    return hashlib.sha256(str(value).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def readable(name: str) -> str:
    """``name`` itself when it is short and has no NUL, else ``#`` and its digest."""
    if 0 < len(name) <= MAX_NAME_LENGTH and "\x00" not in name:
        return name
    return "#" + digest(name)


def user_key(kind: str, name: str, value: object) -> str:
    """``kind:name:digest(value)``: a state key for ``value`` (user data) under ``name``."""
    return f"{kind}:{readable(name)}:{digest(value)}"
