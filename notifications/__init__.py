"""Notifications for eventbus: mail, SMS, Slack, database and log channels, now or through the queue."""

from notifications import channels
from notifications.channels import Channel, register_channel
from notifications.channels.slack import SlackMessage
from notifications.errors import (
    DeliveryError,
    InvalidAddressError,
    NotificationFailedError,
    OnDemandRouteError,
    UnknownChannelError,
)
from notifications.events import NotificationFailed, NotificationSending, NotificationSent
from notifications.mail.message import MailMessage
from notifications.notifiable import Notifiable
from notifications.notification import AnonymousNotifiable, Notification
from notifications.queued import SendQueuedNotifications
from notifications.runtime import install, migrate, reset, validate_settings
from notifications.sender import anotify, notify, notify_now
from notifications.sms.message import SmsMessage
from notifications.store import DatabaseNotification, mark_as_read, notifications_for, unread_notifications_for

__all__ = [
    "AnonymousNotifiable",
    "Channel",
    "DatabaseNotification",
    "DeliveryError",
    "InvalidAddressError",
    "MailMessage",
    "Notifiable",
    "Notification",
    "NotificationFailed",
    "NotificationFailedError",
    "NotificationSending",
    "NotificationSent",
    "OnDemandRouteError",
    "SendQueuedNotifications",
    "SlackMessage",
    "SmsMessage",
    "UnknownChannelError",
    "anotify",
    "channels",
    "mark_as_read",
    "migrate",
    "notifications_for",
    "notify",
    "notify_now",
    "register_channel",
    "reset",
    "unread_notifications_for",
    "validate_settings",
]

install()  # the core's configure/reset/migrate now reach notifications
