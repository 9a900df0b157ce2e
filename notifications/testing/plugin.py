"""pytest fixture ``notifications`` (registered through the ``pytest11`` entry point)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from notifications.testing.fake import NotificationFake, fake_notifications


@pytest.fixture
def notifications() -> Iterator[NotificationFake]:
    """Every notification is recorded instead of delivered."""
    with fake_notifications() as fake:
        yield fake
