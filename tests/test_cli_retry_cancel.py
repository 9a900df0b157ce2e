"""``eventbus retry --range`` / ``--class`` over failures a real worker made, and ``eventbus cancel``:
a cancelled job never runs in the worker started after it, its unique lock is free again, and a
running job or a batch member is refused with the reason."""

from __future__ import annotations

import json
import pathlib

import pytest
import redis
from click.testing import CliRunner, Result

import eventbus
from apps import jobs
from eventbus import runtime
from eventbus.cli import main
from eventbus.testing import memory_queue
from helpers import run_worker, traces, wait_for
from observing import BACKENDS, Backend, use_backend


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: pathlib.Path, redis_client: redis.Redis) -> Backend:
    return use_backend(request.param, tmp_path)


def work(start_worker: object, backend: Backend) -> None:
    """Run a worker until the queue is empty."""
    code, out, err = run_worker(start_worker, "--stop-when-empty", "--sleep", "0", env=backend.env)
    assert code == 0, (out, err)


def failed_uuids() -> list[str]:
    """The failed records' uuids, oldest failure first."""
    return [r.uuid for r in sorted(runtime.failed_store().all(), key=lambda r: r.failed_at)]


def pushed(result: Result) -> list[str]:
    return [line.split()[1] for line in result.output.splitlines() if line.startswith("Pushed ")]


# -- retry --range and --class ---------------------------------------------------------------------

def test_retry_range_takes_the_failures_between_two_uuids_by_failure_time(
        backend: Backend, start_worker: object, redis_client: redis.Redis) -> None:
    # Given five jobs that a worker ran and failed, one after another
    dispatched = [jobs.Doomed(n).dispatch() for n in range(5)]
    work(start_worker, backend)
    assert failed_uuids() == dispatched
    first, second, third, fourth, fifth = dispatched

    # When the range from the second to the fourth is retried, exactly those three go back
    result = invoke("retry", "--range", f"{second}..{fourth}")
    assert result.exit_code == 0, result.output
    assert pushed(result) == [second, third, fourth]  # oldest failure first
    assert failed_uuids() == [first, fifth]
    assert eventbus.connection().size() == 3

    # and they run again in a worker (and fail again, as they always do)
    work(start_worker, backend)
    assert traces(redis_client, "attempt") == ["0", "1", "2", "3", "4", "1", "2", "3"]

    # A range may be given last to first; both ends are included (by failure time the fourth
    # is the last failure now, the first the oldest)
    assert failed_uuids() == [first, fifth, second, third, fourth]
    result = invoke("retry", "--range", f"{fourth}..{first}", "--queue", "default")
    assert result.exit_code == 0 and set(pushed(result)) == set(dispatched)
    assert failed_uuids() == []


def test_retry_range_refuses_a_uuid_that_is_no_failed_job(backend: Backend, start_worker: object) -> None:
    dispatched = [jobs.Doomed(n).dispatch() for n in range(2)]
    work(start_worker, backend)
    result = invoke("retry", "--range", f"{dispatched[0]}..no-such-uuid")
    assert result.exit_code == 2
    assert result.output.strip() == (f"eventbus: error: --range {dispatched[0]}..no-such-uuid: no failed job "
                                     "with uuid no-such-uuid (eventbus failed lists them)")
    assert len(failed_uuids()) == 2 and eventbus.connection().size() == 0  # nothing retried
    assert invoke("retry", "--range", dispatched[0]).exit_code == 2  # not UUID1..UUID2
    assert invoke("retry", dispatched[0], "--range", f"{dispatched[0]}..{dispatched[1]}").exit_code == 2


def test_retry_class_matches_display_or_command_name_dotted_or_bare(
        backend: Backend, start_worker: object, redis_client: redis.Redis) -> None:
    doomed = [jobs.Doomed(n).dispatch() for n in (1, 2)]
    second = jobs.Second(fail=True).dispatch()
    shouting = jobs.Shouting().dispatch()  # its display name is its own; its command name is not
    work(start_worker, backend)
    assert len(failed_uuids()) == 4

    result = invoke("retry", "--class", "Second")
    assert result.exit_code == 0 and pushed(result) == [second]
    result = invoke("retry", "--class", "apps.jobs.Doomed", "--queue", "other")
    assert result.exit_code == 0 and result.output == "No failed jobs on queue other of class apps.jobs.Doomed.\n"
    result = invoke("retry", "--class", "apps.jobs.Doomed")
    assert sorted(pushed(result)) == sorted(doomed)
    result = invoke("retry", "--class", "Shouting")  # the bare command name
    assert pushed(result) == [shouting]
    assert failed_uuids() == []

    work(start_worker, backend)  # the retried jobs run (and fail) again
    assert sorted(traces(redis_client, "attempt")) == ["1", "1", "2", "2"]
    assert sorted(failed_uuids()) == sorted([*doomed, second, shouting])


def test_retry_range_and_class_on_the_memory_failed_store(redis_client: redis.Redis) -> None:
    with memory_queue() as run:
        dispatched = [jobs.Doomed(n).dispatch() for n in range(3)]
        jobs.Second(fail=True).dispatch()
        run.drain()
        assert len(run.failed()) == 4
        result = invoke("retry", "--range", f"{dispatched[0]}..{dispatched[1]}")
        assert result.exit_code == 0 and pushed(result) == dispatched[:2]
        assert pushed(invoke("retry", "--class", "Doomed")) == [dispatched[2]]
        assert eventbus.connection().size() == 3 and len(run.failed()) == 1


# -- cancel ------------------------------------------------------------------------------------------

def test_a_cancelled_job_never_runs_and_its_unique_lock_is_released(
        backend: Backend, start_worker: object, redis_client: redis.Redis) -> None:
    # Given ready, delayed and unique jobs waiting
    kept = jobs.Record(1).dispatch()
    doomed = jobs.Record(2).dispatch()
    later = jobs.Record(3).dispatch(delay=60)
    unique = jobs.UniqueRecord(70).dispatch()
    assert kept and doomed and later and unique
    assert jobs.UniqueRecord(70).dispatch() is None  # its lock holds while it waits

    # When three of them are cancelled
    result = invoke("cancel", doomed, later, unique)
    assert result.exit_code == 0, result.output
    conn = backend.connection
    assert result.output.splitlines() == [f"Cancelled {doomed} on {conn}:default.",
                                          f"Cancelled {later} on {conn}:default.",
                                          f"Cancelled {unique} on {conn}:default."]
    assert eventbus.connection().stats().delayed == 0

    # Then the unique job may be queued again, and a worker started now runs only the others
    assert jobs.UniqueRecord(70).dispatch() is not None
    work(start_worker, backend)
    assert traces(redis_client, "ran") == ["1", "70"]
    assert eventbus.connection().size() == 0 and failed_uuids() == []


def test_cancel_refuses_a_running_job_and_a_batch_member_and_says_what_it_did_not_find(
        backend: Backend, start_worker: object, redis_client: redis.Redis) -> None:
    running = jobs.Record(9, sleep=3).dispatch()
    assert running
    worker = start_worker("--stop-when-empty", "--sleep", "0", env=backend.env)  # type: ignore[operator]
    wait_for(lambda: traces(redis_client, "started"), timeout=30)
    eventbus.batch([jobs.Record(5)]).on_queue("mail").dispatch()
    [member] = [json.loads(raw)["uuid"] for raw in eventbus.connection().peek("mail")]
    kept = jobs.Record(6).dispatch(queue="mail")
    assert kept

    result = invoke("cancel", running, member, "no-such-uuid", kept, "--queue", "mail")
    assert result.exit_code == 1  # some were not cancelled
    assert result.output.splitlines()[0] == (f"Not cancelled {running}: not found: no queued or delayed "
                                             f"job with this uuid on queue mail of {backend.connection}.")
    result = invoke("cancel", running, member, "no-such-uuid", "--connection", backend.connection)
    lines = result.output.splitlines()
    assert result.exit_code == 1 and len(lines) == 3
    assert lines[0] == (f"Not cancelled {running}: running: a worker holds it (reserved); "
                        "a running job cannot be cancelled.")
    assert lines[1].startswith(f"Not cancelled {member}: belongs to batch ")
    assert "eventbus.find_batch(" in lines[1] and ").cancel()" in lines[1]
    assert lines[2].startswith("Not cancelled no-such-uuid: not found")
    assert worker.wait(60) == 0
    worker.output()
    assert traces(redis_client, "ran") == ["9"]  # the worker reads only the default queue


def test_cancel_usage_and_drivers_that_cannot(use_redis: redis.Redis) -> None:
    assert invoke("cancel").exit_code == 2
    result = invoke("cancel", "some-uuid", "--connection", "sync")
    assert result.exit_code == 2
    assert result.output.strip() == ("eventbus: error: connection 'sync': the sync driver cannot cancel one job: "
                                     "it runs every job the moment it is pushed; nothing is ever queued")


def test_cancel_on_the_memory_driver(redis_client: redis.Redis) -> None:
    with memory_queue() as run:
        kept, doomed = jobs.Record(1).dispatch(), jobs.Record(2).dispatch()
        assert kept and doomed
        assert invoke("cancel", doomed).exit_code == 0
        assert invoke("cancel", doomed).exit_code == 1
        assert eventbus.connection().size() == 1 and eventbus.connection().find(kept) is not None
        run.drain()
        assert eventbus.connection().size() == 0
