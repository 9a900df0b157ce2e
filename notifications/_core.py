"""Everything notifications takes from the eventbus core, in one place.

Every other notifications module imports these names from here, so the whole dependency on the
core is visible at a glance (and ``tests/test_architecture.py`` checks it stays on the core's
documented modules).
"""

from __future__ import annotations

from eventbus import (
    ConfigurationError,
    Event,
    EventBusError,
    RateLimited,
    adispatch,
    emit,
    emit_until,
    serializable,
)
from eventbus.aio import PerLoop
from eventbus.aio import resolve as run_awaitable
from eventbus.config import DEFAULT_SQLITE_URL
from eventbus.dispatching import Destination, push_command
from eventbus.dispatching.transactions import defer_if_in_transaction
from eventbus.jobs import InteractsWithQueue, option_names, refuse_misspelt_options
from eventbus.registry import dotted_name, register
from eventbus.runtime import app_database, on_alert, on_configure, on_migrate, on_reset, settings
from eventbus.serializer import adapter_for
from eventbus.sql import engine_for, ensure_tables, guarded
from eventbus.urls import redact_url

__all__ = ["DEFAULT_SQLITE_URL", "ConfigurationError", "Destination", "Event", "EventBusError",
           "InteractsWithQueue", "PerLoop", "RateLimited", "adapter_for", "adispatch", "app_database", "defer_if_in_transaction",
           "dotted_name", "emit", "emit_until", "engine_for", "ensure_tables", "guarded", "on_alert",
           "on_configure", "on_migrate", "on_reset", "option_names", "push_command", "redact_url", "refuse_misspelt_options", "register",
           "run_awaitable", "serializable", "settings"]
