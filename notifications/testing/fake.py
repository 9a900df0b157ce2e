"""A real implementation of the sender seam that records instead of delivering."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

from notifications import sender as sender_module
from notifications.channels.registry import channel_name
from notifications.notification import AnonymousNotifiable


@dataclasses.dataclass(frozen=True)
class SentNotification:
    notifiable: Any
    notification: Any
    channels: list[str]
    queued: bool


Predicate = Callable[[Any, list[str]], bool] | None


class NotificationFake:
    def __init__(self) -> None:
        self.sent: list[SentNotification] = []

    def __call__(self, notifiables: list[Any], notification: Any, channels: list[str] | None,
                 queued: bool) -> bool:
        for notifiable in notifiables:
            names = [channel_name(c) for c in (channels or notification.via(notifiable))]
            self.sent.append(SentNotification(notifiable, notification, names, queued))
        return True

    def sent_to(self, notifiable: Any, notification_type: type, predicate: Predicate = None) -> list[Any]:
        return [s.notification for s in self.sent
                if s.notifiable is notifiable and isinstance(s.notification, notification_type)
                and (predicate is None or predicate(s.notification, s.channels))]

    def _seen(self) -> str:
        return "\n  ".join(f"{type(s.notification).__qualname__} to {s.notifiable!r} via "
                           f"{', '.join(s.channels)}" for s in self.sent) or "(nothing)"

    def assert_sent_to(self, notifiable: Any, notification_type: type, predicate: Predicate = None,
                       times: int | None = None) -> None:
        found = len(self.sent_to(notifiable, notification_type, predicate))
        if (times is None and not found) or (times is not None and found != times):
            expected = f"{times} time(s)" if times is not None else "at least once"
            raise AssertionError(f"expected {notification_type.__qualname__} sent to {notifiable!r} "
                                 f"{expected}, got {found}. Sent:\n  {self._seen()}")

    def assert_not_sent_to(self, notifiable: Any, notification_type: type, predicate: Predicate = None) -> None:
        if self.sent_to(notifiable, notification_type, predicate):
            raise AssertionError(f"{notification_type.__qualname__} was sent to {notifiable!r}")

    def assert_sent_on_demand(self, notification_type: type, predicate: Callable[[Any, dict[str, Any]], bool] | None = None) -> None:
        for s in self.sent:
            if isinstance(s.notifiable, AnonymousNotifiable) and isinstance(s.notification, notification_type):
                if predicate is None or predicate(s.notification, s.notifiable.routes):
                    return
        raise AssertionError(f"expected {notification_type.__qualname__} sent on demand. Sent:\n  {self._seen()}")

    def assert_nothing_sent(self) -> None:
        if self.sent:
            raise AssertionError(f"expected no notifications. Sent:\n  {self._seen()}")

    def assert_count(self, count: int) -> None:
        if len(self.sent) != count:
            raise AssertionError(f"expected {count} notification(s), got {len(self.sent)}:\n  {self._seen()}")


@contextlib.contextmanager
def fake_notifications() -> Iterator[NotificationFake]:
    fake = NotificationFake()
    sender_module.send_interceptors.append(fake)
    try:
        yield fake
    finally:
        sender_module.send_interceptors.remove(fake)
