"""The channel table and the registry of channel instances.

A new built-in channel is one module in this package plus one line in :data:`BUILTIN`. Built-in
channels are made on first use from the current configuration; :func:`reset` forgets them so the
next use reads the configuration again. Channels you register yourself are kept until you
:func:`unregister` them.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from notifications._core import dotted_name
from notifications.channels.base import Channel
from notifications.channels.database import DatabaseChannel
from notifications.channels.log import LogChannel
from notifications.channels.mail import MailChannel
from notifications.channels.slack import SlackChannel
from notifications.channels.sms import SmsChannel
from notifications.errors import UnknownChannelError

log = logging.getLogger(__name__)

ChannelFactory = Callable[[], Channel]

BUILTIN: dict[str, ChannelFactory] = {
    "database": DatabaseChannel,
    "log": LogChannel,
    "mail": MailChannel,
    "slack": SlackChannel,
    "sms": SmsChannel,
}

_lock = threading.Lock()
_registered: dict[str, Channel] = {}  # by register(): kept across reset()
_built: dict[str, Channel] = {}  # made from BUILTIN or a via() class: forgotten by reset()


def register(name: str, channel: Channel) -> None:
    """Register ``channel`` (an object with ``send``) under ``name``, replacing any before."""
    if not callable(getattr(channel, "send", None)):
        raise TypeError(f"channel {name!r} needs a send(notifiable, notification) method")
    with _lock:
        _registered[name] = channel


register_channel = register


def unregister(name: str) -> None:
    """Forget a channel registered under ``name`` (a built-in of that name comes back)."""
    with _lock:
        _registered.pop(name, None)


def channel_name(channel: str | type[Channel]) -> str:
    """The name a ``via()`` entry stands for; a channel class is named by its dotted path."""
    if isinstance(channel, str):
        return channel
    if isinstance(channel, type):
        name = dotted_name(channel)
        with _lock:
            if name not in _registered and name not in _built:
                _built[name] = channel()
        return name
    raise TypeError(f"via() entries are channel names or channel classes, not {channel!r}")


def resolve_channel(name: str) -> Channel:
    """The channel registered as ``name``; a built-in one is made on first use."""
    with _lock:
        found = _registered.get(name) or _built.get(name)
        if found is not None:
            return found
        factory = BUILTIN.get(name)
        if factory is None:
            known = ", ".join(sorted({*_registered, *BUILTIN}))
            raise UnknownChannelError(f"unknown notification channel {name!r} (registered: {known}); "
                                      "register it with notifications.register_channel(name, channel)")
        made = _built[name] = factory()
        return made


def _known(name: str) -> object:
    """The channel instance, or the class that would make it, without making one."""
    with _lock:
        return _registered.get(name) or _built.get(name) or BUILTIN.get(name)


def needs_route(name: str) -> bool:
    """Does the channel skip a notifiable that has no route for it?"""
    return bool(getattr(_known(name), "routed", False))


def accepts_on_demand(name: str) -> bool:
    """Can the channel deliver to an on-demand recipient (``Notification.route(...)``)?"""
    return bool(getattr(_known(name), "on_demand", True))


def registered_channels() -> list[str]:
    """Every channel name that resolves: built in or registered."""
    with _lock:
        return sorted({*_registered, *_built, *BUILTIN})


def reset() -> None:
    """Forget the channels made from the configuration, closing their pooled connections; the
    next use builds them again from the current configuration."""
    with _lock:
        forgotten = list(_built.values())
        _built.clear()
    for channel in forgotten:
        close = getattr(channel, "close", None)
        if callable(close):
            try:
                close()
            except Exception:
                log.warning("closing channel %r failed", channel, exc_info=True)
