"""Alerts that reach a person: ``LongWaitDetected``, ``QueueBusy`` and ``JobFailedAlert`` sent
as a notification.

``eventbus monitor`` finds the events and checks the cooldown (:mod:`eventbus.monitoring.alerts`);
it hands each event that is due to :func:`send_alert`, which ``notifications`` registers with the
core's :func:`eventbus.runtime.on_alert` (and the ``eventbus.alerts`` entry point names, so an app
that never imports ``notifications`` still has its alerts sent). The core never imports this.

An alert goes now, not through the queue (the queue may be the very thing that is stuck), to
every route of ``configure(alerts={"mail": "ops@example.com", "slack": URL, ...})`` as an
on-demand notification. A channel whose failure is transient (a 5xx, a 429, a connection that
failed) is tried again up to :data:`TRIES` times in all, after Retry-After (at most
:data:`MAX_PAUSE_S`) or a short pause; a permanent refusal is not.
"""

from __future__ import annotations

import time
from typing import Any

from notifications._core import settings
from notifications.channels.slack import SlackMessage
from notifications.errors import DeliveryError, NotificationFailedError
from notifications.mail.message import MailMessage
from notifications.notification import AnonymousNotifiable, Notification

TRIES = 3
PAUSE_S = 1.0
MAX_PAUSE_S = 10.0


def _seconds(value: float) -> str:
    minutes, seconds = divmod(round(value), 60)
    return f"{minutes}m {seconds:02d}s" if minutes else f"{value:.1f}s"


class QueueAlert(Notification):
    """One alert about a queue, from a ``LongWaitDetected`` or ``QueueBusy`` event: a title, a
    sentence, and the facts as fields."""

    def __init__(self, title: str, summary: str, facts: dict[str, str]) -> None:
        self.title = title
        self.summary = summary
        self.facts = facts

    @classmethod
    def of(cls, event: Any) -> QueueAlert:
        """The alert for ``event`` (an object with ``connection_name`` and ``queue``, and either
        ``wait_s``/``limit_s``, ``size``/``threshold`` or ``job``/``uuid``/``exception``)."""
        where = f"{event.connection_name}:{event.queue}"
        facts = {"Queue": where}
        if hasattr(event, "uuid"):
            facts.update({"Job": event.job, "UUID": event.uuid, "Exception": event.exception or "-"})
            return cls(f"{event.job} failed",
                       f"A {event.job} job failed on {where}: {event.exception or 'no exception'}. "
                       f"Further failures of this class are not alerted for a while (alert_cooldown); "
                       f"`eventbus failed` lists them.", facts)
        if hasattr(event, "wait_s"):
            facts.update({"Waited": _seconds(event.wait_s), "Limit": _seconds(event.limit_s)})
            return cls(f"Long wait on {where}",
                       f"The oldest ready job on {where} has waited {_seconds(event.wait_s)}, "
                       f"longer than its limit of {_seconds(event.limit_s)}.", facts)
        facts.update({"Jobs": f"{event.size:,}", "Limit": f"{event.threshold:,}"})
        return cls(f"Queue {where} is busy",
                   f"{where} holds {event.size:,} jobs (limit {event.threshold:,}).", facts)

    def via(self, notifiable: Any) -> list[Any]:
        return list(notifiable.routes)

    def to_mail(self, notifiable: Any) -> MailMessage:
        message = MailMessage().subject(f"[eventbus] {self.title}").error().line(self.summary)
        return message.lines([f"{label}: {value}" for label, value in self.facts.items()])

    def to_slack(self, notifiable: Any) -> SlackMessage:
        return SlackMessage(self.summary, header=self.title, fields=self.facts)

    def to_sms(self, notifiable: Any) -> str:
        return self.summary

    def to_log(self, notifiable: Any) -> str:
        return self.summary


def recipients() -> AnonymousNotifiable:
    """The routes of ``configure(alerts=...)`` as one on-demand recipient."""
    to = AnonymousNotifiable()
    for channel, route in settings().alerts.items():
        to.route(channel, route)
    return to


def send_alert(event: Any) -> None:
    """Send ``event`` to every alert route now; retry the channels whose failure is transient.
    Raises :class:`NotificationFailedError` naming the channels that still failed."""
    to, alert = recipients(), QueueAlert.of(event)
    channels: list[str] | None = None
    for attempt in range(1, TRIES + 1):
        try:
            to.notify_now(alert, channels)
            return
        except NotificationFailedError as exc:
            again = {name: e for name, e in exc.failures.items() if _transient(e)}
            if not again or attempt == TRIES:
                raise
            channels = list(again)
            time.sleep(_pause(again.values(), attempt))


def _transient(exc: BaseException) -> bool:
    return isinstance(exc, DeliveryError) and not exc.permanent


def _pause(failures: Any, attempt: int) -> float:
    waits = [e.retry_after for e in failures if getattr(e, "retry_after", None) is not None]
    return min(max(waits, default=PAUSE_S * attempt), MAX_PAUSE_S)
