"""Channel registry: ``mail``, ``sms``, ``database``, ``log`` built in; your own by name or class.

A channel is any object with ``send(notifiable, notification)`` (plain or ``async def``)::

    notifications.register_channel("slack", SlackChannel())

``via()`` may also return a channel class; it is instantiated once and registered under its
dotted name.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol

from eventbus import registry
from notifications.errors import UnknownChannelError


class Channel(Protocol):
    def send(self, notifiable: Any, notification: Any) -> Any: ...


_lock = threading.Lock()
_channels: dict[str, Any] = {}
_factories: dict[str, Callable[[], Any]] = {}


def _builtin_factories() -> dict[str, Callable[[], Any]]:
    from notifications.channels.database import DatabaseChannel
    from notifications.channels.log import LogChannel
    from notifications.channels.mail import MailChannel
    from notifications.channels.sms import SmsChannel

    return {"mail": MailChannel, "sms": SmsChannel, "database": DatabaseChannel, "log": LogChannel}


def register(name: str, channel: Any) -> None:
    """Register ``channel`` (an object with ``send``) under ``name``, replacing any before."""
    if not callable(getattr(channel, "send", None)):
        raise TypeError(f"channel {name!r} needs a send(notifiable, notification) method")
    with _lock:
        _channels[name] = channel


register_channel = register


def channel_name(channel: Any) -> str:
    """The name a ``via()`` entry stands for (a class is registered on first sight)."""
    if isinstance(channel, str):
        return channel
    if isinstance(channel, type):
        name = registry.dotted_name(channel)
        with _lock:
            if name not in _channels:
                _channels[name] = channel()
        return name
    raise TypeError(f"via() entries are channel names or channel classes, not {channel!r}")


def resolve_channel(name: str) -> Any:
    with _lock:
        found = _channels.get(name)
        if found is not None:
            return found
        if not _factories:
            _factories.update(_builtin_factories())
        factory = _factories.get(name)
        if factory is None:
            known = ", ".join(sorted({*_channels, *_factories}))
            raise UnknownChannelError(f"unknown notification channel {name!r} (registered: {known}); "
                                      "register it with notifications.register_channel(name, channel)")
        found = _channels[name] = factory()
        return found


def registered_channels() -> list[str]:
    with _lock:
        if not _factories:
            _factories.update(_builtin_factories())
        return sorted({*_channels, *_factories})


def reset() -> None:
    """Forget channel instances (their transports are rebuilt from the configuration)."""
    with _lock:
        _channels.clear()


__all__ = ["Channel", "channel_name", "register", "register_channel", "registered_channels",
           "reset", "resolve_channel"]
