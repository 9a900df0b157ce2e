"""Unique jobs with real workers on Redis, SQLite and PostgreSQL: when the lock is released
(a job deleted for a missing model, ``unique_until_processing`` behind its middleware), and
locks and overlap keys made of user data of any length or content."""

from __future__ import annotations

import pathlib

import pytest

import eventbus
from helpers import wait_for
from toolbox_backend import Backend, backend  # noqa: F401  (the fixture)

pytestmark = pytest.mark.integration


def test_a_unique_job_deleted_for_its_missing_model_releases_its_lock(backend: Backend) -> None:
    from apps.toolbox import ReindexShop, Shop

    shop = Shop.create(5)
    assert ReindexShop(shop).dispatch() is not None
    assert ReindexShop(shop).dispatch() is None  # waiting: a duplicate
    pathlib.Path(Shop.path(5)).unlink()  # the shop is deleted before the job runs
    backend.start_workers(1, "--stop-when-empty")
    wait_for(lambda: backend.workers[0].poll() is not None, timeout=60)
    assert eventbus.connection().size() == 0 and eventbus.failed_store().all() == []
    assert backend.lines("reindex-shop") == []  # deleted, never run
    Shop.create(5)
    assert ReindexShop(shop).dispatch() is not None, "the deleted job left its lock behind"


def test_unique_until_processing_keeps_the_lock_while_its_middleware_holds_it_back(
        backend: Backend) -> None:
    """Laravel releases the lock when the job reaches handle, after its middleware: a job the
    middleware releases keeps its lock, so no duplicate piles up behind it."""
    from apps.toolbox import GatedReindex

    gate = pathlib.Path(str(backend.log) + ".gate")
    gate.touch()
    assert GatedReindex(1, seconds=2.0).dispatch() is not None
    backend.start_workers(1)
    wait_for(lambda: len(backend.lines("held-back")) >= 2, timeout=60)  # it reached the worker
    assert GatedReindex(2).dispatch() is None, "a job held back by its middleware lost its lock"
    gate.unlink()
    wait_for(lambda: backend.lines("gated-start") != [], timeout=60)
    assert GatedReindex(3).dispatch() is not None  # running: the lock is free for the next one
    wait_for(lambda: len(backend.lines("gated-start")) == 2, timeout=60)
    assert [int(fields[0]) for fields in backend.lines("gated-start")] == [1, 3]
    assert eventbus.failed_store().all() == []


@pytest.mark.parametrize("key", ["k" * 300, "nul\x00inside", "ünïcødé " * 40, ""])
def test_unique_ids_and_overlap_keys_are_user_data_of_any_length_or_content(
        backend: Backend, key: str) -> None:
    """Issue 25: a 300-character or NUL-bearing unique id raised a raw ValueError at dispatch,
    and such a WithoutOverlapping key failed the job every time. Both are hashed now."""
    from apps.toolbox import Keyed

    assert Keyed(key).dispatch() is not None
    assert Keyed(key).dispatch() is None
    assert Keyed(key + "-other").dispatch() is not None
    backend.start_workers(1, "--stop-when-empty")
    wait_for(lambda: backend.workers[0].poll() is not None, timeout=60)
    assert eventbus.failed_store().all() == []
    assert sorted(int(fields[0]) for fields in backend.lines("keyed")) == [len(key), len(key) + 6]
    assert Keyed(key).dispatch() is not None  # done: its lock is gone
