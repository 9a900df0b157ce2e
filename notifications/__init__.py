"""Notifications for eventbus: mail, SMS, database and log channels, now or through the queue."""

from notifications import channels
from notifications.channels import register_channel
from notifications.channels.database import (
    DatabaseNotification,
    mark_as_read,
    notifications_for,
    unread_notifications_for,
)
from notifications.channels.sms import SmsMessage
from notifications.errors import DeliveryError, NotificationFailedError, UnknownChannelError
from notifications.events import NotificationFailed, NotificationSending, NotificationSent
from notifications.mail.message import MailMessage
from notifications.notifiable import Notifiable
from notifications.notification import AnonymousNotifiable, Notification
from notifications.queued import SendQueuedNotifications
from notifications.sender import notify, notify_now

__all__ = [
    "AnonymousNotifiable",
    "DatabaseNotification",
    "DeliveryError",
    "MailMessage",
    "Notifiable",
    "Notification",
    "NotificationFailed",
    "NotificationFailedError",
    "NotificationSending",
    "NotificationSent",
    "SendQueuedNotifications",
    "SmsMessage",
    "UnknownChannelError",
    "channels",
    "mark_as_read",
    "notifications_for",
    "notify",
    "notify_now",
    "register_channel",
    "unread_notifications_for",
]
