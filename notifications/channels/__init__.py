"""Channels: ``mail``, ``sms``, ``slack``, ``database``, ``log`` built in; your own by name or class.

A channel is any object with ``send(notifiable, notification)`` (plain or ``async def``)::

    notifications.register_channel("teams", TeamsChannel())

``via()`` may also return a channel class; it is instantiated once and registered under its
dotted name.
"""

from notifications.channels.base import Channel
from notifications.channels.registry import (
    BUILTIN,
    accepts_on_demand,
    channel_name,
    needs_route,
    register,
    register_channel,
    registered_channels,
    reset,
    resolve_channel,
    unregister,
)

__all__ = ["BUILTIN", "Channel", "accepts_on_demand", "channel_name", "needs_route", "register",
           "register_channel", "registered_channels", "reset", "resolve_channel", "unregister"]
