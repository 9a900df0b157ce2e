"""A worker's failure alerts: :class:`~eventbus.events.JobFailedAlert` for the first job of a class
that fails for good within ``alert_cooldown`` seconds, sent to ``configure(alerts=...)``.

Watched only when alerts are configured (:func:`eventbus.monitoring.monitor.default_observers`).
A successful job costs one comparison; a failure costs a tuple on a queue: the cooldown check
(a key in the connection's state store, shared by every worker: the first one to take it sends,
:func:`eventbus.monitoring.alerts.send_alerts`) and the send happen in a thread of this
observer's own, so a slow mail server or webhook never holds up a job, nor the heartbeat. A
class alerted from this process is not asked about again until its cooldown has passed, so a
storm of failures is one round trip per class and cooldown, not one per job. The event is also
emitted on the worker's event bus when it was sent (or tried), for the app's own listeners.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from eventbus import runtime
from eventbus.event_bus import bus
from eventbus.events import JobFailedAlert
from eventbus.monitoring.alerts import send_alerts
from eventbus.monitoring.observer import ObservedWorker, WorkerObserver
from eventbus.tracking.records import exception_line

if TYPE_CHECKING:
    from eventbus.queue.base import QueueJob
    from eventbus.worker.processing import Outcome

log = logging.getLogger(__name__)

#: How long a stopping worker waits for the alerts it still has to send.
STOP_GRACE_S = 5.0
#: Failures waiting to be alerted, at most (a storm beyond this is dropped: one per class is
#: all that is sent anyway).
MAX_WAITING = 1000


class FailureAlerts(WorkerObserver):
    """Alerts the first failure of each job class within the cooldown (see the module docstring)."""

    def __init__(self, connection: str, name_of: Callable[[QueueJob], str]) -> None:
        """``name_of(job)``: the name a job goes by (its display name once its payload was
        accepted: :func:`eventbus.monitoring.monitor.job_name`)."""
        self.connection = connection
        self.name_of = name_of
        self._waiting: queue.Queue[JobFailedAlert | None] = queue.Queue(MAX_WAITING)
        self._thread: threading.Thread | None = None
        #: Job class -> when (monotonic) this process may ask about it again.
        self._quiet_until: dict[str, float] = {}

    def job_finished(self, worker: ObservedWorker, job: QueueJob, outcome: Outcome, runtime_s: float,
                     exc: BaseException | None) -> None:
        if outcome._value_ != "FAIL" or not job.failed:
            return
        name = self.name_of(job)
        if self._quiet_until.get(name, 0.0) > time.monotonic():
            return
        summary = exception_line(exc) if exc is not None else ""
        alert = JobFailedAlert(self.connection, job.queue_name, name, job.uuid, summary)
        try:
            self._waiting.put_nowait(alert)
        except queue.Full:
            return
        if self._thread is None:
            self._thread = threading.Thread(target=self._send_all, daemon=True, name="eventbus-alerts")
            self._thread.start()

    def worker_stopped(self, worker: ObservedWorker, status: int) -> None:
        if self._thread is None:
            return
        self._waiting.put(None)
        self._thread.join(STOP_GRACE_S)

    def _send_all(self) -> None:
        while True:
            alert = self._waiting.get()
            if alert is None:
                return
            if self._quiet_until.get(alert.job, 0.0) > time.monotonic():
                continue  # another failure of its class went out (or was held) meanwhile
            try:
                self._send(alert)
            except Exception:  # a broken store or sender must never stop the worker
                log.exception("could not send the failure alert about %s", alert.job)

    def _send(self, alert: JobFailedAlert) -> None:
        deliveries = send_alerts([alert])
        cooldown = runtime.settings().alert_cooldown_s
        for delivery in deliveries:
            if delivery.outcome != "failed":
                self._quiet_until[alert.job] = time.monotonic() + cooldown
            if delivery.outcome != "held":
                bus.emit(alert)
            log.log(logging.WARNING if delivery.outcome == "failed" else logging.INFO, "%s", delivery.describe())
