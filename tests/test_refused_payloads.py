"""A refused payload is recorded (its raw text and the reason) and deleted; nothing it names is
pushed, counted, cancelled, called, labelled or logged as a job name.

Three ways to be refused, each written to the queue as an attacker with write access could:
unsigned while the worker has ``EVENTBUS_KEY``, naming a class outside the registry, and a
queued-listener job naming a listener that was never registered. For each, one test per field
that could carry an effect: chain steps (``chained``), ``chainCatch``/``chainFinally``, the
batch (``batchId`` with member uuids in ``chained``), the display name, and the headers.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
import redis

import eventbus
from apps import jobs
from eventbus import runtime
from eventbus.dispatching import make_payload
from helpers import run_worker, traces
from listeners.queued import CallQueuedListener

pytestmark = pytest.mark.integration

KEY = "the-real-key"


def step(n: int, queue: str | None = None) -> dict[str, Any]:
    """A ready-made chain step running ``Record(n)``, signed with the real key when one is set
    (an attacker may have copied it from a real job: it is the refused envelope that carries it)."""
    return {"destination": {"connection": "redis", "queue": queue, "delay": 0.0},
            "payload": make_payload(jobs.Record(n)).to_dict()}


def unsigned(doc: dict[str, Any]) -> dict[str, Any]:
    doc.pop("signature", None)
    return doc


def unknown_class(doc: dict[str, Any]) -> dict[str, Any]:
    doc["data"]["commandName"] = "apps.jobs.NoSuchJob"
    return doc


def forged_listener(doc: dict[str, Any]) -> dict[str, Any]:
    listener = make_payload(CallQueuedListener("apps.jobs.not_a_listener", "", [],
                                               display_name="apps.jobs.not_a_listener", options={}))
    doc["data"]["commandName"] = listener.command_name
    doc["data"]["command"] = listener.command
    return doc


REFUSALS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "unsigned": unsigned, "unknown class": unknown_class, "forged listener": forged_listener}


@pytest.fixture(params=list(REFUSALS))
def refusal(request: pytest.FixtureRequest, use_redis: redis.Redis) -> tuple[str, dict[str, str]]:
    """The kind of refusal, and the worker's extra environment (the key, for ``unsigned``)."""
    if request.param == "unsigned":
        eventbus.configure(connections={"redis": {"driver": "redis", "url": runtime.settings()
                                                  .connection_config("redis")["url"], "block_for": 1}},
                           key=KEY)
        return request.param, {"EVENTBUS_KEY": KEY}
    return request.param, {}


def refused(kind: str, **fields: Any) -> str:
    """A payload of the given refusal kind with these envelope fields (``chained`` goes in data)."""
    doc = make_payload(jobs.Record(99)).to_dict()
    chained = fields.pop("chained", None)
    if chained is not None:
        doc["data"]["chained"] = chained
    doc.update(fields)
    return json.dumps(REFUSALS[kind](doc))


def drain(start_worker: object, env: dict[str, str], *args: str) -> str:
    """Run a worker until the queue is empty; the refused job is the only failure. Its output
    (the job lines and the log)."""
    jobs.Record(1).dispatch()
    code, out, err = run_worker(start_worker, "--stop-when-empty", *args, env=env)
    assert code == 0, err
    return out + err


def ran(client: redis.Redis) -> list[str]:
    return sorted(traces(client, "ran"))


def test_its_chain_steps_are_never_pushed(refusal: tuple[str, dict[str, str]], use_redis: redis.Redis,
                                          start_worker: object) -> None:
    kind, env = refusal
    raw = refused(kind, chained=[step(11), step(12)])
    eventbus.connection().push_raw(raw)
    drain(start_worker, env)
    assert ran(use_redis) == ["1"]
    [record] = eventbus.failed_store().all()
    assert record.payload == raw and "Error" in record.summary
    assert eventbus.connection().size() == 0


def test_its_catch_and_finally_jobs_are_never_pushed(refusal: tuple[str, dict[str, str]],
                                                     use_redis: redis.Redis, start_worker: object) -> None:
    kind, env = refusal
    eventbus.connection().push_raw(refused(kind, chainCatch=[step(21)], chainFinally=[step(22)]))
    drain(start_worker, env)
    assert ran(use_redis) == ["1"]
    assert eventbus.connection().size() == 0 and len(eventbus.failed_store().all()) == 1


def test_it_never_counts_in_a_batch(refusal: tuple[str, dict[str, str]], use_redis: redis.Redis,
                                    start_worker: object) -> None:
    kind, env = refusal
    batch = (eventbus.batch([jobs.Record(31), jobs.Record(32)]).on_queue("elsewhere")
             .catch(jobs.Record(33)).finally_(jobs.Record(34)).dispatch())
    members = [json.loads(raw)["uuid"] for raw in eventbus.connection().peek("elsewhere")]
    eventbus.connection().push_raw(refused(kind, batchId=batch.ref,
                                           chained=[{**step(35), "payload": {
                                               **step(35)["payload"], "uuid": uuid}} for uuid in members]))
    drain(start_worker, env)
    after = batch.fresh()
    assert (after.pending, after.failed, after.cancelled, after.finished) == (2, 0, False, False)
    assert ran(use_redis) == ["1"] and eventbus.connection().size("elsewhere") == 2


def test_its_display_name_never_labels_metrics_or_log_lines(refusal: tuple[str, dict[str, str]],
                                                            use_redis: redis.Redis,
                                                            start_worker: object) -> None:
    kind, env = refusal
    for n in range(5):
        eventbus.connection().push_raw(refused(kind, uuid=f"forged-{n}", displayName=f"Forged{n}Name"))
    output = drain(start_worker, env)
    assert "Forged" not in output and "(refused payload)" in output, output
    names = [key.decode() for key in use_redis.scan_iter("*")]
    assert not [name for name in names if "Forged" in name]
    records = eventbus.failed_store().all()
    assert len(records) == 5 and {r.display_name for r in records} == {"(refused payload)"}


def test_a_class_whose_module_fails_to_import_fails_the_job_not_the_worker(
        use_redis: redis.Redis, start_worker: object) -> None:
    """Not a refusal (the name is trusted, the module is broken): the job fails as any other."""
    doc = make_payload(jobs.Record(99)).to_dict()
    doc["data"]["commandName"] = "apps.broken_import.Job"
    eventbus.connection().push_raw(json.dumps(doc))
    drain(start_worker, {})
    assert ran(use_redis) == ["1"]
    [record] = eventbus.failed_store().all()
    assert record.summary == "RuntimeError: this module is broken" and not record.refused
