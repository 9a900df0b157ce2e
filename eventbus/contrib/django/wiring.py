"""What the app does when Django is ready: settings, models by key, on_commit, connections."""

from __future__ import annotations

import contextlib
import os
import site
import sysconfig
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from django.apps import AppConfig, apps
from django.conf import settings
from django.core.signals import setting_changed
from django.db import connections, models, transaction

from eventbus import runtime
from eventbus.config import Settings
from eventbus.contrib.django.database import default_database_url
from eventbus.dispatching.transactions import Push, hold_pushes_with
from eventbus.errors import ConfigurationError, SerializationError
from eventbus.serializer import ModelAdapter, register_model_resolver

SETTING = "EVENTBUS"

_installed = False  # module-level: Django's signals are connected once per process


def configure_kwargs() -> dict[str, Any]:
    """The ``eventbus.configure`` arguments of ``settings.EVENTBUS``, the project's apps trusted."""
    given = getattr(settings, SETTING, None) or {}
    if not isinstance(given, Mapping):
        raise ConfigurationError(f"settings.{SETTING} must be a dict of eventbus.configure() "
                                 f"arguments, not {type(given).__name__}")
    kwargs = dict(given)
    kwargs["trusted"] = [*(kwargs.get("trusted") or ()), *own_packages(apps.get_app_configs())]
    return kwargs


#: Packages never trusted for lazy imports, whatever is installed: Django's own apps
#: (``django.contrib.auth``'s ``User`` is no payload's business) and eventbus itself.
NEVER_TRUSTED = frozenset({"django", "eventbus"})


def own_packages(configs: Iterable[AppConfig]) -> list[str]:
    """The top-level packages of the project's own apps: not Django's, not eventbus, and not
    installed from a package index (an app living in site-packages is a third party's).

    Payloads may name models of these apps (they travel by key); a model of any other app
    travels only once registered (``eventbus.serializable(User)``), like every other class.
    """
    installed = _installation_dirs()
    found = set()
    for config in configs:
        package = config.name.split(".")[0]
        if package in NEVER_TRUSTED:
            continue
        path = os.path.realpath(str(config.path))
        if any(path == d or path.startswith(d + os.sep) for d in installed):
            continue
        found.add(package)
    return sorted(found)


def _installation_dirs() -> list[str]:
    """Where installed distributions live (site-packages, dist-packages, the user's site)."""
    dirs = {sysconfig.get_paths()[key] for key in ("purelib", "platlib")}
    dirs.update(getattr(site, "getsitepackages", lambda: [])())
    if site.ENABLE_USER_SITE and site.USER_SITE:
        dirs.add(site.USER_SITE)
    return [os.path.realpath(d) for d in dirs if d]


def configure_from_settings() -> Settings:
    """Apply ``settings.EVENTBUS`` (called when Django is ready and when the setting changes);
    Django's ``default`` database is the app's (its database notifications go there)."""
    configured = runtime.configure(**configure_kwargs())
    runtime.use_app_database(default_database_url)
    return configured


def install() -> None:
    """Once per process: the model resolver, the on_commit holder, the job scope, the signal."""
    global _installed
    if _installed:
        return
    _installed = True
    register_model_resolver(adapter_for_model)
    hold_pushes_with(hold_until_on_commit)
    runtime.around_jobs(fresh_connections)
    setting_changed.connect(_reconfigure, dispatch_uid="eventbus.contrib.django")


def _reconfigure(*, setting: str, **kwargs: Any) -> None:
    if setting == SETTING:
        configure_from_settings()


# -- models by key ------------------------------------------------------------------------------

def adapter_for_model(cls: type) -> ModelAdapter | None:
    """The model resolver: every concrete Django model travels by primary key."""
    if not issubclass(cls, models.Model) or getattr(cls, "_meta").abstract:
        return None
    return ModelAdapter(key=primary_key_of, load=load_by_key)


def primary_key_of(obj: Any) -> Any:
    if obj.pk is None:
        raise SerializationError(f"cannot queue a {type(obj).__qualname__} that has no primary key "
                                 "yet: save it before dispatching")
    return obj.pk


def load_by_key(cls: Any, key: Any) -> Any:
    """The row through the model's default manager, or None when it finds none."""
    try:
        return cls._default_manager.get(pk=key)
    except cls.DoesNotExist:
        return None


# -- transactions and connections ---------------------------------------------------------------

def hold_until_on_commit(push: Push) -> bool:
    """Inside ``transaction.atomic()``: run ``push`` through ``transaction.on_commit``."""
    for connection in connections.all(initialized_only=True):
        if connection.in_atomic_block:
            transaction.on_commit(push, using=connection.alias)
            return True
    return False


@contextlib.contextmanager
def fresh_connections() -> Iterator[None]:
    """The job scope: drop broken or expired connections before and after each job, as Django
    does around a request. Not inside an atomic block: that is a job run inline (the ``sync``
    connection, a test), and closing would break the caller's transaction."""
    _close_old_connections()
    try:
        yield
    finally:
        _close_old_connections()


def _close_old_connections() -> None:
    opened = connections.all(initialized_only=True)
    if any(connection.in_atomic_block for connection in opened):
        return
    for connection in opened:
        connection.close_if_unusable_or_obsolete()
