"""The Django app config: ``ready()`` wires eventbus into Django and applies ``settings.EVENTBUS``."""

from __future__ import annotations

from django.apps import AppConfig

from eventbus.contrib.django import wiring


class EventBusConfig(AppConfig):
    name = "eventbus.contrib.django"
    label = "eventbus"
    verbose_name = "eventbus"

    def ready(self) -> None:
        wiring.install()
        wiring.configure_from_settings()
