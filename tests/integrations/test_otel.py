"""OpenTelemetry: dispatch injects the trace context into the payload's headers, and the worker
continues the trace around the job (checked with the SDK's in-memory exporter)."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import redis

import eventbus
from eventbus import runtime
from eventbus.integrations import otel
from eventbus.worker import Worker, WorkerOptions
from helpers import REDIS_URL, ROOT, TESTS
from observing import BACKENDS, Backend, use_backend

pytest.importorskip("opentelemetry.sdk")

from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.trace import SpanKind, StatusCode  # noqa: E402

PROVIDER = TracerProvider()
EXPORTER = InMemorySpanExporter()
PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTER))


class Traced(eventbus.Job):
    """Makes a span of its own while it runs (it must nest under the process span)."""

    def __init__(self, fail: bool = False) -> None:
        self.fail_it = fail

    def handle(self) -> None:
        with trace.get_tracer("shop", tracer_provider=PROVIDER).start_as_current_span("charge card"):
            if self.fail_it:
                raise ValueError("card declined")


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    EXPORTER.clear()
    otel.instrument(tracer_provider=PROVIDER)
    yield EXPORTER
    otel.uninstrument()
    monkeypatch.setattr(otel, "_enabled", None)  # back to "decided by EVENTBUS_OTEL"


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: pathlib.Path, redis_client: redis.Redis) -> Backend:
    return use_backend(request.param, tmp_path)


def drain() -> None:
    worker = Worker.for_connection(options=WorkerOptions(stop_when_empty=True, sleep_s=0, tries=1, memory_mb=0))
    assert worker.run() == 0


def by_name(exporter: InMemorySpanExporter) -> dict[str, Any]:
    return {span.name: span for span in exporter.get_finished_spans()}


def test_the_worker_continues_the_dispatchers_trace(backend: Backend, spans: InMemorySpanExporter) -> None:
    with trace.get_tracer("web", tracer_provider=PROVIDER).start_as_current_span("POST /orders"):
        uuid = Traced().dispatch()
    [raw] = eventbus.connection().peek()
    headers = json.loads(raw)["headers"]
    assert headers["traceparent"].startswith("00-")
    drain()
    found = by_name(spans)
    request, send, process, charge = (found[n] for n in ("POST /orders", "send default", "process default",
                                                        "charge card"))
    assert {s.context.trace_id for s in (request, send, process, charge)} == {request.context.trace_id}
    assert send.parent.span_id == request.context.span_id and send.kind is SpanKind.PRODUCER
    assert process.parent.span_id == send.context.span_id and process.kind is SpanKind.CONSUMER
    assert charge.parent.span_id == process.context.span_id
    assert headers["traceparent"].split("-")[2] == format(send.context.span_id, "016x")
    for span, operation in ((send, "send"), (process, "process")):
        assert span.attributes["messaging.system"] == "eventbus"
        assert span.attributes["messaging.operation.type"] == operation
        assert span.attributes["messaging.destination.name"] == "default"
        assert span.attributes["messaging.message.id"] == uuid
    assert process.attributes["eventbus.job.outcome"] == "DONE"
    assert process.status.status_code is StatusCode.UNSET


def test_a_failing_job_marks_its_span(use_redis: redis.Redis, spans: InMemorySpanExporter) -> None:
    Traced(fail=True).dispatch()
    drain()
    process = by_name(spans)["process default"]
    assert process.status.status_code is StatusCode.ERROR
    assert process.attributes["error.type"] == "ValueError"
    assert process.attributes["eventbus.job.outcome"] == "FAIL"
    assert [e.name for e in process.events] == ["exception"]


def test_signed_payloads_carry_signed_headers(use_redis: redis.Redis, spans: InMemorySpanExporter) -> None:
    eventbus.configure(default="redis", key="secret-key",
                       connections={"redis": {"driver": "redis", "url": REDIS_URL, "block_for": 1}})
    Traced().dispatch()
    [raw] = eventbus.connection().peek()
    assert "traceparent" in json.loads(raw)["headers"] and "signature" in json.loads(raw)
    drain()
    assert by_name(spans)["process default"].attributes["eventbus.job.outcome"] == "DONE"
    assert runtime.failed_store().all() == []


FORGED_TRACE = "0af7651916cd43dd8448eb211c80319c"


@pytest.mark.parametrize("kind", ["unsigned", "unknown class"])
def test_a_refused_payloads_headers_never_parent_its_span(use_redis: redis.Redis, spans: InMemorySpanExporter,
                                                          kind: str) -> None:
    """The trace context of a refused payload is not continued: the worker's span starts a
    trace of its own and carries no name the payload gave itself."""
    from eventbus.dispatching import make_payload

    if kind == "unsigned":
        eventbus.configure(default="redis", key="secret-key",
                           connections={"redis": {"driver": "redis", "url": REDIS_URL, "block_for": 1}})
    doc = make_payload(Traced()).to_dict()
    doc.pop("signature", None)
    if kind == "unknown class":
        doc["data"]["commandName"] = "tests.nowhere.Job"
    doc.update(displayName="Forged", headers={"traceparent": f"00-{FORGED_TRACE}-b7ad6b7169203331-01"})
    eventbus.connection().push_raw(json.dumps(doc))
    drain()
    process = by_name(spans)["process default"]
    assert process.parent is None and format(process.context.trace_id, "032x") != FORGED_TRACE
    assert process.attributes["eventbus.job.outcome"] == "FAIL"
    assert "eventbus.job.name" not in process.attributes
    assert [s.name for s in spans.get_finished_spans()] == ["process default"]  # nothing was sent


def test_adding_headers_never_signs_a_payload_that_was_not_signed(use_redis: redis.Redis,
                                                                 spans: InMemorySpanExporter) -> None:
    """``with_headers`` signs again only what carried a valid signature: a payload that was not
    ours before the trace context was added is not made ours by adding it."""
    import dataclasses

    from eventbus.dispatching import Destination, make_payload, push_payload
    from eventbus.payload import new_uuid, verify

    eventbus.configure(default="redis", key="secret-key",
                       connections={"redis": {"driver": "redis", "url": REDIS_URL, "block_for": 1}})
    good = make_payload(Traced())
    for changes in ({"signature": None}, {"signature": "0" * 64}, {"display_name": "changed after signing"}):
        push_payload(dataclasses.replace(good, uuid=new_uuid(), **changes), Destination("redis", "forged", 0.0))
    push_payload(good, Destination("redis", "good", 0.0))
    forged = [json.loads(raw) for raw in eventbus.connection().peek("forged")]
    assert len(forged) == 3 and all("traceparent" in doc["headers"] for doc in forged)
    assert not any(verify(doc, "secret-key") for doc in forged)
    [kept] = [json.loads(raw) for raw in eventbus.connection().peek("good")]
    assert "traceparent" in kept["headers"] and verify(kept, "secret-key")


def test_nothing_is_injected_when_tracing_is_off(use_redis: redis.Redis) -> None:
    assert not otel.enabled()
    Traced().dispatch()
    [raw] = eventbus.connection().peek()
    assert "headers" not in json.loads(raw)


SCRIPT = """
import json, sys


class Witness:
    \"\"\"Notes each eventbus module that imports opentelemetry itself (other libraries may: redis
    does).\"\"\"
    seen = set()

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "opentelemetry":
            frame = sys._getframe(1)
            while frame is not None and frame.f_globals.get("__name__", "").startswith("importlib"):
                frame = frame.f_back  # the import machinery: the importer is the first frame above it
            module = frame.f_globals.get("__name__", "") if frame is not None else ""
            if module.split(".")[0] == "eventbus":
                self.seen.add(module)
        return None


sys.meta_path.insert(0, Witness())
import eventbus
from eventbus.dispatching import Destination, push_payload
from eventbus.payload import Payload

eventbus.configure(default="null")
push_payload(Payload(display_name="x", command_name="x", command={}), Destination("null", None, 0.0))
print(json.dumps(sorted(Witness.seen)))
"""


@pytest.mark.parametrize("flag, importers", [("", []), ("1", ["eventbus.integrations.otel"])])
def test_the_core_imports_opentelemetry_only_when_enabled(flag: str, importers: list[str],
                                                          tmp_path: pathlib.Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVENTBUS_")}
    env.update({"PYTHONPATH": f"{TESTS}{os.pathsep}{ROOT}", "EVENTBUS_OTEL": flag})
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                          cwd=tmp_path, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == importers


def test_headers_are_validated_like_the_other_envelope_fields() -> None:
    from eventbus.errors import DeserializationError
    from eventbus.payload import Payload

    good = Payload(display_name="x", command_name="x", command={}, headers={"traceparent": "00-abc"})
    assert Payload.from_json(good.to_json()).headers == {"traceparent": "00-abc"}
    assert "headers" not in json.loads(Payload(display_name="x", command_name="x", command={}).to_json())
    for bad in ([], {"a": 1}, {"": "x"}, {f"h{i}": "v" for i in range(33)}, {"a": "x" * 5000}):
        doc = {**good.to_dict(), "headers": bad}
        with pytest.raises(DeserializationError, match="headers"):
            Payload.from_dict(doc)
