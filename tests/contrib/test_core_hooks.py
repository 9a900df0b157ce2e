"""The three core hooks the integrations stand on: job scopes, framework holds, runtime.close()."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

import eventbus
from eventbus import runtime
from eventbus.dispatching import transactions
from eventbus.serializer import register_model
from eventbus.testing import fake_queue

LOG: list[str] = []


class Widget:
    """A model whose loads say whether a job scope was open around them."""

    def __init__(self, key: int) -> None:
        self.key = key


register_model(Widget, key=lambda w: w.key,
               load=lambda cls, key: (LOG.append(f"load {key}"), Widget(key))[1] if key else None)


class UsesWidget(eventbus.Job):
    tries = 1

    def __init__(self, widget: Widget, fail: bool = False) -> None:
        self.widget = widget
        self.fail_now = fail

    def handle(self) -> None:
        LOG.append(f"handle {self.widget.key}")
        if self.fail_now:
            raise RuntimeError("boom")

    def failed(self, exc: BaseException) -> None:
        LOG.append("failed")


def scope(name: str) -> Any:
    @contextlib.contextmanager
    def enter() -> Iterator[None]:
        LOG.append(f"{name}>")
        try:
            yield
        finally:
            LOG.append(f"<{name}")
    return enter


@pytest.fixture
def scopes() -> Iterator[list[Any]]:
    LOG.clear()
    added = [scope("outer"), scope("inner")]
    for s in added:
        runtime.around_jobs(s)
    yield added
    for s in added:
        runtime.forget_around_jobs(s)


def test_a_job_is_decoded_and_run_inside_the_scopes_outermost_first(scopes: list[Any]) -> None:
    eventbus.dispatch(UsesWidget(Widget(3)), connection="sync")
    assert LOG == ["outer>", "inner>", "load 3", "handle 3", "<inner", "<outer"]


def test_the_failed_hook_gets_a_scope_of_its_own(scopes: list[Any]) -> None:
    with pytest.raises(RuntimeError):
        eventbus.dispatch(UsesWidget(Widget(4), fail=True), connection="sync")
    assert LOG == ["outer>", "inner>", "load 4", "handle 4", "<inner", "<outer",
                   "outer>", "inner>", "load 4", "failed", "<inner", "<outer"]


def test_a_forgotten_scope_is_left_out(scopes: list[Any]) -> None:
    runtime.forget_around_jobs(scopes[0])
    runtime.forget_around_jobs(scopes[0])  # twice changes nothing
    eventbus.dispatch(UsesWidget(Widget(5)), connection="sync")
    assert LOG == ["inner>", "load 5", "handle 5", "<inner"]


class Invoice(eventbus.Job):
    after_commit = True

    def handle(self) -> None: ...


@pytest.fixture
def framework_transaction() -> Iterator[list[Any]]:
    """A stand-in framework whose transaction is open while the list is not None."""
    state: dict[str, Any] = {"open": None}

    def holder(push: Any) -> bool:
        if state["open"] is None:
            return False
        state["open"].append(push)
        return True

    transactions.hold_pushes_with(holder)
    yield state  # type: ignore[misc]
    transactions.stop_holding_pushes_with(holder)


def test_a_framework_holds_after_commit_pushes_made_in_its_transaction(framework_transaction: Any) -> None:
    with fake_queue() as queue:
        framework_transaction["open"] = []
        Invoice().dispatch()
        eventbus.dispatch(Invoice(), after_commit=False)     # not marked: goes at once
        assert len(queue.pushed) == 1
        held, framework_transaction["open"] = framework_transaction["open"], None
        for push in held:                                     # the framework commits
            push()
        assert len(queue.pushed) == 2
        Invoice().dispatch()                                  # no transaction: at once
        assert len(queue.pushed) == 3


def test_what_a_block_releases_still_waits_for_the_framework_transaction(framework_transaction: Any) -> None:
    with fake_queue() as queue:
        framework_transaction["open"] = []
        with eventbus.after_commit():
            Invoice().dispatch()
            assert framework_transaction["open"] == []        # the block holds it first
        assert queue.pushed == [] and len(framework_transaction["open"]) == 1
        hold = transactions.Hold.open()
        Invoice().dispatch()
        hold.close(committed=True)
        assert queue.pushed == [] and len(framework_transaction["open"]) == 2


def test_close_keeps_the_settings_and_builds_connections_again() -> None:
    eventbus.configure(default="null")
    before = eventbus.connection()
    runtime.close()
    assert eventbus.settings().default == "null"
    assert eventbus.connection() is not before
