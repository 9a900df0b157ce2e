"""The timeout interrupt (``eventbus.timeouts``): a worker sets the interval timer only when a
job's deadline comes before the time it fires next, and every job is still interrupted on time.

These run in the main thread with real ``SIGALRM`` timers; ``signal.getitimer`` shows what the
process's timer is set to.
"""

from __future__ import annotations

import signal
import time

import pytest

from eventbus.errors import JobTimeoutError
from eventbus.timeouts import alarm_handler, interrupt_after


def timer_left() -> float:
    return signal.getitimer(signal.ITIMER_REAL)[0]


@pytest.fixture(autouse=True)
def no_timer_left_behind():
    yield
    assert timer_left() == 0.0, "a test left the process's interval timer running"


def test_jobs_with_the_same_timeout_set_the_timer_once() -> None:
    with alarm_handler():
        with interrupt_after(60, "first"):
            pass
        set_by_first = timer_left()
        assert 59 < set_by_first <= 60  # left running after the job: not cleared
        time.sleep(0.05)
        for _ in range(100):
            with interrupt_after(60, "next"):
                pass
        # not set again: the timer fires before any of those deadlines, and is moved on then
        assert timer_left() < set_by_first - 0.04


def test_a_shorter_timeout_after_a_longer_one_interrupts_on_time() -> None:
    with alarm_handler():
        with interrupt_after(60, "long"):
            pass
        started = time.monotonic()
        with pytest.raises(JobTimeoutError, match="short timed out after 0.2 seconds"):
            with interrupt_after(0.2, "short"):
                time.sleep(2)
        assert 0.19 < time.monotonic() - started < 0.6


def test_a_timer_left_by_a_finished_job_does_not_interrupt_the_next_one() -> None:
    with alarm_handler():
        with interrupt_after(0.1, "quick"):
            pass  # its timer is still running, due in 0.1 s
        with interrupt_after(5, "slower"):
            time.sleep(0.4)  # the stale timer fires in here and is set again for this job
        assert 4 < timer_left() <= 4.75


def test_the_next_job_is_still_interrupted_after_a_stale_timer_fired() -> None:
    with alarm_handler():
        with interrupt_after(0.1, "quick"):
            pass
        with pytest.raises(JobTimeoutError, match="second timed out after 0.5 seconds"):
            started = time.monotonic()
            with interrupt_after(0.5, "second"):
                time.sleep(3)  # the stale timer fires at 0.1 s, then again at 0.5 s
        assert 0.45 < time.monotonic() - started < 1.0


def test_a_timer_that_fires_with_no_job_armed_stays_off() -> None:
    with alarm_handler():
        with interrupt_after(0.1, "quick"):
            pass
        time.sleep(0.3)  # fires here, between jobs: nothing raised, nothing set again
        assert timer_left() == 0.0


def test_a_job_that_cancels_the_timer_does_not_disarm_later_jobs() -> None:
    with alarm_handler():
        with interrupt_after(0.3, "canceller"):
            signal.setitimer(signal.ITIMER_REAL, 0)  # the job's own code takes the timer away
        time.sleep(0.35)  # past the moment the worker expected the timer to fire
        with pytest.raises(JobTimeoutError, match="later timed out"):
            with interrupt_after(0.3, "later"):
                time.sleep(3)


def test_an_outer_deadline_still_holds_inside_a_longer_inner_block() -> None:
    with alarm_handler():
        with pytest.raises(JobTimeoutError, match="outer timed out after 0.3 seconds"):
            with interrupt_after(0.3, "outer"):
                with interrupt_after(30, "inner"):
                    time.sleep(3)


def test_without_the_worker_handler_the_timer_is_set_and_cleared_per_block() -> None:
    previous = signal.getsignal(signal.SIGALRM)
    with interrupt_after(60, "alone"):
        assert 59 < timer_left() <= 60
    assert timer_left() == 0.0
    assert signal.getsignal(signal.SIGALRM) is previous
    with pytest.raises(JobTimeoutError, match="alone timed out after 0.2 seconds"):
        with interrupt_after(0.2, "alone"):
            time.sleep(2)


def test_leaving_the_worker_handler_stops_the_timer() -> None:
    previous = signal.getsignal(signal.SIGALRM)
    with alarm_handler():
        with interrupt_after(60, "job"):
            pass
        assert timer_left() > 0
    assert timer_left() == 0.0
    assert signal.getsignal(signal.SIGALRM) is previous
