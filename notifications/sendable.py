"""What sending and delivering need of a notification: the :class:`Sendable` protocol.

:class:`~notifications.notification.Notification` is one. The sender and the delivery read a
notification through this protocol rather than importing its class, because the class reaches
them (``AnonymousNotifiable.notify`` sends): the arrow goes one way only.
"""

from __future__ import annotations

from typing import Any, Protocol, Self


class Sendable(Protocol):
    """The channels a notification goes on, where and when its queued deliveries go, and a copy
    of it for each notifiable."""

    @property
    def connection(self) -> str | None: ...
    @property
    def queue(self) -> str | None: ...
    @property
    def delay(self) -> Any: ...
    @property
    def after_commit(self) -> bool: ...

    def via(self, notifiable: Any) -> list[Any]: ...
    def should_send(self, notifiable: Any, channel: str) -> bool: ...
    def via_queues(self) -> dict[str, str]: ...
    def with_delay(self, notifiable: Any) -> dict[str, Any]: ...
    def copy_for_delivery(self) -> Self: ...
