"""``SmsMessage``: the text of one SMS and, optionally, its sender."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass
class SmsMessage:
    """Text passes through unchanged (Unicode, long messages: the provider splits them)."""

    content: str
    sender: str | None = None
