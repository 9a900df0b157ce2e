"""Fixtures of the framework tests: a real SMTP server (aiosmtpd)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from aiosmtpd.controller import Controller

from framework_helpers import Inbox, free_port


@pytest.fixture
def smtp() -> Iterator[tuple[Inbox, str]]:
    """A real SMTP server on a free port; yields the inbox and the ``smtp://`` URL to send to."""
    inbox = Inbox()
    port = free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    yield inbox, f"smtp://127.0.0.1:{port}"
    controller.stop()
