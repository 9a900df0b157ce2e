""":mod:`apps.supervised` with a wait limit of 1 s on its queue ``load`` and long waits sent to
the Slack webhook ``SLACK_WEBHOOK`` names (cooldown 600 s). Each ``LongWaitDetected`` emitted in
the process (the ``eventbus supervise`` master, a ``monitor``) is appended to the file ``HEARD``."""

from __future__ import annotations

import os

import eventbus
from apps.supervised import CONNECTION, CONNECTIONS, SUPERVISOR

eventbus.configure(default=CONNECTION, connections=CONNECTIONS, supervisors={"load": SUPERVISOR},
                   waits={f"{CONNECTION}:load": 1}, alerts={"slack": os.environ["SLACK_WEBHOOK"]},
                   alert_cooldown=600)


def heard(event: eventbus.LongWaitDetected) -> None:
    with open(os.environ["HEARD"], "a") as file:
        file.write(f"{os.getpid()} {event.connection_name}:{event.queue} {event.limit_s}\n")


eventbus.listen(eventbus.LongWaitDetected, heard)
