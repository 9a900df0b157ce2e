"""Django (``pip install 'eventbus[django]'``): add ``"eventbus.contrib.django"`` to INSTALLED_APPS.

::

    # settings.py
    INSTALLED_APPS = [..., "eventbus.contrib.django"]
    EVENTBUS = {"default": "redis", "mail": "smtp://mail.example.com:587?starttls=1"}

- ``EVENTBUS`` holds the arguments of ``eventbus.configure`` (what it lacks comes from the
  environment); it is applied when Django starts and again whenever it changes
  (``override_settings``, pytest-django's ``settings`` fixture). The packages of the installed
  apps are trusted, so the worker may load their classes.
- ``manage.py eventbus work|failed|retry|size|migrate|...`` runs the ``eventbus`` commands with
  Django set up (``manage.py eventbus --help`` lists them).
- Model instances travel by primary key with no ``register_model`` call and are loaded with
  the model's default manager when the job runs (a row it no longer finds follows the
  missing-model rules).
- Pushes marked ``after_commit`` made inside ``transaction.atomic()`` go out through
  ``transaction.on_commit``: when the outermost block commits, never after a rollback.
- Around every job the worker closes database connections that are broken or older than
  ``CONN_MAX_AGE``, as Django does around a request.
- ``manage.py migrate`` (this app's migration) and ``manage.py eventbus migrate`` create the
  eventbus tables where ``EVENTBUS`` puts them.
- Tests: :mod:`eventbus.contrib.django.testing`.
"""
