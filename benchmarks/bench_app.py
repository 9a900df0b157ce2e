"""Jobs, listeners and notifications the benchmark workers run (``--app bench_app``)."""

from __future__ import annotations

import dataclasses
import os
import time

import redis

import eventbus
from notifications import MailMessage, Notifiable, Notification

RECORD = redis.Redis.from_url(os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/14"))

if os.environ.get("BENCH_DB_URL"):
    eventbus.configure(connections={"database": {"driver": "database", "url": os.environ["BENCH_DB_URL"]}})


@dataclasses.dataclass
class OrderShipped(eventbus.Event):
    """The event of ``emit.py``."""

    order_id: int


class Noop(eventbus.Job):
    def handle(self) -> None:
        pass


class Latency(eventbus.Job):
    """Records how long after it was pushed its handle started."""

    def __init__(self, sent_at: float) -> None:
        self.sent_at = sent_at

    def handle(self) -> None:
        RECORD.rpush("bench:latency", time.time() - self.sent_at)


@eventbus.serializable
@dataclasses.dataclass
class Customer(Notifiable):
    id: int
    email: str


class Receipt(Notification):
    queued = True

    def __init__(self, n: int) -> None:
        self.n = n

    def via(self, notifiable: Customer) -> list[str]:
        return ["mail"]

    def to_mail(self, notifiable: Customer) -> MailMessage:
        return MailMessage(subject=f"Receipt {self.n}").greeting("Hello").line("Thanks for your order.")
