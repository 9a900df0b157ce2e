"""The story: an order ships -> audit (now) -> NotifyCustomer (queued) -> mail, SMS, database.

The event carries the ``Order`` itself: it travels as ``{class, primary key}`` and the worker
loads it again in a session of ``models.Session`` made for the job (closed when the job ends),
with no registration anywhere.
"""

from __future__ import annotations

import dataclasses
import logging
import pathlib

from eventbus import Event
from fastapi_shop.models import Customer, Order
from listeners import listener
from notifications import MailMessage, Notification, SmsMessage
from notifications.mail import set_template_dirs

log = logging.getLogger("fastapi_shop")
set_template_dirs(pathlib.Path(__file__).parent / "templates")


@dataclasses.dataclass
class OrderShipped(Event):
    order: Order


class OrderShippedNotification(Notification):
    queued = True
    tries = 3
    backoff = [5, 30]

    def __init__(self, order: Order) -> None:
        self.order = order

    def via(self, notifiable: Customer) -> list[str]:
        return ["mail", "sms", "database"]

    def to_mail(self, notifiable: Customer) -> MailMessage:
        return MailMessage(subject=f"Order #{self.order.id} has shipped", template="order_shipped.html",
                           context={"customer": notifiable, "order": self.order})

    def to_sms(self, notifiable: Customer) -> SmsMessage:
        return SmsMessage(f"Your order #{self.order.id} is on its way: {self.order.tracking_url}")

    def to_database(self, notifiable: Customer) -> dict[str, object]:
        return {"order_id": self.order.id, "tracking_url": self.order.tracking_url}


@listener
def audit(event: OrderShipped) -> None:
    """Runs inside aemit(), in the request."""
    log.info("audit: order %s shipped to customer %s", event.order.id, event.order.customer_id)


@listener(queued=True, tries=3, backoff=[5, 30])
class NotifyCustomer:
    """Runs in the worker: one notification job per channel."""

    def handle(self, event: OrderShipped) -> None:
        event.order.customer.notify(OrderShippedNotification(event.order))

    def failed(self, event: OrderShipped, exc: BaseException) -> None:
        log.error("could not notify about order %s: %s", event.order.id, exc)
