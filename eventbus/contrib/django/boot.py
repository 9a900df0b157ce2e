"""``--app`` of the workers that ``manage.py eventbus work --processes N`` (or ``--watch``) starts.

Inside ``manage.py`` Django is set up already and this does nothing; in a fresh
``python -m eventbus work`` process it sets Django up from ``DJANGO_SETTINGS_MODULE`` (inherited
from ``manage.py``), which applies ``settings.EVENTBUS``.
"""

from __future__ import annotations

import django
from django.apps import apps

if not apps.ready:
    django.setup()
