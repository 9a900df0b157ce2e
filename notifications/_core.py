"""Everything notifications takes from the eventbus core, in one place.

The core's module layout moves (``jobs`` push helpers, the dispatcher, the settings, the
serializer's adapter lookup, the private event-loop helper); every other notifications module
imports these names from here, so following a rename is an edit to this file alone.
"""

from __future__ import annotations

from eventbus import ConfigurationError, Event, EventBusError, emit, emit_until, serializable
from eventbus._aio import resolve as run_awaitable
from eventbus.config import DEFAULT_SQLITE_URL, redact_url, settings
from eventbus.jobs import Destination, InteractsWithQueue, push_command
from eventbus.registry import dotted_name, register
from eventbus.serializer import _adapter_for as adapter_for
from eventbus.sql import engine_for, ensure_tables, guarded
from eventbus.transactions import defer_if_in_transaction

__all__ = ["DEFAULT_SQLITE_URL", "ConfigurationError", "Destination", "Event", "EventBusError",
           "InteractsWithQueue", "adapter_for", "defer_if_in_transaction", "dotted_name", "emit",
           "emit_until", "engine_for", "ensure_tables", "guarded", "push_command", "redact_url",
           "register", "run_awaitable", "serializable", "settings"]
