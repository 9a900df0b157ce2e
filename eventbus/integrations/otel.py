"""OpenTelemetry tracing (``pip install 'eventbus[otel]'``): one trace from dispatch to the job.

Switched on by :func:`instrument` (call it in your app module, next to your tracer provider
setup) or by ``EVENTBUS_OTEL=1`` (the runtime then calls :func:`activate`). Until then nothing
here imports ``opentelemetry``. The core never imports this module: :func:`instrument` joins
the push and the worker through :func:`eventbus.runtime.trace_pushes` and
:func:`eventbus.runtime.observe_workers`.

- **Dispatch**: a ``send {queue}`` span (PRODUCER) around the push; the W3C trace context
  (``traceparent``, ``tracestate``) is injected into the payload's ``headers`` before it is
  signed.
- **Worker**: :class:`ProcessTracer` (attached by ``eventbus work``) extracts that context and
  runs the job inside a ``process {queue}`` span (CONSUMER), its child, current while the job runs,
  so spans the job makes nest under it. An exception is recorded on it with ``error.type``.

Attributes follow the OpenTelemetry messaging conventions: ``messaging.system = "eventbus"``,
``messaging.operation.type`` (``send``/``process``), ``messaging.destination.name`` (the queue),
``messaging.message.id`` (the job's uuid).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from eventbus import runtime
from eventbus.errors import DeserializationError, MissingDependencyError
from eventbus.monitoring.observer import ObservedWorker, WorkerObserver

if TYPE_CHECKING:
    from eventbus.queue.base import QueueJob
    from eventbus.worker.processing import Outcome

log = logging.getLogger(__name__)

SYSTEM = "eventbus"

# Module-level: OpenTelemetry's tracer provider is process-global.
_enabled: bool | None = None
_provider: Any = None


def instrument(tracer_provider: Any = None) -> None:
    """Trace dispatch and processing from now on (with ``tracer_provider``, else the global one)."""
    global _enabled, _provider
    _require()
    _enabled, _provider = True, tracer_provider
    runtime.trace_pushes(sending)
    runtime.observe_workers(ProcessTracer)


def uninstrument() -> None:
    """Stop tracing (``EVENTBUS_OTEL`` is ignored from now on in this process)."""
    global _enabled, _provider
    _enabled, _provider = False, None
    runtime.trace_pushes(None)
    runtime.forget_worker_observer(ProcessTracer)


def activate() -> None:
    """``EVENTBUS_OTEL=1``: trace with the global tracer provider, unless :func:`uninstrument`
    said otherwise (or :func:`instrument` was called already, with a provider of its own)."""
    if _enabled is None:
        instrument()


def enabled() -> bool:
    """Whether tracing is on: :func:`instrument` was called, or ``EVENTBUS_OTEL=1`` switched it
    on when the settings were read."""
    return bool(_enabled)


def _require() -> None:
    try:
        import opentelemetry.trace  # noqa: F401
    except ImportError as exc:
        raise MissingDependencyError("tracing needs OpenTelemetry: pip install 'eventbus[otel]'") from exc


def _tracer() -> Any:
    from opentelemetry import trace

    return trace.get_tracer("eventbus", tracer_provider=_provider)


def _attributes(operation: str, queue: str, uuid: str, connection: str) -> dict[str, Any]:
    return {"messaging.system": SYSTEM, "messaging.operation.type": operation,
            "messaging.operation.name": operation, "messaging.destination.name": queue,
            "messaging.message.id": uuid, "eventbus.connection": connection}


@contextlib.contextmanager
def sending(connection: str, queue: str, uuid: str) -> Iterator[dict[str, str]]:
    """A ``send {queue}`` span around a push; yields the headers to put in the payload
    (empty when tracing is off, or when no tracer provider records anything)."""
    if not enabled():
        yield {}
        return
    from opentelemetry import propagate
    from opentelemetry.trace import SpanKind, Status, StatusCode

    with _tracer().start_as_current_span(f"send {queue}", kind=SpanKind.PRODUCER,
                                         attributes=_attributes("send", queue, uuid, connection),
                                         record_exception=False, set_status_on_exception=False) as span:
        carrier: dict[str, str] = {}
        propagate.inject(carrier)
        try:
            yield carrier
        except Exception as exc:
            span.record_exception(exc)
            span.set_attribute("error.type", type(exc).__qualname__)
            span.set_status(Status(StatusCode.ERROR, str(exc)))
            raise


class ProcessTracer(WorkerObserver):
    """Runs each job inside a ``process {queue}`` span continuing the dispatcher's trace."""

    def __init__(self) -> None:
        self._open: tuple[Any, Any] | None = None

    def job_started(self, worker: ObservedWorker, job: QueueJob) -> None:
        from opentelemetry import context, propagate, trace
        from opentelemetry.trace import SpanKind

        try:
            headers = job.payload().headers
        except DeserializationError:
            headers = {}
        parent = propagate.extract(headers)
        span = _tracer().start_span(
            f"process {job.queue_name}", context=parent, kind=SpanKind.CONSUMER,
            attributes={**_attributes("process", job.queue_name, job.uuid, job.connection_name),
                        "eventbus.job.attempts": job.attempts})
        token = context.attach(trace.set_span_in_context(span, parent))
        self._open = (span, token)

    def job_finished(self, worker: ObservedWorker, job: QueueJob, outcome: Outcome, runtime_s: float,
                     exc: BaseException | None) -> None:
        from opentelemetry import context
        from opentelemetry.trace import Status, StatusCode

        if self._open is None:
            return
        (span, token), self._open = self._open, None
        try:
            span.set_attribute("eventbus.job.outcome", outcome.value)
            try:
                span.set_attribute("eventbus.job.name", job.payload().display_name)
            except DeserializationError:
                pass
            if exc is not None:
                span.record_exception(exc)
                span.set_attribute("error.type", type(exc).__qualname__)
                span.set_status(Status(StatusCode.ERROR, str(exc)))
        finally:
            context.detach(token)
            span.end()
