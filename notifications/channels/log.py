"""The ``log`` channel: one log line per notification (``to_log`` gives the text)."""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("notifications.log")


class LogChannel:
    """Logs each notification on the ``notifications.log`` logger and keeps the lines."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def send(self, notifiable: Any, notification: Any) -> str:
        render = getattr(notification, "to_log", None)
        text = str(render(notifiable)) if callable(render) else type(notification).__name__
        line = f"{type(notification).__name__} to {type(notifiable).__name__}: {text}"
        self.lines.append(line)
        log.info("%s", line)
        return line
