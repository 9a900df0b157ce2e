"""An app with one supervisor, ``load``: auto-balanced, 1 to 4 processes on the queue ``load``.

The connection comes from the environment as in :mod:`apps.jobs` (``EVENTBUS_CONNECTION``,
``TEST_DB_URL``); its workers run :class:`apps.naps.Nap`.
"""

from __future__ import annotations

import os

import eventbus
from apps.naps import Nap  # noqa: F401 - the job its workers run

CONNECTION = os.environ.get("EVENTBUS_CONNECTION", "redis")
SUPERVISOR = {"connection": CONNECTION, "queues": ["load"], "balance": "auto", "min_processes": 1,
              "max_processes": 4, "balance_cooldown": 1, "balance_max_shift": 1, "sleep": 0.2}

if os.environ.get("TEST_DB_URL"):
    CONNECTIONS = {"database": {"driver": "database", "url": os.environ["TEST_DB_URL"]}}
else:
    CONNECTIONS = {"redis": {"driver": "redis", "url": os.environ["EVENTBUS_REDIS_URL"], "block_for": 1}}

eventbus.configure(default=CONNECTION, connections=CONNECTIONS, supervisors={"load": SUPERVISOR})
