"""What the HTTP channels share (the SMS providers, the Slack webhook): reading a refusal.

A refusal becomes a :class:`DeliveryError` that tells the queued job what to do: 429 and 503 carry
``retry_after`` from the Retry-After header (seconds or an HTTP date); any other 4xx except 408
(request timeout) is ``permanent``, since the same request will be refused again; the rest (5xx,
a connection that failed) is transient and retried with the job's backoff.
"""

from __future__ import annotations

import email.utils
import time

import httpx

from notifications.errors import DeliveryError

WAIT_STATUSES = (429, 503)
TRANSIENT_CLIENT_STATUSES = (408, 429)


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """Seconds from a Retry-After header (``120`` or an HTTP date); None when absent or unreadable."""
    if not value or not value.strip():
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def refusal(message: str, response: httpx.Response, code: str | None = None) -> DeliveryError:
    """The DeliveryError for a provider's error answer, with ``retry_after`` and ``permanent`` set."""
    status = response.status_code
    wait = retry_after_seconds(response.headers.get("Retry-After")) if status in WAIT_STATUSES else None
    permanent = 400 <= status < 500 and status not in TRANSIENT_CLIENT_STATUSES
    return DeliveryError(message, status=status, code=code, retry_after=wait, permanent=permanent)
