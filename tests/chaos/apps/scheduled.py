"""The ``--app`` module of the scheduler scenarios: the chaos connection (as ``chaos.apps.app``)
and one schedule chosen by ``CHAOS_SCHEDULE``:

- ``overlap-a`` / ``overlap-b``: ``Work(1)`` / ``Work(2)`` every minute, ``without_overlapping()``
  with its default expiry, on one server;
- ``minutely``: ``Work(3)`` every minute, on one server.

``CHAOS_SCHEDULE_KILL_AT`` plays a scheduler that dies at a chosen point: ``claim`` (the lock
taken, the instant not yet claimed) or ``push`` (the instant claimed, the job not yet pushed).
The process SIGKILLs itself there once, when the file ``CHAOS_SCHEDULE_KILL_FILE`` exists (it
removes the file first, so its restarted self runs normally). The points are patched by name,
in whichever scheduler module has them.
"""

from __future__ import annotations

import os
import signal
from typing import Any

import eventbus
from chaos.apps import app  # noqa: F401 - configures the connection under test
from chaos.apps.jobs import Work

CASE = os.environ.get("CHAOS_SCHEDULE", "")
schedule = eventbus.schedule
schedule.clear()
if CASE == "overlap-a":
    schedule.job(Work(1, seconds=0.1)).every_minute().without_overlapping().on_one_server().name("overlap-a")
elif CASE == "overlap-b":
    schedule.job(Work(2, seconds=0.1)).every_minute().without_overlapping().on_one_server().name("overlap-b")
elif CASE == "minutely":
    schedule.job(Work(3, seconds=0.01)).every_minute().on_one_server().name("minutely")


def _die_first(original: Any) -> Any:
    def dying(*args: Any, **kwargs: Any) -> Any:
        flag = os.environ.get("CHAOS_SCHEDULE_KILL_FILE", "")
        try:
            os.unlink(flag)
        except OSError:
            return original(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGKILL)
        raise AssertionError("unreachable")

    return dying


_POINTS = {"claim": ["eventbus.scheduling.firing:claim", "eventbus.scheduling.runner:push_once"],
           "push": ["eventbus.scheduling.firing:push_payload", "eventbus.scheduling.runner:push_payload"]}

for where in _POINTS.get(os.environ.get("CHAOS_SCHEDULE_KILL_AT", ""), []):
    module_name, _, name = where.partition(":")
    try:
        module = __import__(module_name, fromlist=[name])
    except ImportError:
        continue
    if hasattr(module, name):
        setattr(module, name, _die_first(getattr(module, name)))
