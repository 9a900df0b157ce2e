"""The one JSON document every queued thing travels as (Laravel's payload shape).

Drivers store and return the payload text byte for byte; only the worker parses it. ``attempts``
is the count at push time; the live count is kept by the driver beside the body.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import time
import uuid as uuid_module
from typing import Any

from eventbus.errors import DeserializationError

HANDLER_NAME = "eventbus.CallQueuedHandler@call"
FORMAT_VERSION = 1


@dataclasses.dataclass(frozen=True)
class Payload:
    """A queued job as data. ``command`` is tagged JSON made by :mod:`eventbus.serializer`."""

    display_name: str
    command_name: str
    command: dict[str, Any]
    uuid: str = dataclasses.field(default_factory=lambda: str(uuid_module.uuid4()))
    job: str = HANDLER_NAME
    max_tries: int | None = None
    max_exceptions: int | None = None
    backoff: list[float] | None = None
    timeout: float | None = None
    retry_until: float | None = None
    fail_on_timeout: bool = False
    attempts: int = 0
    pushed_at: float = dataclasses.field(default_factory=time.time)
    chained: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    signature: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"commandName": self.command_name, "command": self.command}
        if self.chained:
            data["chained"] = self.chained
        doc: dict[str, Any] = {
            "uuid": self.uuid,
            "displayName": self.display_name,
            "job": self.job,
            "maxTries": self.max_tries,
            "maxExceptions": self.max_exceptions,
            "backoff": self.backoff,
            "timeout": self.timeout,
            "retryUntil": self.retry_until,
            "failOnTimeout": self.fail_on_timeout,
            "data": data,
            "attempts": self.attempts,
            "pushedAt": self.pushed_at,
            "version": FORMAT_VERSION,
        }
        if self.signature is not None:
            doc["signature"] = self.signature
        return doc

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> Payload:
        try:
            data = doc["data"]
            return cls(
                uuid=str(doc["uuid"]),
                display_name=str(doc.get("displayName") or data["commandName"]),
                job=str(doc["job"]),
                command_name=str(data["commandName"]),
                command=data["command"],
                chained=list(data.get("chained") or []),
                max_tries=doc.get("maxTries"),
                max_exceptions=doc.get("maxExceptions"),
                backoff=doc.get("backoff"),
                timeout=doc.get("timeout"),
                retry_until=doc.get("retryUntil"),
                fail_on_timeout=bool(doc.get("failOnTimeout", False)),
                attempts=int(doc.get("attempts") or 0),
                pushed_at=float(doc.get("pushedAt") or 0.0),
                signature=doc.get("signature"),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise DeserializationError(f"payload is missing or has a bad field: {exc}") from exc

    @classmethod
    def from_json(cls, text: str | bytes) -> Payload:
        try:
            doc = json.loads(text)
        except (ValueError, UnicodeDecodeError) as exc:
            raise DeserializationError(f"payload is not JSON: {exc}") from exc
        if not isinstance(doc, dict):
            raise DeserializationError("payload is not a JSON object")
        return cls.from_dict(doc)

    def signed(self, key: str) -> Payload:
        return dataclasses.replace(self, signature=sign(self.to_dict(), key))


def _signing_text(doc: dict[str, Any]) -> bytes:
    unsigned = {k: v for k, v in doc.items() if k not in ("signature", "attempts")}
    return json.dumps(unsigned, sort_keys=True, separators=(",", ":")).encode()


def sign(doc: dict[str, Any], key: str) -> str:
    """HMAC-SHA256 over the canonical JSON of the payload (without signature and attempts)."""
    return hmac.new(key.encode(), _signing_text(doc), hashlib.sha256).hexdigest()


def verify(doc: dict[str, Any], key: str) -> bool:
    given = doc.get("signature")
    return isinstance(given, str) and hmac.compare_digest(given, sign(doc, key))


def uuid_of(raw: str) -> str | None:
    """The uuid a raw payload claims, or None when it is not a JSON object with one."""
    try:
        doc = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    value = doc.get("uuid") if isinstance(doc, dict) else None
    return value if isinstance(value, str) and value else None


def attempts_of(raw: str) -> int:
    """The attempt count a raw payload was pushed with (0 when it has none, or is not JSON)."""
    try:
        doc = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return 0
    value = doc.get("attempts", 0) if isinstance(doc, dict) else 0
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def with_attempts(raw: str, attempts: int) -> str:
    """The same payload with ``attempts`` replaced (for retry); other bytes are re-encoded."""
    doc = json.loads(raw)
    doc["attempts"] = attempts
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
