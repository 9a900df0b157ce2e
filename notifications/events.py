"""Events around each delivery, emitted through the eventbus bus.

``NotificationSending`` -> (a listener returning ``False`` cancels that channel) ->
``NotificationSent`` with the channel's response, or ``NotificationFailed`` with the exception.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from notifications._core import Event


@dataclasses.dataclass
class NotificationSending(Event):
    notifiable: Any
    notification: Any
    channel: str


@dataclasses.dataclass
class NotificationSent(Event):
    notifiable: Any
    notification: Any
    channel: str
    response: Any = None


@dataclasses.dataclass
class NotificationFailed(Event):
    notifiable: Any
    notification: Any
    channel: str
    exception: BaseException
