"""Mail messages, rendering and transports."""

from notifications.mail.message import Attachment, MailContent, MailMessage
from notifications.mail.render import render, set_template_dirs
from notifications.mail.smtp import SmtpSettings, SmtpTransport
from notifications.mail.transports import ArrayTransport, LogTransport, MailTransport, transport_from_url

__all__ = ["ArrayTransport", "Attachment", "LogTransport", "MailContent", "MailMessage", "MailTransport",
           "SmtpSettings", "SmtpTransport", "render", "set_template_dirs", "transport_from_url"]
