"""Settings of the shop project (an example: not for production).

The shop's own database is SQLite, ``db.sqlite3`` beside ``manage.py`` (or ``SHOP_DATABASE``).
eventbus reads ``EVENTBUS`` (the arguments of ``eventbus.configure``) and fills what it lacks
from the ``EVENTBUS_*`` environment: with nothing set, the queue is ``eventbus.sqlite3`` in the
working directory and mail is written to ``storage/mail``.
"""

import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent

SECRET_KEY = "django-insecure-shop-example-only"
DEBUG = True
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]

INSTALLED_APPS = [
    "eventbus.contrib.django",
    "django_shop.shop",
]
MIDDLEWARE: list[str] = []
ROOT_URLCONF = "django_shop.urls"

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("SHOP_DATABASE") or BASE_DIR / "db.sqlite3",
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True
TIME_ZONE = "UTC"

EVENTBUS: dict[str, object] = {}
