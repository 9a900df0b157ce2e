"""The batch fakes for users' own tests: ``fake_queue()``'s batch assertions (Laravel's
``Bus::assertBatched``) and ``fake_batch(job)`` (Laravel's ``withFakeBatch``)."""

from __future__ import annotations

import pathlib

import pytest

import eventbus
from eventbus.testing import BatchFake, fake_batch, fake_queue


def test_a_faked_queue_records_batches_and_stores_nothing() -> None:
    from apps.batching import N, Report

    with fake_queue() as queue:
        queue.assert_nothing_batched()
        made = eventbus.batch([N("a"), [N("b"), N("c")]]).name("import").then(Report("done")).dispatch()
        skipped = eventbus.batch([N("x")]).dispatch_if(False)
    assert isinstance(made, BatchFake) and skipped is None
    assert (made.name, made.total, made.pending) == ("import", 3, 3)
    queue.assert_batched()
    queue.assert_batched(lambda batch: batch.label == "import" and len(batch.jobs) == 2)
    queue.assert_batch_count(1)
    queue.assert_nothing_pushed()  # neither the jobs nor the callbacks
    with pytest.raises(AssertionError, match="expected a batch matching the predicate.*import with 3 jobs"):
        queue.assert_batched(lambda batch: batch.label == "export")
    with pytest.raises(AssertionError, match="expected 2 batches, saw 1"):
        queue.assert_batch_count(2)
    with pytest.raises(AssertionError, match="expected no batches"):
        queue.assert_nothing_batched()
    assert eventbus.find_batch(made.id) is None


def test_a_job_with_a_fake_batch_records_what_it_did_to_it(tmp_path: pathlib.Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from apps.batching import CancelsBatch, Grow

    monkeypatch.setenv("BATCHES_LOG", str(tmp_path / "log"))
    canceller = CancelsBatch()
    batch = fake_batch(canceller, name="nightly", total=4, pending=2)
    assert canceller.batch() is batch and batch.progress == 50.0
    canceller.handle()
    assert batch.cancelled

    grower = Grow("g")
    grown = fake_batch(grower)
    grower.handle()  # adds two jobs to its batch, then runs
    assert [job.name for job in grown.added] == ["g-child-1", "g-child-2"] and grown.total == 2
    assert "_fake_batch" not in eventbus.serializer.object_state(grower)  # never travels in a payload
