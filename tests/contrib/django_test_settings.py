"""Django settings of the tests: the django_shop example's, plus a test app, with every file in
the directory ``EVENTBUS_TEST_DJANGO_DIR`` names (so a worker process finds the same databases)."""

import os
from pathlib import Path

from django_shop.settings import *  # noqa: F403

DIR = Path(os.environ["EVENTBUS_TEST_DJANGO_DIR"])
#: Under pytest-xdist, pytest-django names the test database ``NAME_gwN``; a worker process
#: started by a test inherits PYTEST_XDIST_WORKER and so opens that same file.
XDIST = f"_{os.environ['PYTEST_XDIST_WORKER']}" if os.environ.get("PYTEST_XDIST_WORKER") else ""

INSTALLED_APPS = [*INSTALLED_APPS, "django_test_app"]  # noqa: F405
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": str(DIR / "shop.sqlite3") + XDIST,
        # The tests' database is this very file, so a worker process started by a test reads it.
        "TEST": {"NAME": str(DIR / "shop.sqlite3")},
    }
}
EVENTBUS = {"connections": {"database": {"driver": "database", "url": f"sqlite:///{DIR / 'eventbus.sqlite3'}"}}}
