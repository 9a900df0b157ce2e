"""FastAPI / Starlette: adispatch and aemit never block the loop, the lifespan, the dependency,
the dashboard mount."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import redis
from fastapi import FastAPI

import eventbus
from eventbus import dispatching, runtime
from eventbus.contrib.fastapi import (
    AsyncBus,
    EventBusDep,
    adispatch,
    adispatch_many,
    aemit,
    get_eventbus,
    lifespan,
    mount_dashboard,
)
from eventbus.errors import ConfigurationError, MissingDependencyError
from eventbus.testing import fake_queue
from listeners import listener

THREADS: list[str] = []


class Ping(eventbus.Job):
    def __init__(self, n: int = 0) -> None:
        self.n = n

    def handle(self) -> None: ...


@dataclasses.dataclass
class Shipped(eventbus.Event):
    order_id: int


@pytest.fixture
def slow_pushes() -> Iterator[list[str]]:
    """Every push takes 0.3 s (a slow queue server) and records the thread it was made on."""
    def slow(command: Any, destination: Any, payload: Any) -> bool:
        time.sleep(0.3)
        THREADS.append(threading.current_thread().name)
        return False

    THREADS.clear()
    dispatching.push_interceptors.append(slow)
    yield THREADS
    dispatching.push_interceptors.remove(slow)


async def ticking_while(work: Any) -> tuple[Any, int]:
    """Await ``work`` while a task ticks every 10 ms; return its result and the ticks seen."""
    ticks = 0
    done = asyncio.Event()

    async def ticker() -> None:
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            await asyncio.sleep(0.01)

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    try:
        result = await work
    finally:
        done.set()
        await task
    return result, ticks


def test_adispatch_pushes_off_the_loop_while_the_loop_keeps_serving(
        use_redis: redis.Redis, slow_pushes: list[str]) -> None:
    uuid, ticks = asyncio.run(ticking_while(adispatch(Ping(1), queue="web")))
    assert ticks >= 10                                # the loop ran during the 0.3 s push
    assert slow_pushes == [slow_pushes[0]] and slow_pushes[0] != threading.current_thread().name
    assert eventbus.connection().size("web") == 1
    uuids, _ = asyncio.run(ticking_while(adispatch_many([Ping(2), Ping(3)], queue="web")))
    assert len(uuids) == 2 and eventbus.connection().size("web") == 3


def test_aemit_awaits_listeners_in_the_loop_and_pushes_queued_ones_off_it(
        use_redis: redis.Redis, slow_pushes: list[str]) -> None:
    ran_in: list[str] = []

    @listener
    async def audit(event: Shipped) -> str:
        ran_in.append(threading.current_thread().name)
        return "audited"

    @listener(queued=True, queue="mail")
    def send_mail(event: Shipped) -> None: ...

    results, ticks = asyncio.run(ticking_while(aemit(Shipped(7))))
    assert results[0] == "audited" and ran_in == [threading.current_thread().name]
    assert ticks >= 10 and slow_pushes[0] != threading.current_thread().name
    assert eventbus.connection().size("mail") == 1


def test_aemit_still_pushes_what_was_queued_before_a_listener_raised(use_redis: redis.Redis) -> None:
    @listener(queued=True, queue="mail")
    def send_mail(event: Shipped) -> None: ...

    @listener
    def broken(event: Shipped) -> None:
        raise RuntimeError("broken listener")

    with pytest.raises(RuntimeError):
        asyncio.run(aemit(Shipped(7)))
    assert eventbus.connection().size("mail") == 1


def test_the_async_verbs_honour_after_commit_blocks_and_fakes() -> None:
    class Invoice(Ping):
        after_commit = True

    async def ship(fail: bool) -> None:
        with eventbus.after_commit():
            await adispatch(Invoice())
            assert queue.pushed == []
            if fail:
                raise ValueError("rolled back")

    with fake_queue() as queue:
        with pytest.raises(ValueError):
            asyncio.run(ship(fail=True))
        assert queue.pushed == []
        asyncio.run(ship(fail=False))
        assert len(queue.pushed) == 1


def test_the_lifespan_configures_builds_the_connection_and_closes_it(tmp_path: Any) -> None:
    entered: list[str] = []

    @contextlib.asynccontextmanager
    async def own(app: Any) -> AsyncIterator[dict[str, str]]:
        entered.append("own")
        yield {"from": "own lifespan"}
        entered.append("own closed")

    async def run() -> tuple[Any, Any]:
        async with lifespan({"default": "null"}, then=own)(object()) as state:
            during = runtime.connection()
            assert eventbus.settings().default == "null" and state == {"from": "own lifespan"}
        return during, runtime.connection()

    during, after = asyncio.run(run())
    assert entered == ["own", "own closed"]
    assert after is not during                         # closed at shutdown, built again on use
    assert eventbus.settings().default == "null"       # the settings stay


def test_a_bad_setting_stops_the_start() -> None:
    async def start() -> None:
        async with lifespan({"default": "nowhere"})(object()):
            pass

    with pytest.raises(ConfigurationError, match="nowhere"):
        asyncio.run(start())


def make_app() -> FastAPI:
    app = FastAPI()

    @app.post("/ping/{n}")
    async def ping(n: int, bus: EventBusDep) -> dict[str, str]:
        return {"uuid": await bus.dispatch(Ping(n), queue="web")}

    return app


def post(app: FastAPI, path: str) -> httpx.Response:
    async def call() -> httpx.Response:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                     base_url="http://shop.test") as client:
            return await client.post(path)

    return asyncio.run(call())


def test_a_route_queues_through_the_dependency(use_redis: redis.Redis) -> None:
    response = post(make_app(), "/ping/3")
    assert response.status_code == 200 and len(response.json()["uuid"]) == 36
    assert eventbus.connection().size("web") == 1


def test_tests_replace_the_dependency(use_redis: redis.Redis) -> None:
    class Recording(AsyncBus):
        def __init__(self) -> None:
            self.jobs: list[Any] = []

        async def dispatch(self, job: Any, **options: Any) -> str:
            self.jobs.append(job)
            return "recorded"

    app, recording = make_app(), Recording()
    app.dependency_overrides[get_eventbus] = lambda: recording
    assert post(app, "/ping/4").json() == {"uuid": "recorded"}
    assert [job.n for job in recording.jobs] == [4] and eventbus.connection().size("web") == 0


def test_the_dashboard_mounts_under_a_path_when_there_is_one() -> None:
    app = FastAPI()
    try:
        import eventbus.dashboard  # noqa: F401
    except ModuleNotFoundError:
        with pytest.raises(MissingDependencyError, match="no dashboard"):
            mount_dashboard(app, "/eventbus")
        return
    mount_dashboard(app, "/eventbus")
    assert any(getattr(route, "path", None) == "/eventbus" for route in app.routes)
