"""Framework integrations, each behind its extra and imported only when you use it.

- :mod:`eventbus.contrib.sqlalchemy` — mapped instances travel by primary key, loaded in the
  worker through a session factory; ``after_commit`` follows a session's transaction; the
  eventbus tables for Alembic (SQLAlchemy is a core dependency: no extra).
- :mod:`eventbus.contrib.flask` — ``EventBus(app)``: settings from ``app.config``, every job in
  an app context, Flask-SQLAlchemy models by key, ``flask eventbus ...`` (``eventbus[flask]``).
- :mod:`eventbus.contrib.starlette` (also as :mod:`eventbus.contrib.fastapi`) — a lifespan,
  ``adispatch``/``aemit`` that never block the loop, a dependency, the dashboard mount
  (``eventbus[fastapi]``).
- :mod:`eventbus.contrib.django` — an app: ``settings.EVENTBUS``, ``manage.py eventbus ...``,
  ``after_commit`` on ``transaction.on_commit``, models by key (``eventbus[django]``).
- :mod:`eventbus.contrib.aio` — ``adispatch``/``aemit`` for any asyncio app.

Importing ``eventbus`` never imports this package.
"""
