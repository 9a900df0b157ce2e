"""The timeout interrupt (``eventbus.worker.timeouts``): a worker keeps the interval timer running while
it fires by a job's deadline and not much before it, and every job is still interrupted on time.

These run in the main thread with real ``SIGALRM`` timers; ``signal.getitimer`` shows what the
process's timer is set to.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from eventbus.errors import JobTimeoutError
from eventbus.worker.timeouts import alarm_handler, interrupt_after, stop_timer


def timer_left() -> float:
    return signal.getitimer(signal.ITIMER_REAL)[0]


@pytest.fixture(autouse=True)
def no_timer_left_behind():
    yield
    assert timer_left() == 0.0, "a test left the process's interval timer running"


def test_jobs_with_the_same_timeout_keep_the_running_timer() -> None:
    with alarm_handler():
        with interrupt_after(60, "first"):
            pass
        set_by_first = timer_left()
        assert 59 < set_by_first <= 60  # left running after the job: not cleared
        time.sleep(0.05)
        for _ in range(100):
            with interrupt_after(60, "next"):
                pass
        # not set again: it fires a little before each of those deadlines (less than a tenth
        # of the timeout), and the handler would move it on then
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
            time.sleep(0.4)  # the timer, due far before this deadline, was set again for it
        assert 4 < timer_left() <= 4.75


def test_a_timer_that_fires_early_is_set_again_for_the_deadline() -> None:
    with alarm_handler():
        with interrupt_after(1.96, "earlier"):
            pass
        time.sleep(0.05)
        with pytest.raises(JobTimeoutError, match="second timed out after 2 seconds"):
            started = time.monotonic()
            with interrupt_after(2, "second"):
                # the running timer is kept (due 0.09 s before this deadline, within a tenth):
                # it fires early, and the handler sets it again for the deadline
                assert timer_left() < 1.95
                time.sleep(5)
        assert 1.99 < time.monotonic() - started < 2.4


def test_a_timer_that_fires_with_no_job_armed_stays_off() -> None:
    with alarm_handler():
        with interrupt_after(0.1, "quick"):
            pass
        time.sleep(0.3)  # fires here, between jobs: nothing raised, nothing set again
        assert timer_left() == 0.0


def test_a_job_that_cancels_the_timer_does_not_disarm_the_next_one() -> None:
    with alarm_handler():
        with interrupt_after(0.3, "canceller"):
            signal.setitimer(signal.ITIMER_REAL, 0)  # the job's own code takes the timer away
        started = time.monotonic()
        with pytest.raises(JobTimeoutError, match="later timed out"):
            with interrupt_after(0.3, "later"):  # at once: the timer is read, not remembered
                time.sleep(3)
        assert time.monotonic() - started < 0.6


def test_a_job_that_leaves_its_own_handler_leaves_no_timer_running_for_it() -> None:
    fired: list[int] = []
    with alarm_handler():
        with interrupt_after(0.2, "replacer"):
            signal.signal(signal.SIGALRM, lambda signum, frame: fired.append(signum))
        assert timer_left() == 0.0
        time.sleep(0.3)
    assert fired == []


def test_an_alarm_whose_exit_was_cut_short_does_not_break_the_next_one() -> None:
    with alarm_handler():
        cut_short = interrupt_after(0.1, "cut short")
        cut_short.__enter__()
        with pytest.raises(JobTimeoutError):
            time.sleep(1)  # interrupted, and its __exit__ never runs
        with pytest.raises(JobTimeoutError, match="next timed out after 0.2 seconds"):
            with interrupt_after(0.2, "next"):
                time.sleep(2)


def test_the_worker_stops_the_timer_before_it_waits_for_work() -> None:
    with alarm_handler():
        with interrupt_after(60, "job"):
            pass
        assert timer_left() > 59
        stop_timer()
        assert timer_left() == 0.0


def test_a_forked_child_sets_its_own_timer() -> None:
    with alarm_handler():
        with interrupt_after(60, "parent's job"):
            pass  # the parent's timer runs on; a child does not inherit it
        pid = os.fork()
        if pid == 0:
            try:
                with interrupt_after(0.2, "child's job"):
                    time.sleep(2)
            except JobTimeoutError:
                os._exit(0)
            os._exit(1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        stop_timer()


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
