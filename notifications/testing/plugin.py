"""pytest fixtures ``notifications`` and ``mail`` (registered through the ``pytest11`` entry point)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from notifications.testing.fake import NotificationFake, fake_notifications
from notifications.testing.mail import MailFake, fake_mail


@pytest.fixture
def notifications() -> Iterator[NotificationFake]:
    """Every notification is recorded instead of delivered."""
    with fake_notifications() as fake:
        yield fake


@pytest.fixture
def mail() -> Iterator[MailFake]:
    """Every mail message is built and checked, then recorded instead of sent."""
    with fake_mail() as fake:
        yield fake
