"""What the app does when Django is ready: settings, models by key, on_commit, connections."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

from django.apps import apps
from django.conf import settings
from django.core.signals import setting_changed
from django.db import connections, models, transaction

from eventbus import runtime
from eventbus.config import Settings
from eventbus.errors import ConfigurationError, SerializationError
from eventbus.serializer import ModelAdapter, register_model_resolver
from eventbus.transactions import Push, hold_pushes_with

SETTING = "EVENTBUS"

_installed = False


def configure_kwargs() -> dict[str, Any]:
    """The ``eventbus.configure`` arguments of ``settings.EVENTBUS``, the installed apps trusted."""
    given = getattr(settings, SETTING, None) or {}
    if not isinstance(given, Mapping):
        raise ConfigurationError(f"settings.{SETTING} must be a dict of eventbus.configure() "
                                 f"arguments, not {type(given).__name__}")
    kwargs = dict(given)
    packages = {config.name.split(".")[0] for config in apps.get_app_configs()}
    kwargs["trusted"] = [*(kwargs.get("trusted") or ()), *sorted(packages)]
    return kwargs


def configure_from_settings() -> Settings:
    """Apply ``settings.EVENTBUS`` (called when Django is ready and when the setting changes)."""
    return runtime.configure(**configure_kwargs())


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
