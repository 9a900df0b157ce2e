"""emit, emit_until, aemit, wildcards, subscribers: the dispatch contract."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

import eventbus
from eventbus import Event, emit, emit_until, listen


@dataclasses.dataclass
class OrderEvent(Event):
    order_id: int


@dataclasses.dataclass
class OrderShipped(OrderEvent):
    carrier: str = "dhl"


def test_listeners_run_in_registration_order_across_the_mro() -> None:
    calls: list[str] = []
    listen(OrderShipped, lambda e: calls.append("a:shipped"))
    listen(OrderEvent, lambda e: calls.append("b:base"))
    listen(OrderShipped, lambda e: calls.append("c:shipped"))
    emit(OrderShipped(1))
    assert calls == ["a:shipped", "b:base", "c:shipped"]
    calls.clear()
    emit(OrderEvent(2))
    assert calls == ["b:base"]  # a base event does not reach subclass listeners


def test_emit_returns_results_and_false_halts() -> None:
    ran: list[int] = []
    listen(OrderShipped, lambda e: ran.append(1) or "one")
    listen(OrderShipped, lambda e: ran.append(2) or False)
    listen(OrderShipped, lambda e: ran.append(3) or "three")
    assert emit(OrderShipped(1)) == ["one"]
    assert ran == [1, 2]


def test_emit_until_returns_the_first_non_none_result() -> None:
    ran: list[int] = []
    listen(OrderShipped, lambda e: ran.append(1))
    listen(OrderShipped, lambda e: ran.append(2) or "answer")
    listen(OrderShipped, lambda e: ran.append(3) or "late")
    assert emit_until(OrderShipped(1)) == "answer"
    assert ran == [1, 2]


def test_an_exception_propagates_and_stops_the_rest() -> None:
    ran: list[int] = []

    def boom(e: OrderShipped) -> None:
        raise ValueError("listener broke")

    listen(OrderShipped, boom)
    listen(OrderShipped, lambda e: ran.append(1))
    with pytest.raises(ValueError, match="listener broke"):
        emit(OrderShipped(1))
    assert ran == []


def test_async_listeners_in_sync_emit_and_in_aemit() -> None:
    ran: list[str] = []

    async def slow(e: OrderShipped) -> str:
        await asyncio.sleep(0.01)
        ran.append("async")
        return "async done"

    listen(OrderShipped, slow)
    listen(OrderShipped, lambda e: ran.append("sync") or "sync done")
    assert emit(OrderShipped(1)) == ["async done", "sync done"]
    assert asyncio.run(eventbus.aemit(OrderShipped(2))) == ["async done", "sync done"]
    assert ran == ["async", "sync", "async", "sync"]


def test_sync_emit_of_an_async_listener_inside_a_running_loop_is_a_clear_error() -> None:
    async def a(e: OrderShipped) -> None:
        pass

    listen(OrderShipped, a)

    async def main() -> None:
        with pytest.raises(RuntimeError, match="use the async API"):
            emit(OrderShipped(1))

    asyncio.run(main())


def test_string_events_and_wildcards() -> None:
    calls: list[tuple] = []
    listen("order.shipped", lambda payload: calls.append(("exact", payload)))
    listen("order.*", lambda name, payload: calls.append(("wild", name, payload)))
    listen("user.*", lambda name, payload: calls.append(("other", name)))
    emit("order.shipped", {"id": 7})
    assert calls == [("exact", {"id": 7}), ("wild", "order.shipped", {"id": 7})]


def test_wildcards_match_event_class_names() -> None:
    seen: list[str] = []
    listen("test_events.Order*", lambda name, e: seen.append(name))
    emit(OrderShipped(1))
    assert seen == ["test_events.OrderShipped"]


def test_subscribers_register_several_listeners() -> None:
    class Audit:
        def __init__(self) -> None:
            self.seen: list[str] = []

        def on_shipped(self, e: OrderShipped) -> None:
            self.seen.append("shipped")

        def on_any(self, e: OrderEvent) -> None:
            self.seen.append("any")

        def subscribe(self, bus: eventbus.EventBus) -> None:
            bus.listen(OrderShipped, self.on_shipped)
            bus.listen(OrderEvent, self.on_any)

    audit = eventbus.subscribe(Audit)
    emit(OrderShipped(1))
    assert audit.seen == ["shipped", "any"]


def test_forget_removes_listeners() -> None:
    ran: list[int] = []
    listen(OrderShipped, lambda e: ran.append(1))
    eventbus.forget(OrderShipped)
    emit(OrderShipped(1))
    assert ran == [] and not eventbus.bus.has_listeners(OrderShipped)


def test_events_are_registered_for_payloads() -> None:
    from eventbus import registry
    assert registry.resolve("test_events.OrderShipped") is OrderShipped
