"""Django for the tests that need it: imported by those test modules only, it sets Django up with
``django_test_settings`` (once: a process has one Django configuration), so the rest of the
suite runs without Django. pytest-django then provides the test database."""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile

import django

from eventbus import bus
from helpers import ROOT

SHOP = ROOT / "examples" / "django_shop"
HERE = os.path.dirname(os.path.abspath(__file__))

if "EVENTBUS_TEST_DJANGO_DIR" not in os.environ:
    directory = tempfile.mkdtemp(prefix="eventbus-django-")
    os.environ["EVENTBUS_TEST_DJANGO_DIR"] = directory
    atexit.register(shutil.rmtree, directory, True)
if str(SHOP) not in sys.path:
    sys.path.insert(0, str(SHOP))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "django_test_settings")
django.setup()

#: The listeners the apps registered when Django started; every test starts with none
#: (tests/conftest.py), so a test that needs them listens again with :func:`listen_again`.
APP_LISTENERS = [(reg.key, reg.listener) for regs in bus.listening().values() for reg in regs]


def listen_again() -> None:
    for key, listener in APP_LISTENERS:
        bus.forget(key, listener)
        bus.listen(key, listener)
