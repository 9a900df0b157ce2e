"""A release that gives its attempt back (``counts_attempt=False``: WithoutOverlapping,
RateLimited, ThrottlesExceptions) is one step on every driver: no worker may reserve the job
between "put back" and "attempt given back" and count one attempt too many."""

from __future__ import annotations

import pytest
from helpers import wait_for
from toolbox_backend import Backend, backend  # noqa: F401  (the fixture)

import eventbus

pytestmark = pytest.mark.integration


def test_jobs_contending_for_one_lock_never_run_out_of_their_single_try(backend: Backend) -> None:
    """Issue 26's recipe: tries = 1, WithoutOverlapping("k"), 50 ms jobs, 30 of them, three
    workers reserving one job at a time. Every job runs once, as attempt 1, and none fails."""
    from apps.toolbox import Contended

    eventbus.dispatch_many([Contended(n) for n in range(30)])
    backend.start_workers(3, "--prefetch", "1")
    wait_for(lambda: eventbus.connection().size() == 0, timeout=120)
    failed = eventbus.failed_store().all()
    assert [record.exception.splitlines()[0] for record in failed] == []
    runs = backend.lines("contended")
    assert sorted(int(fields[0]) for fields in runs) == list(range(30))
    assert {int(fields[1]) for fields in runs} == {1}
