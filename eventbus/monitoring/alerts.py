"""Long waits and alerts that reach a person: the decisions ``eventbus monitor`` makes (and
``eventbus supervise``, through :mod:`eventbus.monitoring.wait_watch`).

A queue's wait limit is the tighter of ``configure(waits={"connection:queue": seconds})`` and
``eventbus monitor --max-wait``. A queue whose oldest ready job has waited longer than its limit
gets a :class:`~eventbus.events.LongWaitDetected`. Its driver tells the wait
(:meth:`~eventbus.queue.base.Queue.oldest_ready_age_s`); a driver that cannot
(not :class:`~eventbus.queue.capabilities.ReportsWait`) never has a long wait.

When ``configure(alerts=...)`` names where alerts go, each ``LongWaitDetected`` and
``QueueBusy`` is handed to the alert hooks (:func:`eventbus.runtime.alert_hooks`: the
``notifications`` add-on sends it by mail, Slack...), at most once per queue and kind every
``alert_cooldown`` seconds. The cooldown is a key in the connection's state store taken with
``add`` (set only when absent, with the cooldown as TTL), so several monitors share it: the
first one to take it sends, the others hold back. A send that fails gives the key back, so the
next run tries again. The core never imports an add-on: it only calls the hooks.

A worker that fails a job for good sends a :class:`~eventbus.events.JobFailedAlert` the same
way (:mod:`eventbus.monitoring.failure_alerts`), at most once per job class and connection
every ``alert_cooldown`` seconds: the first failure of a class in that window.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Iterable
from typing import Union

from eventbus import runtime
from eventbus.config import Settings
from eventbus.errors import ConfigurationError
from eventbus.events import JobFailedAlert, LongWaitDetected, QueueBusy
from eventbus.monitoring import keys
from eventbus.queue.capabilities import ReportsWait, supports

log = logging.getLogger(__name__)

AlertEvent = Union[LongWaitDetected, QueueBusy, JobFailedAlert]

#: The name each alert goes by in its cooldown key and in what ``monitor`` prints.
KINDS: dict[type, str] = {LongWaitDetected: "long-wait", QueueBusy: "busy", JobFailedAlert: "job-failed"}


def wait_limit(settings: Settings, connection: str, queue: str, max_wait_s: float | None) -> float | None:
    """The seconds the oldest ready job of ``connection:queue`` may wait (None: no limit)."""
    limits = [limit for limit in (settings.waits.get(f"{connection}:{queue}"), max_wait_s)
              if limit is not None]
    return min(limits) if limits else None


@dataclasses.dataclass(frozen=True)
class Waits:
    """What :func:`long_waits` found: the events, every queue's wait (where a limit applies and
    the driver tells it), and the connections whose driver cannot tell."""

    events: list[LongWaitDetected]
    waited_s: dict[tuple[str, str], float | None]
    limits_s: dict[tuple[str, str], float]
    untold: list[str]


def long_waits(queues: Iterable[tuple[str, str]], max_wait_s: float | None = None) -> Waits:
    """A :class:`LongWaitDetected` for each of ``queues`` (``(connection, queue)`` pairs) whose
    oldest ready job waited past its limit."""
    current = runtime.settings()
    found = Waits([], {}, {}, [])
    for connection, name in queues:
        limit = wait_limit(current, connection, name, max_wait_s)
        if limit is None:
            continue
        queue = runtime.connection(connection)
        found.limits_s[(connection, name)] = limit
        if not supports(queue, ReportsWait):
            if connection not in found.untold:
                found.untold.append(connection)
            continue
        waited = queue.oldest_ready_age_s(name)
        found.waited_s[(connection, name)] = waited
        if waited is not None and waited > limit:
            found.events.append(LongWaitDetected(connection, name, waited, limit))
    return found


def kind_of(event: AlertEvent) -> str:
    return KINDS[type(event)]


@dataclasses.dataclass(frozen=True)
class Delivery:
    """What became of one alert: ``sent``, ``held`` (cooling down) or ``failed`` (``error`` says why)."""

    event: AlertEvent
    outcome: str
    error: str = ""

    def describe(self) -> str:
        where = subject_of(self.event)
        if self.outcome == "sent":
            return f"{kind_of(self.event)} alert about {where} sent"
        if self.outcome == "held":
            return (f"{kind_of(self.event)} alert about {where} not sent: one went out less than "
                    f"{runtime.settings().alert_cooldown_s:g} s ago (alert_cooldown)")
        return f"{kind_of(self.event)} alert about {where} could not be sent: {self.error}"


def send_alerts(events: Iterable[AlertEvent]) -> list[Delivery]:
    """Hand each event to the alert hooks, unless an alert of its kind about its queue went out
    within the cooldown; nothing at all when no alerts are configured."""
    current = runtime.settings()
    chosen = list(events)
    if not current.alerts or not chosen:
        return []
    hooks = runtime.alert_hooks()
    if not hooks:
        raise ConfigurationError("'alerts' are configured but nothing can send them: the "
                                 "notifications add-on is not installed")
    return [deliver(event, hooks, current.alert_cooldown_s) for event in chosen]


def subject_of(event: AlertEvent) -> str:
    """What an alert is about: its queue, or for a failure its job class."""
    if isinstance(event, JobFailedAlert):
        return f"{event.job} on {event.connection_name}"
    return f"{event.connection_name}:{event.queue}"


def cooldown_key(event: AlertEvent) -> str:
    """One cooldown per queue and kind; for failures, one per job class and connection."""
    if isinstance(event, JobFailedAlert):
        return keys.alerted_job(event.connection_name, event.job)
    return keys.alerted(event.connection_name, event.queue, kind_of(event))


def deliver(event: AlertEvent, hooks: list[runtime.AlertHook], cooldown_s: float) -> Delivery:
    key = cooldown_key(event)
    store = runtime.state(event.connection_name)
    if cooldown_s > 0 and not store.add(key, str(time.time()), ttl_s=cooldown_s):
        return Delivery(event, "held")
    try:
        for hook in hooks:
            hook(event)
    except Exception as exc:  # any sender's failure: the next run tries again
        log.warning("sending the %s alert about %s failed: %s", kind_of(event), subject_of(event), exc)
        if cooldown_s > 0:
            store.delete(key)
        return Delivery(event, "failed", f"{type(exc).__name__}: {exc}")
    return Delivery(event, "sent")
