"""The composition root: the one place that holds process state.

Settings, the queue object of each connection, the failed job store and the SQL engines are
built here on first use and dropped together by :func:`reset` (and, for connections and stores,
by a new :func:`configure`). Everything else receives its collaborators from here instead of
keeping caches of its own. Add-ons join in with hooks:

- :func:`on_configure` — validate or apply new settings (``notifications`` checks its mail and
  SMS URLs), from ``configure()`` or when the settings are first read from the environment; a
  hook registered later is called at once with the current settings.
- :func:`on_reset` — drop what was built from the old settings (cached mail transports).
- :func:`on_migrate` — create tables (``eventbus migrate``); returns lines to print.
- :func:`around_jobs` — a context manager every queued command runs inside, from decoding its
  payload to its end (a Flask app context, a per-job ORM session); see :func:`job_scope`.

Nothing here runs at import time: the environment is read by :func:`configure` or, without it,
by the first :func:`settings` call.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from eventbus import registry, sql
from eventbus.config import Settings, build_settings, refuse_unknown_settings
from eventbus.failed import FailedJobStore, store_for
from eventbus.queue.base import Queue
from eventbus.queue.drivers import driver_class
from eventbus.state.base import StateStore

ConfigureHook = Callable[[Settings], None]
ResetHook = Callable[[], None]
MigrateHook = Callable[[], Iterable[str]]
JobScope = Callable[[], contextlib.AbstractContextManager[Any]]

_lock = threading.RLock()
_settings: Settings | None = None
_queues: dict[str, Queue] = {}
_failed: dict[str, FailedJobStore] = {}
_states: dict[str, StateStore] = {}
_configure_hooks: list[ConfigureHook] = []
_reset_hooks: list[ResetHook] = []
_migrate_hooks: list[MigrateHook] = []
_job_scopes: list[JobScope] = []


# -- settings ---------------------------------------------------------------------------------

def configure(
    default: str | None = None,
    connections: Mapping[str, Mapping[str, Any]] | None = None,
    failed: str | None = None,
    mail: str | None = None,
    sms: str | None = None,
    trusted: Iterable[str] = (),
    key: str | None = None,
    mail_from: str | None = None,
    middleware: Iterable[Any] = (),
    **unknown: Any,
) -> Settings:
    """Configure the default bus. Unset values come from EVENTBUS_* variables, then defaults.

    ``connections`` merges with the built-in ``database``, ``redis``, ``sync`` and ``null``
    connections by name. ``trusted`` adds module prefixes whose classes payloads may name.
    ``middleware`` wraps every job the workers of this app run (outermost).
    Calling it again replaces the previous configuration and closes open connections; an
    unknown keyword is a :class:`~eventbus.ConfigurationError` naming it.
    """
    global _settings
    refuse_unknown_settings(unknown)
    new = build_settings(default=default, connections=connections, failed=failed, mail=mail,
                         sms=sms, key=key, mail_from=mail_from, middleware=middleware)
    for hook in list(_configure_hooks):
        hook(new)
    registry.trust(*trusted)
    with _lock:
        _settings = new
    _close_built()
    return new


def settings() -> Settings:
    """The current settings; built from the environment on first use if never configured."""
    global _settings
    current = _settings  # built already (every call but the first): no lock needed to read it
    if current is not None:
        return current
    with _lock:
        if _settings is not None:
            return _settings
        built = build_settings()
        for hook in list(_configure_hooks):
            hook(built)
        _settings = built
        return _settings


# -- what the settings build ------------------------------------------------------------------

def connection(name: str | None = None) -> Queue:
    """The queue object of the named (or default) connection, built once per process."""
    current = settings()
    name = name or current.default
    queue = _queues.get(name)  # built already (every call but the first): no lock to read it
    if queue is not None:
        return queue
    with _lock:
        queue = _queues.get(name)
        if queue is None:
            config = current.connection_config(name)
            queue = _queues[name] = driver_class(config["driver"])(name, config)
        return queue


_queue_of = connection  # for state(), whose parameter is named ``connection``


def connection_names(*, with_workers: bool = False) -> list[str]:
    """Every configured connection (only those that workers consume, with ``with_workers``)."""
    current = settings()
    return [name for name, conf in current.connections.items()
            if not with_workers or driver_class(conf["driver"]).has_workers]


def failed_store() -> FailedJobStore:
    """The failed job store (``EVENTBUS_FAILED_URL`` or ``configure(failed=...)``)."""
    url = settings().failed
    with _lock:
        store = _failed.get(url)
        if store is None:
            store = _failed[url] = store_for(url)
        return store


def state(connection: str | None = None) -> StateStore:
    """The state store of the named (or default) connection (:mod:`eventbus.state`), built once."""
    name = connection or settings().default
    with _lock:
        store = _states.get(name)
        if store is None:
            store = _states[name] = _queue_of(name).state_store()
        return store


def migrate() -> list[str]:
    """Create every table eventbus and its add-ons use; return one line per thing made ready."""
    lines = []
    for name in connection_names():
        queue = connection(name)
        make_tables = getattr(queue, "migrate", None)
        if callable(make_tables):
            lines.append(f"{name}: {', '.join(make_tables())} ready")
    for name in connection_names(with_workers=True):
        make_state = getattr(state(name), "migrate", None)
        if callable(make_state):
            lines.append(f"{name}: state store {', '.join(make_state())} ready")
    make_failed = getattr(failed_store(), "migrate", None)
    if callable(make_failed):
        lines.append(f"failed job store: {', '.join(make_failed())} ready")
    for hook in list(_migrate_hooks):
        lines.extend(hook())
    return lines


# -- hooks ------------------------------------------------------------------------------------

def on_configure(hook: ConfigureHook) -> ConfigureHook:
    """Call ``hook(settings)`` on every ``configure()`` (and now, if it already ran)."""
    with _lock:
        _configure_hooks.append(hook)
        current = _settings
    if current is not None:
        hook(current)
    return hook


def on_reset(hook: ResetHook) -> ResetHook:
    """Call ``hook()`` whenever the settings change or the process state is reset."""
    with _lock:
        _reset_hooks.append(hook)
    return hook


def on_migrate(hook: MigrateHook) -> MigrateHook:
    """Call ``hook()`` from ``eventbus migrate``; it creates its tables and returns lines to print."""
    with _lock:
        _migrate_hooks.append(hook)
    return hook


def around_jobs(scope: JobScope) -> JobScope:
    """Run every queued command inside ``scope()``, a context manager made afresh for each job.

    It is entered before the payload's command is decoded (so models load inside it) and left
    when the command returned or raised; its ``failed()`` hook gets a scope of its own. The
    first scope registered is the outermost. Framework integrations use it for what a job needs
    around it and must tidy up after: an app context, a per-job ORM session, stale connections.
    """
    with _lock:
        _job_scopes.append(scope)
    return scope


def forget_around_jobs(scope: JobScope) -> None:
    """Stop running jobs inside ``scope`` (registered with :func:`around_jobs`)."""
    with _lock:
        if scope in _job_scopes:
            _job_scopes.remove(scope)


def has_job_scopes() -> bool:
    """Whether an integration registered a job scope (:func:`around_jobs`)."""
    return bool(_job_scopes)


def job_scope() -> contextlib.AbstractContextManager[None]:
    """Every :func:`around_jobs` scope, outermost first; they are left in reverse order (nothing
    at all, at no cost, when no integration registered one)."""
    if not _job_scopes:
        return _NO_SCOPE
    with _lock:
        scopes = list(_job_scopes)
    return _stacked(scopes)


_NO_SCOPE = contextlib.nullcontext()


@contextlib.contextmanager
def _stacked(scopes: list[Callable[[], contextlib.AbstractContextManager[Any]]]) -> Iterator[None]:
    with contextlib.ExitStack() as stack:
        for scope in scopes:
            stack.enter_context(scope())
        yield


# -- resetting --------------------------------------------------------------------------------

def _close_built() -> None:
    with _lock:
        queues, stores = list(_queues.values()), list(_failed.values())
        states = list(_states.values())
        _queues.clear()
        _failed.clear()
        _states.clear()
    for store_ in states:
        store_.close()
    for queue in queues:
        queue.close()
    for store in stores:
        store.close()
    for hook in list(_reset_hooks):
        hook()


def close() -> None:
    """Close every connection, store and engine built so far; the settings stay (a web app's
    shutdown). The next use builds them again."""
    _close_built()
    sql.reset()


def reset() -> None:
    """Forget the configuration and everything built from it (tests); the next use starts over."""
    global _settings
    with _lock:
        _settings = None
    _close_built()
    sql.reset()
