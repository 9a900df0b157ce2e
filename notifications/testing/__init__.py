"""``fake_notifications()``: record notifications instead of delivering them.

::

    with fake_notifications() as sent:
        ship(order)
    sent.assert_sent_to(user, OrderShippedNotification, lambda n, channels: "mail" in channels)

Also the pytest fixture ``notifications``.
"""

from notifications.testing.fake import NotificationFake, SentNotification, fake_notifications

__all__ = ["NotificationFake", "SentNotification", "fake_notifications"]
