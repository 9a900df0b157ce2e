"""The composition root: the one place that holds process state.

Settings, the queue object of each connection, the failed job store and the SQL engines are
built here on first use and dropped together by :func:`reset` (and, for connections and stores,
by a new :func:`configure`). Everything else receives its collaborators from here instead of
keeping caches of its own. Add-ons join in with hooks:

- :func:`on_configure` — validate or apply new settings (``notifications`` checks its mail and
  SMS URLs), from ``configure()`` or when the settings are first read from the environment; a
  hook registered later is called at once with the current settings.
- :func:`on_reset` — drop what was built from the old settings (cached mail transports).
- :func:`on_alert` — send an alert (``notifications`` sends it by mail, Slack...); add-ons the
  app may never import join through the ``eventbus.alerts`` entry points.
- :func:`on_migrate` — create tables (``eventbus migrate``); returns lines to print. Add-ons
  the app may never import join through the ``eventbus.migrate`` entry points instead.
- :func:`use_app_database` — the integrations say where the app's own database is (Django's
  default alias, the engine given to SQLAlchemy sessions); add-ons keeping app data there
  (the ``notifications`` table) read it with :func:`app_database`.
- :func:`around_jobs` — a context manager every queued command runs inside, from decoding its
  payload to its end (a Flask app context, a per-job ORM session); see :func:`job_scope`.
- :func:`trace_pushes` and :func:`observe_workers` — where an integration (tracing) joins the
  push and the worker, so that the core never imports it. Integrations the environment
  switches on (``EVENTBUS_OTEL``, see :data:`eventbus.config.INTEGRATION_VARIABLES`) are
  imported by name and activated when the settings are read.

Nothing here runs at import time: the environment is read by :func:`configure` or, without it,
by the first :func:`settings` call.

The rest of the package keeps no state of its own either (``tests/test_architecture.py``
checks it): what a module builds from the configuration goes in its :func:`cache`, dropped with
the connections; what the app registers at import or decoration time (serializable types,
model adapters, rate limiters, store factories) goes in :func:`registries`, kept for the
process. The few exceptions (context variables, signal handling, modules below this one in
the import graph) say why where they are defined.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from eventbus.config import Settings, build_settings, integrations_from_environment, refuse_unknown_settings
from eventbus.errors import ConfigurationError
from eventbus.failed import FailedJobStore, store_for
from eventbus.failed import prepare_fork as prepare_failed_store
from eventbus.queue.base import Queue
from eventbus.queue.capabilities import WorkerSignals, supports
from eventbus.queue.drivers import driver_class
from eventbus.state.base import StateStore

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

ConfigureHook = Callable[[Settings], None]
ResetHook = Callable[[], None]
MigrateHook = Callable[[], Iterable[str]]
#: Sends one alert event (``LongWaitDetected``, ``QueueBusy``) to the routes of ``settings().alerts``.
AlertHook = Callable[[Any], None]
JobScope = Callable[[], contextlib.AbstractContextManager[Any]]
#: Where the app's database is: a URL or an engine, or None when it cannot say (yet).
AppDatabase = Callable[[], "str | Engine | None"]
#: Around each push: called with (connection, queue, uuid), it yields the headers to add to the
#: payload before it is signed (a trace context), and sees the push's exception.
PushTracer = Callable[[str, str, str], contextlib.AbstractContextManager[dict[str, str]]]
#: Makes one more observer for each worker ``eventbus work`` starts (a tracer of its jobs).
ObserverFactory = Callable[[], Any]
#: The entry-point group of migrations of add-ons the app may not import (``notifications``).
MIGRATE_ENTRY_POINTS = "eventbus.migrate"
#: The entry-point group of alert senders of add-ons the app may not import (``notifications``).
ALERT_ENTRY_POINTS = "eventbus.alerts"

_lock = threading.RLock()
_settings: Settings | None = None
_queues: dict[str, Queue] = {}
_failed: dict[str, FailedJobStore] = {}
_states: dict[str, StateStore] = {}
_configure_hooks: list[ConfigureHook] = []
_reset_hooks: list[ResetHook] = []
_migrate_hooks: list[MigrateHook] = []
_alert_hooks: list[AlertHook] = []
_job_scopes: list[JobScope] = []
_app_database: AppDatabase | None = None
_push_tracer: PushTracer | None = None
_observer_factories: list[ObserverFactory] = []
_activated: set[str] = set()
_caches: dict[str, dict[Any, Any]] = {}


@dataclasses.dataclass
class Registries:
    """What the app registers at import or decoration time, for the whole process: neither
    ``configure()`` nor :func:`reset` forgets it (a module imported once registers once). The
    modules that fill it keep their functions (``registry.serializable``,
    ``serializer.register_model``, ``limits.rate_limit``...); these are their tables."""

    #: ``eventbus.registry``: payload name -> class, listener and handler entries, and the
    #: module prefixes whose classes payloads may name (``configure(trusted=...)`` adds some).
    types: dict[str, type] = dataclasses.field(default_factory=dict)
    listeners: dict[str, Any] = dataclasses.field(default_factory=dict)
    handlers: dict[str, Any] = dataclasses.field(default_factory=dict)
    trusted: list[str] = dataclasses.field(default_factory=lambda: ["listeners", "notifications"])
    #: ``eventbus.serializer``: model adapters by class, resolvers, and what they resolved.
    model_adapters: dict[type, Any] = dataclasses.field(default_factory=dict)
    model_resolvers: list[Callable[[type], Any]] = dataclasses.field(default_factory=list)
    resolved_models: dict[type, Any] = dataclasses.field(default_factory=dict)
    #: ``eventbus.limits``: the rate limiters by name.
    limiters: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: ``eventbus.batching.stores`` and ``eventbus.tracking.stores``: repository factories by
    #: state store class, and the built-in ones by its dotted name.
    batch_repositories: dict[type, Any] = dataclasses.field(default_factory=dict)
    batch_repositories_by_name: dict[str, Any] = dataclasses.field(default_factory=dict)
    job_repositories: dict[type, Any] = dataclasses.field(default_factory=dict)
    job_repositories_by_name: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: Guards changes to the tables above (registration is rare; reads take no lock).
    lock: threading.Lock = dataclasses.field(default_factory=threading.Lock)


_registries = Registries()


def registries() -> Registries:
    """The registration tables of this process (:class:`Registries`)."""
    return _registries


def cache(owner: str) -> dict[Any, Any]:
    """A dict for ``owner`` (a module's name) to keep what it builds from the current
    configuration (a repository per state store, a memory store per connection):
    ``configure()``, ``configured()``, :func:`close` and :func:`reset` drop it with the
    connections, so that nothing built for one configuration outlives it."""
    found = _caches.get(owner)  # made already (every call but the first): no lock to read it
    if found is None:
        with _lock:
            found = _caches.setdefault(owner, {})
    return found


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
    previous_keys: Iterable[str] | None = None,
    waits: Mapping[str, float] | None = None,
    alerts: Mapping[str, str] | None = None,
    alert_cooldown: float | None = None,
    supervisors: Mapping[str, Mapping[str, Any]] | None = None,
    metrics_retention: float | None = None,
    retention: Mapping[str, float] | None = None,
    silenced: Iterable[str] | None = None,
    **unknown: Any,
) -> Settings:
    """Configure the default bus. Unset values come from EVENTBUS_* variables, then defaults.

    ``connections`` merges with the built-in ``database``, ``redis``, ``sync`` and ``null``
    connections by name. ``trusted`` adds module prefixes whose classes payloads may name.
    ``middleware`` wraps every job the workers of this app run (outermost). ``key`` signs
    payloads (``EVENTBUS_KEY``); ``previous_keys`` (``EVENTBUS_PREVIOUS_KEYS``) are the keys that
    signed them before a rotation, accepted while the jobs they signed drain.
    ``waits`` (``EVENTBUS_WAITS``) maps ``"connection:queue"`` to the seconds its oldest ready
    job may wait before ``eventbus monitor`` (and ``eventbus supervise``) emits
    ``LongWaitDetected``; ``alerts`` (``EVENTBUS_ALERTS``) maps notification channels to routes that ``LongWaitDetected`` and
    ``QueueBusy`` are sent to, at most once per queue and kind every ``alert_cooldown`` seconds
    (``EVENTBUS_ALERT_COOLDOWN``, 600 by default); a job class failing for the first time in
    that long sends ``JobFailedAlert`` the same way. ``supervisors`` declares what
    ``eventbus supervise`` runs: name -> ``connection``, ``queues``, ``balance``,
    ``min_processes``, ``max_processes``, ... (see :mod:`eventbus.supervising`). ``metrics_retention``
    (``EVENTBUS_METRICS_RETENTION``, 7 days by default) is how many seconds the per-minute
    metrics snapshots are kept for the dashboard's long ranges.
    ``retention`` sets the seconds the recent-jobs store keeps ``completed`` jobs (3600),
    ``failed`` ones (604800) and those carrying a ``monitored`` tag (604800); ``silenced``
    names job classes kept out of it when they complete (as ``silenced = True`` does).
    Calling it again replaces the previous configuration and closes open connections; an
    unknown keyword is a :class:`~eventbus.ConfigurationError` naming it.
    """
    global _settings
    refuse_unknown_settings(unknown)
    new = build_settings(default=default, connections=connections, failed=failed, mail=mail,
                         sms=sms, key=key, previous_keys=previous_keys, mail_from=mail_from,
                         middleware=middleware, waits=waits, alerts=alerts,
                         alert_cooldown=alert_cooldown, supervisors=supervisors,
                         metrics_retention=metrics_retention, retention=retention, silenced=silenced)
    for hook in list(_configure_hooks):
        hook(new)
    trust(*trusted)
    with _lock:
        _settings = new
    _close_built()
    _activate_integrations()
    return new


@contextlib.contextmanager
def configured(**changes: Any) -> Iterator[Settings]:
    """The current configuration with ``changes`` for the length of a ``with`` block, then the
    configuration from before it again (never configured: read from the environment on next
    use). ``connections`` given join those in use; every other setting given replaces the
    current one, the rest stay as they are. Everything built is closed on the way in and on
    the way out (:func:`eventbus.testing.memory_queue`)."""
    global _settings
    with _lock:
        before = _settings
    current = settings()
    connections = {name: current.connections[name] for name in current.in_use}
    connections.update(changes.pop("connections", None) or {})
    kept = {"default": current.default, "failed": current.failed, "mail": current.mail,
            "sms": current.sms, "key": current.key, "previous_keys": current.previous_keys,
            "mail_from": current.mail_from, "middleware": current.middleware,
            "waits": current.waits, "alerts": current.alerts,
            "alert_cooldown": current.alert_cooldown_s,
            "supervisors": {name: s.table() for name, s in current.supervisors.items()},
            "metrics_retention": current.metrics_retention_s, "retention": current.retention_s,
            "silenced": current.silenced}
    try:
        yield configure(**{**kept, **changes, "connections": connections})
    finally:
        with _lock:
            _settings = before
        _close_built()


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
    _activate_integrations()
    return built


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


def prepare_fork(name: str | None = None) -> None:
    """Before a supervisor forks its workers: load what each of them would load before its
    first job on the named (or default) connection (:meth:`Queue.prepare_fork`). Connects to
    nothing, and raises nothing: what fails to prepare (an unknown connection, a database
    driver that is not installed) is left for each worker to report as it starts."""
    steps: list[Callable[[], None]] = [lambda: _prepare_driver(name), lambda: prepare_failed_store(settings().failed)]
    for step in steps:
        try:
            step()
        except Exception:  # noqa: BLE001 - only a head start: the worker meets the real error
            import logging

            logging.getLogger(__name__).debug("could not prepare %r before forking", name, exc_info=True)


def _prepare_driver(name: str | None) -> None:
    current = settings()
    config = current.connection_config(name or current.default)
    driver_class(config["driver"]).prepare_fork(config)


def connection_names(*, with_workers: bool = False) -> list[str]:
    """The connections this app uses: those it configured and the default (only those that
    workers consume, with ``with_workers``). A built-in connection the app never configured
    (``redis`` for an app on the SQLite default) is not among them: commands that act on every
    connection (``restart``, ``status``, ``migrate``...) leave it, and its server, alone."""
    current = settings()
    return [name for name in current.in_use
            if not with_workers or supports(driver_class(current.connections[name]["driver"]), WorkerSignals)]


def failed_store() -> FailedJobStore:
    """The failed job store (``EVENTBUS_FAILED_URL`` or ``configure(failed=...)``), scoped like
    the default connection (its Redis prefix, or a table named after its jobs table)."""
    current = settings()
    url = current.failed
    with _lock:
        store = _failed.get(url)
        if store is None:
            default = current.connection_config()
            scope = driver_class(default["driver"]).failed_scope(default)
            store = _failed[url] = store_for(url, scope)
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
    for hook in _all_migrate_hooks():
        lines.extend(hook())
    return lines


def _all_migrate_hooks() -> list[MigrateHook]:
    """The hooks registered with :func:`on_migrate`, then those of the ``eventbus.migrate``
    entry points (each once: an add-on the app imported registered the same function)."""
    return _with_entry_points(list(_migrate_hooks), MIGRATE_ENTRY_POINTS)


def alert_hooks() -> list[AlertHook]:
    """Who sends alerts: the hooks registered with :func:`on_alert`, then those of the
    ``eventbus.alerts`` entry points, loaded here on first use (so ``eventbus monitor`` reaches
    ``notifications`` for an app that never imports it; each hook once)."""
    return _with_entry_points(list(_alert_hooks), ALERT_ENTRY_POINTS)


def _with_entry_points(hooks: list[Any], group: str) -> list[Any]:
    from importlib.metadata import entry_points  # only ``migrate`` and alerts need them

    for entry in entry_points(group=group):
        try:
            hook = entry.load()
        except (ImportError, AttributeError) as exc:
            raise ConfigurationError(f"the {group} entry point {entry.name!r} "
                                     f"({entry.value}) cannot be loaded: {exc}") from exc
        if hook not in hooks:
            hooks.append(hook)
    return hooks


def trust(*prefixes: str) -> None:
    """Let payloads name classes of modules under ``prefixes`` (``configure(trusted=...)``)."""
    tables = _registries
    with tables.lock:
        for prefix in prefixes:
            if prefix and prefix not in tables.trusted:
                tables.trusted.append(prefix)


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


def on_alert(hook: AlertHook) -> AlertHook:
    """Call ``hook(event)`` for each alert ``eventbus monitor`` sends (``LongWaitDetected``,
    ``QueueBusy``) when ``configure(alerts=...)`` names where to; the cooldown is checked
    before (see :mod:`eventbus.monitoring.alerts`). An exception counts as not sent."""
    with _lock:
        if hook not in _alert_hooks:
            _alert_hooks.append(hook)
    return hook


def use_app_database(source: AppDatabase | None) -> None:
    """Say where the app's own database is: ``source()`` gives its URL or SQLAlchemy engine
    (asked at each use, so it may follow a framework's app context), or None to forget it.

    Integrations call it when they configure eventbus (Django: the ``default`` alias;
    SQLAlchemy: the engine bound to the sessionmaker given to ``use_sessions``;
    Flask-SQLAlchemy: ``db.engine``); :func:`reset` forgets it. Data that belongs to the app
    rather than to the queue, the database notifications, goes there.
    """
    global _app_database
    with _lock:
        _app_database = source


def app_database() -> str | Engine | None:
    """The app's database as an integration gave it (:func:`use_app_database`), or None."""
    source = _app_database
    return source() if source is not None else None


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

# -- integrations -------------------------------------------------------------------------------

def trace_pushes(tracer: PushTracer | None) -> None:
    """Run every push inside ``tracer`` from now on (None: no more). One tracer at a time: a
    second replaces the first (tracing is OpenTelemetry's job; a bridge composes others)."""
    global _push_tracer
    _push_tracer = tracer


def push_tracer() -> PushTracer | None:
    """The tracer around pushes, if an integration set one (read on every push)."""
    return _push_tracer


def observe_workers(factory: ObserverFactory) -> None:
    """Give every worker ``eventbus work`` starts from now on an observer made by ``factory``."""
    with _lock:
        if factory not in _observer_factories:
            _observer_factories.append(factory)


def forget_worker_observer(factory: ObserverFactory) -> None:
    with _lock:
        if factory in _observer_factories:
            _observer_factories.remove(factory)


def worker_observers() -> list[Any]:
    """One new observer from each registered factory (:func:`observe_workers`)."""
    return [factory() for factory in list(_observer_factories)]


def _activate_integrations() -> None:
    """Import and activate, once per process (until :func:`reset`), the integrations the
    environment switches on. By name: the core never imports an integration itself."""
    for module in integrations_from_environment():
        with _lock:
            if module in _activated:
                continue
            _activated.add(module)
        importlib.import_module(module).activate()


def _close_built() -> None:
    with _lock:
        queues, stores = list(_queues.values()), list(_failed.values())
        states = list(_states.values())
        _queues.clear()
        _failed.clear()
        _states.clear()
        _caches.clear()
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
    _dispose_engines()


def reset() -> None:
    """Forget the configuration and everything built from it (tests); the next use starts over.
    The app's database is forgotten too: the integration says it again when it configures. The
    integrations' hooks stay (whoever registered them removes them); the environment is read
    again for the integrations it switches on."""
    global _settings, _app_database
    with _lock:
        _settings = None
        _app_database = None
        _activated.clear()
    _close_built()
    _dispose_engines()


def _dispose_engines() -> None:
    """Dispose the SQL engines, when anything used SQL at all: importing :mod:`eventbus.sql`
    (and SQLAlchemy) just to find none would cost an app on Redis its start-up time."""
    sql = sys.modules.get("eventbus.sql")
    if sql is not None:
        sql.reset()
