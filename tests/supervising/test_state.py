"""What a master publishes and the flags it reads, on the in-memory state store (the contract
suite holds every store to the same behaviour)."""

from __future__ import annotations

from eventbus.monitoring import pausing
from eventbus.state.base import MemoryStateStore
from eventbus.supervising.state import SupervisorRegistry, SupervisorState, request_termination, terminations


def test_a_paused_supervisor_and_a_paused_queue_of_the_same_name_stay_apart() -> None:
    store = MemoryStateStore()
    pausing.pause(store, "redis", "supervisor")
    pausing.pause(store, "redis", "a:b")
    pausing.pause_supervisor(store, "redis", "mail")
    assert pausing.paused_queues(store, "redis") == {"supervisor", "a:b"}
    assert pausing.paused_supervisors(store, "redis") == {"mail"}
    seen = pausing.PausedQueues(store, "redis")
    assert seen.current() == {"supervisor", "a:b"} and seen.supervisor_paused("mail")
    assert pausing.continue_supervisor(store, "redis", "mail")
    assert seen.current() == {"supervisor", "a:b"} and not seen.supervisor_paused("mail")
    assert not pausing.continue_supervisor(store, "redis", "mail")


def test_entries_round_trip_and_go_when_removed() -> None:
    store = MemoryStateStore()
    registry = SupervisorRegistry(store, "redis")
    state = SupervisorState(name="mail", connection="redis", host="web-1", pid=7, queues=("mail", "sms"),
                            balance=False, processes={"mail,sms": 3}, min_processes=1, max_processes=3)
    registry.publish([state])
    assert registry.supervisors() == [state]
    assert state.to_dict()["total_processes"] == 3 and state.master == "web-1:7"
    registry.remove(state)
    assert registry.supervisors() == []


def test_terminate_is_a_counter_a_master_compares() -> None:
    store = MemoryStateStore()
    before = terminations(store, "redis")
    request_termination(store, "redis")
    assert terminations(store, "redis") != before
    assert terminations(store, "database") is None
