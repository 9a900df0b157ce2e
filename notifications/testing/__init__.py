"""Fakes for your own tests: record notifications, or the mail they send, instead of delivering.

::

    with fake_notifications() as sent:
        ship(order)
    sent.assert_sent_to(user, OrderShippedNotification, lambda n, channels: "mail" in channels)

    with fake_mail() as mail:
        ship(order)
    mail.assert_sent(MailMessage, to="ada@example.com")

Also the pytest fixtures ``notifications`` and ``mail``.
"""

from notifications.testing.fake import NotificationFake, SentNotification, fake_notifications
from notifications.testing.mail import MailFake, SentMail, fake_mail

__all__ = ["MailFake", "NotificationFake", "SentMail", "SentNotification", "fake_mail",
           "fake_notifications"]
