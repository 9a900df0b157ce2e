"""Testing a Django app that queues: with Django's test runner or with pytest-django.

- Run queued jobs inline, in the test: ``@run_jobs_inline()`` on a test or a ``TestCase``
  (it is ``override_settings`` with ``EVENTBUS["default"] = "sync"``), or pytest-django's
  ``settings`` fixture, or the ``eventbus_inline`` fixture below.
- Record pushes instead: :class:`FakeQueueMixin` gives a ``TestCase`` ``self.queue``
  (:func:`eventbus.testing.fake_queue`); under pytest the ``queue`` and ``events`` fixtures of
  eventbus do the same.
- ``after_commit`` pushes wait for ``transaction.on_commit``, which a ``TestCase`` never reaches
  (each test is rolled back): wrap the code in ``self.captureOnCommitCallbacks(execute=True)``,
  or use pytest-django's ``django_capture_on_commit_callbacks`` fixture.

Under pytest, load the fixtures with ``pytest_plugins = ["eventbus.contrib.django.testing"]`` in
the root ``conftest.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from django.test import override_settings

from eventbus.testing import fake_queue
from eventbus.testing.fakes import QueueFake

__all__ = ["FakeQueueMixin", "eventbus_inline", "inline_settings", "run_jobs_inline"]


def inline_settings() -> dict[str, Any]:
    """``settings.EVENTBUS`` with the ``sync`` connection as the default."""
    return {**(getattr(settings, "EVENTBUS", None) or {}), "default": "sync"}


def run_jobs_inline() -> override_settings:
    """``override_settings`` that runs every queued job at once, in the test's process."""
    return override_settings(EVENTBUS=inline_settings())


class FakeQueueMixin:
    """For ``TestCase`` classes: every push is recorded in ``self.queue`` instead of queued."""

    queue: QueueFake

    def setUp(self) -> None:
        super().setUp()  # type: ignore[misc]
        self.queue = self.enterContext(fake_queue())  # type: ignore[attr-defined]


@pytest.fixture
def eventbus_inline(settings: Any) -> Iterator[None]:
    """Queued jobs run at once, in the test (pytest-django's ``settings`` fixture underneath)."""
    settings.EVENTBUS = inline_settings()
    yield
