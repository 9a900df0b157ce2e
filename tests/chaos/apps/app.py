"""The ``--app`` module of every chaos worker: configures the connection under test from
``CHAOS_*`` variables (see :class:`chaos.target.Target`) and loads the ledger jobs.

``CHAOS_CLOCK_SKEW`` (seconds) shifts this process's ``time.time`` to play a host whose clock is
off; the ledger uses ``time.monotonic`` and is not affected.
"""

from __future__ import annotations

import os
import sys
import time

_skew = float(os.environ.get("CHAOS_CLOCK_SKEW") or 0)
if _skew:
    _real_time = time.time

    def _skewed_time() -> float:
        return _real_time() + _skew

    time.time = _skewed_time

if os.environ.get("CHAOS_SWITCH_INTERVAL"):
    sys.setswitchinterval(float(os.environ["CHAOS_SWITCH_INTERVAL"]))

from chaos.apps import batch_faults, batch_jobs, jobs  # noqa: E402,F401 - registers the job classes
from chaos.target import Target  # noqa: E402

Target.from_env().configure()
batch_faults.install()  # CHAOS_BATCH_FAULT: the batch scenarios' crash points
