"""Encrypted commands (Laravel's ShouldBeEncrypted): ``encrypted = True`` on a job.

The command's state is sealed with Fernet (AES-128-CBC + HMAC-SHA256, from the ``cryptography``
package: ``pip install 'eventbus[crypto]'``) under a key derived from ``EVENTBUS_KEY``, so the
queue server and the failed job store never see it in clear text. The rest of the payload
(display name, options) stays readable for tools like ``eventbus failed``.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Sequence
from typing import Any

from eventbus.errors import ConfigurationError, DeserializationError, MissingDependencyError

MARKER = "__encrypted__"


def _fernet(key: str | None) -> Any:
    if not key:
        raise ConfigurationError("encrypted jobs need a key: set EVENTBUS_KEY or configure(key=...)")
    try:
        from cryptography.fernet import Fernet
    except ImportError as exc:
        raise MissingDependencyError("encrypted jobs need the cryptography package: "
                                     "pip install 'eventbus[crypto]'") from exc
    return Fernet(base64.urlsafe_b64encode(hashlib.sha256(key.encode()).digest()))


def seal(command: dict[str, Any], key: str | None) -> dict[str, Any]:
    """The encoded command, encrypted: ``{"__encrypted__": "<token>"}``."""
    token = _fernet(key).encrypt(json.dumps(command, separators=(",", ":")).encode())
    return {MARKER: token.decode("ascii")}


def is_sealed(command: Any) -> bool:
    return isinstance(command, dict) and len(command) == 1 and MARKER in command


def unseal(command: dict[str, Any], keys: str | Sequence[str] | None) -> dict[str, Any]:
    """The command ``seal`` encrypted, with the key (or any of the keys: the current one and
    those of earlier rotations) that sealed it."""
    from cryptography.fernet import InvalidToken, MultiFernet

    candidates = [keys] if isinstance(keys, str) or keys is None else list(keys)
    fernet = MultiFernet([_fernet(key) for key in candidates]) if len(candidates) > 1 else _fernet(
        candidates[0] if candidates else None)
    try:
        data: dict[str, Any] = json.loads(fernet.decrypt(command[MARKER].encode("ascii")))
    except (InvalidToken, ValueError, RecursionError) as exc:
        raise DeserializationError("cannot decrypt the job: wrong EVENTBUS_KEY (and no matching "
                                   "EVENTBUS_PREVIOUS_KEYS) or a damaged payload") from exc
    return data
