"""Everything notifications takes from the eventbus core, in one place.

Every other notifications module imports these names from here, so the whole dependency on the
core is visible at a glance (and ``tests/test_architecture.py`` checks it stays on the core's
documented modules).
"""

from __future__ import annotations

from eventbus import ConfigurationError, Event, EventBusError, RateLimited, emit, emit_until, serializable
from eventbus.aio import PerLoop
from eventbus.aio import resolve as run_awaitable
from eventbus.config import DEFAULT_SQLITE_URL
from eventbus.dispatching import Destination, push_command
from eventbus.jobs import InteractsWithQueue
from eventbus.registry import dotted_name, register
from eventbus.runtime import on_configure, on_migrate, on_reset, settings
from eventbus.serializer import adapter_for
from eventbus.sql import engine_for, ensure_tables, guarded
from eventbus.transactions import defer_if_in_transaction
from eventbus.urls import redact_url

__all__ = ["DEFAULT_SQLITE_URL", "ConfigurationError", "Destination", "Event", "EventBusError",
           "InteractsWithQueue", "PerLoop", "RateLimited", "adapter_for", "defer_if_in_transaction",
           "dotted_name", "emit", "emit_until", "engine_for", "ensure_tables", "guarded", "on_configure",
           "on_migrate", "on_reset", "push_command", "redact_url", "register", "run_awaitable",
           "serializable", "settings"]
