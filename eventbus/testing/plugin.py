"""pytest fixtures ``events`` and ``queue`` (registered through the ``pytest11`` entry point)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from eventbus.testing.fakes import EventFake, QueueFake, fake_events, fake_queue


@pytest.fixture
def events() -> Iterator[EventFake]:
    """Every event is recorded instead of reaching its listeners."""
    with fake_events() as fake:
        yield fake


@pytest.fixture
def queue() -> Iterator[QueueFake]:
    """Every push is recorded instead of reaching a queue driver."""
    with fake_queue() as fake:
        yield fake
