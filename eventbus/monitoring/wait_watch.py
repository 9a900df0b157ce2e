"""Long waits watched from a process that runs for good: ``eventbus supervise`` looks at its
supervisors' queues the way ``eventbus monitor`` looks at every queue.

The decisions are :mod:`eventbus.monitoring.alerts`' own: a queue's limit comes from
``configure(waits=...)`` (:func:`~eventbus.monitoring.alerts.wait_limit`), a wait past it is a
:class:`~eventbus.events.LongWaitDetected` (:func:`~eventbus.monitoring.alerts.long_waits`), and
with ``configure(alerts=...)`` it is sent under the cooldown key that ``eventbus monitor`` takes
too (:func:`~eventbus.monitoring.alerts.send_alerts`), so a master and a cron ``monitor`` never
tell a person twice.

A process that runs for good looks every few seconds, where cron runs ``monitor`` once a
minute: so that its own listeners are not called at every look either, a queue it alerted about
(or found alerted about by another process) is not looked at again for ``alert_cooldown``
seconds, and one whose alert could not be sent is tried again after a minute, as cron would.
Only queues with a limit are looked at: without ``waits`` a look costs nothing.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable

from eventbus import runtime
from eventbus.event_bus import bus
from eventbus.monitoring.alerts import Delivery, long_waits, send_alerts, wait_limit

log = logging.getLogger(__name__)

#: The longest time between two looks at a queue (a tighter limit is looked at as often as it is).
MAX_INTERVAL_S = 10.0
#: The shortest: a master checks its commands once a second.
MIN_INTERVAL_S = 1.0
#: How long after a failed send the queue is looked at again (the next cron ``monitor`` run).
RETRY_S = 60.0


class WaitWatch:
    """The long waits of some queues, looked at when :meth:`due`."""

    def __init__(self, queues: Iterable[tuple[str, str]]) -> None:
        """``queues``: ``(connection, queue)`` pairs; those without a wait limit are left out."""
        settings = runtime.settings()
        limits = {pair: wait_limit(settings, pair[0], pair[1], None) for pair in dict.fromkeys(queues)}
        self.limits_s = {pair: limit for pair, limit in limits.items() if limit is not None}
        self.interval_s = max(MIN_INTERVAL_S, min([MAX_INTERVAL_S, *self.limits_s.values()]))
        self._looked_at = -math.inf
        #: (connection, queue) -> when (monotonic) it is looked at again.
        self._quiet_until: dict[tuple[str, str], float] = {}

    @property
    def connections(self) -> list[str]:
        return sorted({connection for connection, _ in self.limits_s})

    def due(self, now: float) -> bool:
        """Whether it is time to look (``now``: monotonic); True at most once per interval."""
        if not self.limits_s or now - self._looked_at < self.interval_s:
            return False
        self._looked_at = now
        return True

    def check(self, connection: str, now: float) -> list[Delivery]:
        """Look at ``connection``'s queues that are not quiet: emit and send a
        ``LongWaitDetected`` for each that waits too long. EventBusError when its server or
        state store cannot be reached."""
        looked = [pair for pair in self.limits_s
                  if pair[0] == connection and self._quiet_until.get(pair, 0.0) <= now]
        if not looked:
            return []
        events = long_waits(looked).events
        cooldown = runtime.settings().alert_cooldown_s
        deliveries = {(d.event.connection_name, d.event.queue): d for d in send_alerts(events)}
        for event in events:
            where = (event.connection_name, event.queue)
            delivery = deliveries.get(where)
            outcome = delivery.outcome if delivery is not None else "emitted"
            self._quiet_until[where] = now + (RETRY_S if outcome == "failed" else cooldown)
            if outcome != "held":
                log.warning("long wait on %s:%s: the oldest ready job has waited %.1f s (limit %g s)",
                            event.connection_name, event.queue, event.wait_s, event.limit_s)
                bus.emit(event)
            if delivery is not None:
                log.log(logging.WARNING if outcome == "failed" else logging.INFO, "%s", delivery.describe())
        return list(deliveries.values())

