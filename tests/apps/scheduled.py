"""A scheduled app for the scheduler tests: one job every minute, on the connection under test
(TOOLBOX_DRIVER/TOOLBOX_URL, as apps.toolbox configures it), recording when it was due."""

from __future__ import annotations

import time

import eventbus
from apps.toolbox import record


class Tick(eventbus.Job):
    def handle(self) -> None:
        record("tick", self.job_uuid, int(time.time()))


eventbus.schedule.clear()
eventbus.schedule.job(Tick()).every_minute().on_one_server().name("tick")
