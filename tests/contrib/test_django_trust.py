"""Django models by key are the project's own models and the ones registered, like every other
type: not every installed app's (``django.contrib.auth``'s ``User`` key 1 is the superuser, its
password hash included), and a payload never makes the worker import a ``django.*`` module.

Run in a Django process of its own, with ``django.contrib.auth`` installed beside the test app
(the other Django tests share one configuration without it)."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

from helpers import ROOT, TESTS

pytest.importorskip("django")

SCRIPT = r"""
import json, sys
import django
from django.conf import settings

settings.configure(
    INSTALLED_APPS=["django.contrib.contenttypes", "django.contrib.auth", "eventbus.contrib.django",
                    "django_test_app"],
    DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": "site.sqlite3"}},
    EVENTBUS={"connections": {"database": {"driver": "database", "url": "sqlite:///eventbus.sqlite3"}}},
    USE_TZ=True, DEFAULT_AUTO_FIELD="django.db.models.AutoField")
django.setup()
from django.core.management import call_command
call_command("migrate", run_syncdb=True, verbosity=0)
from django.contrib.auth.models import User
from django_test_app.models import Gadget
import eventbus
from eventbus import registry, serializer
from eventbus.errors import UnsafePayloadError

root = User.objects.create_superuser("root", "root@example.com", "pw")
lamp = Gadget.objects.create(name="lamp")
found = {"trusted": sorted(registry.trusted_prefixes())}

def load(cls, key):
    try:
        return serializer.decode({"__t__": "model", "cls": cls, "key": key})
    except UnsafePayloadError as exc:
        return f"refused: {exc}"

found["user"] = str(load("django.contrib.auth.models.User", root.pk))
found["own"] = load("django_test_app.models.Gadget", lamp.pk).name
try:
    registry.resolve("django.contrib.admindocs.views.BaseAdminDocsView")
except UnsafePayloadError:
    pass
found["imported"] = [m for m in ("django.contrib.admindocs", "django.contrib.admindocs.views") if m in sys.modules]
eventbus.serializable(User)  # registered: now it may travel
found["registered"] = load("django.contrib.auth.models.User", root.pk).username
print(json.dumps(found))
"""


def test_only_the_projects_own_models_and_registered_ones_load_by_key(tmp_path: pathlib.Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVENTBUS_", "DJANGO_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(TESTS / "contrib"), str(TESTS), str(ROOT)])
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "django_test_app" in found["trusted"]
    assert not {"django", "eventbus"} & set(found["trusted"]), found["trusted"]
    assert found["user"].startswith("refused: refusing to load 'django.contrib.auth.models.User'")
    assert found["own"] == "lamp"
    assert found["imported"] == []
    assert found["registered"] == "root"
