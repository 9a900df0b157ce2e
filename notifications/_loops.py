"""Closing an async resource from sync code, on the event loop it belongs to.

``notifications.reset()`` forgets pooled clients that live on event loops; leaving them to the
garbage collector would close their sockets at an arbitrary moment, with warnings.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

log = logging.getLogger(__name__)


def close_on(loop: asyncio.AbstractEventLoop, closing: Coroutine[Any, Any, Any]) -> None:
    """Run ``closing`` on ``loop``: now when it is idle, soon when it is running, never when closed."""
    if loop.is_closed():
        closing.close()
    elif loop.is_running():
        loop.call_soon_threadsafe(loop.create_task, closing)
    else:
        try:
            loop.run_until_complete(closing)
        except Exception:  # a connection that fails while closing is closed enough
            log.debug("closing a pooled client failed", exc_info=True)
