"""SQLAlchemy ORM: mapped instances travel by primary key, ``after_commit`` follows a session.

::

    from sqlalchemy.orm import sessionmaker
    from eventbus.contrib.sqlalchemy import use_sessions

    Session = sessionmaker(engine)
    use_sessions(Session)          # once, in the module the worker imports with --app

From then on:

- An instance of any mapped class in a job, event or notification is stored as
  ``{class, primary key}`` (no ``register_model`` call) and loaded fresh when the job runs,
  through a session made by the factory for that job (:func:`job_session`) and closed when the
  job ends, so lazy loads work inside the job and no connection outlives it. A row that is gone
  follows the missing-model rules (the job fails, or is deleted with
  ``delete_when_missing_models = True``). An instance still pending in a session is flushed
  first, as autoflush would (unless the session's autoflush is off).
- Pushes marked ``after_commit`` made while a session of ``Session`` has a transaction open wait
  for it: they go out when it commits and are dropped when it rolls back (see
  :func:`follow_transactions`).
- The engine ``Session`` is bound to is the app's database: database notifications are stored
  there (:func:`eventbus.runtime.use_app_database`).

Alembic: :func:`sql_metadata` and :func:`skip_eventbus_tables` (in :mod:`._sqlalchemy_tables`).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from eventbus import runtime
from eventbus.contrib._sqlalchemy_tables import skip_eventbus_tables, sql_metadata
from eventbus.contrib._sqlalchemy_transactions import follow_transactions
from eventbus.errors import ConfigurationError, EventBusError, SerializationError
from eventbus.serializer import ModelAdapter, register_model_resolver

__all__ = ["follow_transactions", "job_session", "session_factory", "skip_eventbus_tables",
           "sql_metadata", "use_sessions"]

SessionFactory = Callable[[], orm.Session]
ModelTest = Callable[[type], bool]


@dataclasses.dataclass(frozen=True, eq=False)
class _Source:
    """Where the models that ``models`` accepts (every model, when None) are loaded."""

    factory: SessionFactory
    close_after_jobs: bool
    models: ModelTest | None


_sources: list[_Source] = []  # those for some models first, then the one for every model
_installed = False  # module-level like SQLAlchemy's own event registry: installed once


def use_sessions(factory: SessionFactory, *, models: ModelTest | None = None,
                 close_after_jobs: bool = True, after_commit: bool = True) -> None:
    """Load mapped instances in the worker through sessions made by ``factory``.

    ``factory`` is a ``sessionmaker``, a ``scoped_session`` or any callable returning a
    ``Session``. It serves every mapped class, or only those for which ``models(cls)`` is true
    (such factories are asked first; Flask-SQLAlchemy's models get ``db.session`` this way).
    With ``close_after_jobs`` (the default) the session a job used is closed (a
    ``scoped_session`` is removed) when the job ends; turn it off when the framework does that
    itself (Flask-SQLAlchemy at the end of each app context). With ``after_commit`` (the default)
    the factory's sessions hold ``after_commit`` pushes until they commit (a plain callable
    cannot be listened to: call :func:`follow_transactions` on its sessionmaker yourself).
    Calling it again for the same ``models`` replaces the factory.
    """
    global _installed
    source = _Source(factory, close_after_jobs, models)
    _sources[:] = [s for s in _sources if s.models is not models]
    _sources.insert(len(_sources) if models is None else 0, source)
    if not _installed:
        register_model_resolver(adapter_for_mapped_class)
        runtime.around_jobs(_sessions_of_one_job)
        _installed = True
    if after_commit and isinstance(factory, (orm.sessionmaker, orm.scoped_session, type)):
        follow_transactions(factory)
    engine = bound_engine(factory)
    if models is None and engine is not None:
        runtime.use_app_database(lambda: engine)  # the app's data (notifications) goes there too


def bound_engine(factory: SessionFactory) -> sa.Engine | None:
    """The engine a ``sessionmaker`` (or the one behind a ``scoped_session``) is bound to."""
    maker = factory.session_factory if isinstance(factory, orm.scoped_session) else factory
    bind = maker.kw.get("bind") if isinstance(maker, orm.sessionmaker) else None
    return bind if isinstance(bind, sa.Engine) else None


def session_factory() -> SessionFactory | None:
    """The factory given to :func:`use_sessions` for every model, if any."""
    return next((s.factory for s in _sources if s.models is None), None)


def _source_for(cls: type | None) -> _Source:
    for source in _sources:
        if source.models is None or (cls is not None and source.models(cls)):
            return source
    raise ConfigurationError("no SQLAlchemy session factory: call "
                             "eventbus.contrib.sqlalchemy.use_sessions(your_sessionmaker) in the "
                             "module the worker imports (--app)")


# -- one session per job --------------------------------------------------------------------------

# A ContextVar: the session belongs to the request or job running in this context.
_current: contextvars.ContextVar[dict[_Source, orm.Session] | None] = contextvars.ContextVar(
    "eventbus_sqlalchemy_job", default=None)


@contextlib.contextmanager
def _sessions_of_one_job() -> Iterator[None]:
    """The job scope: the sessions a job opens (by loading models, or through
    :func:`job_session`) are closed when the job ends."""
    opened: dict[_Source, orm.Session] = {}
    token = _current.set(opened)
    try:
        yield
    finally:
        _current.reset(token)
        for source, session in opened.items():
            if source.close_after_jobs:
                _close(source, session)


def _close(source: _Source, session: orm.Session) -> None:
    if isinstance(source.factory, orm.scoped_session):
        source.factory.remove()
    else:
        session.close()


def _job_session_of(source: _Source) -> orm.Session:
    opened = _current.get()
    if opened is None:
        raise EventBusError("job_session() is only available while a queued job runs")
    if source not in opened:
        opened[source] = source.factory()
    return opened[source]


def job_session() -> orm.Session:
    """The session of the running job (the one its models were loaded in), made on first use.

    Write through it inside a job and commit it yourself; it is closed when the job ends.
    Outside a job there is none: that is an :class:`~eventbus.EventBusError`.
    """
    if _current.get() is None:
        raise EventBusError("job_session() is only available while a queued job runs")
    return _job_session_of(_source_for(None))


# -- models by key ---------------------------------------------------------------------------------

def adapter_for_mapped_class(cls: type) -> ModelAdapter | None:
    """The model resolver: every mapped class travels by primary key."""
    mapper: Any = sa.inspect(cls, raiseerr=False)
    if not isinstance(mapper, orm.Mapper):
        return None
    return ModelAdapter(key=primary_key_of, load=load_by_key)


def primary_key_of(obj: Any) -> Any:
    """The identity of ``obj``: one value, or a list for a composite primary key."""
    state = sa.inspect(obj)
    identity = state.identity
    if identity is None and state.pending and state.session is not None and state.session.autoflush:
        state.session.flush()
        identity = state.identity
    if identity is None:
        name = type(obj).__qualname__
        raise SerializationError(f"cannot queue a {name} that has no primary key yet: add it to a "
                                 "session and flush (or commit) before dispatching")
    return identity[0] if len(identity) == 1 else list(identity)


def load_by_key(cls: type, key: Any) -> Any:
    """``session.get(cls, key)`` in the job's session (None when the row is gone).

    Outside a job (nothing to close it later) a session is opened for the load and closed at
    once: the instance comes back detached, its loaded columns readable.
    """
    ident = tuple(key) if isinstance(key, list) else key
    source = _source_for(cls)
    if _current.get() is not None:
        return _job_session_of(source).get(cls, ident)
    with source.factory() as session:
        return session.get(cls, ident)
