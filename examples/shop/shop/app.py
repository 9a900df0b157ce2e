"""The shop's wiring: the worker imports this module (``eventbus work --app shop.app``).

With nothing configured it uses the embedded defaults: the SQLite queue ``eventbus.sqlite3`` in
the working directory, mail written as .eml files to ``storage/mail``, SMS written to the log.
Set ``EVENTBUS_CONNECTION=redis`` and ``EVENTBUS_MAIL_URL=smtp://...`` for the real thing.
"""

from __future__ import annotations

import dataclasses
import logging
import pathlib

import eventbus
from eventbus import Event, emit
from listeners import listener
from notifications import MailMessage, Notifiable, Notification, SmsMessage
from notifications.mail import set_template_dirs

log = logging.getLogger("shop")
set_template_dirs(pathlib.Path(__file__).parent / "templates")

# A tiny "database" of customers, so the queued jobs carry only the customer's id.
CUSTOMERS: dict[int, Customer] = {}


@dataclasses.dataclass
class Customer(Notifiable):
    id: int
    name: str
    email: str
    phone: str


eventbus.register_model(Customer, key=lambda c: c.id, load=lambda cls, key: CUSTOMERS.get(key))
CUSTOMERS[1] = Customer(1, "Ada Lovelace", "ada@example.com", "+15550100")


@dataclasses.dataclass
class OrderShipped(Event):
    order_id: int
    customer_id: int
    items: list[str]
    tracking_url: str


class OrderShippedNotification(Notification):
    queued = True
    tries = 3
    backoff = [5, 30]

    def __init__(self, order: OrderShipped) -> None:
        self.order = order

    def via(self, notifiable: Customer) -> list[str]:
        return ["mail", "sms", "database"]

    def to_mail(self, notifiable: Customer) -> MailMessage:
        return MailMessage(subject=f"Order #{self.order.order_id} has shipped",
                           template="order_shipped.html",
                           context={"customer": notifiable, "order": self.order})

    def to_sms(self, notifiable: Customer) -> SmsMessage:
        return SmsMessage(f"Your order #{self.order.order_id} is on its way: {self.order.tracking_url}")

    def to_database(self, notifiable: Customer) -> dict[str, object]:
        return {"order_id": self.order.order_id, "tracking_url": self.order.tracking_url}


@listener
def audit(event: OrderShipped) -> None:
    """Runs inside emit(), before it returns."""
    log.info("audit: order %s shipped to customer %s", event.order_id, event.customer_id)


@listener(queued=True, queue="default", tries=3, backoff=[5, 30])
class NotifyCustomer:
    """Runs in the worker: queues one notification job per channel."""

    def handle(self, event: OrderShipped) -> None:
        CUSTOMERS[event.customer_id].notify(OrderShippedNotification(event))

    def failed(self, event: OrderShipped, exc: BaseException) -> None:
        log.error("could not notify about order %s: %s", event.order_id, exc)


def ship(order_id: int, customer_id: int = 1) -> list[object]:
    """What the web app does when an order leaves the warehouse."""
    return emit(OrderShipped(order_id=order_id, customer_id=customer_id,
                             items=["Analytical Engine manual", "Punch cards (x100)"],
                             tracking_url=f"https://shop.example/track/{order_id}"))
