"""eventbus.aio.PerLoop: one resource per event loop, closed on its loop whichever way the loop goes."""

from __future__ import annotations

import asyncio
import gc
import threading

from eventbus.aio import PerLoop


class Resource:
    """Something bound to the loop it was made on, like an async client."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.closed_on: asyncio.AbstractEventLoop | None = None

    async def aclose(self) -> None:
        await asyncio.sleep(0)
        self.closed_on = asyncio.get_running_loop()


def per_loop() -> PerLoop[Resource]:
    return PerLoop(Resource, Resource.aclose)


def test_a_loop_reuses_its_resource_and_closes_it_on_itself_when_asyncio_run_ends() -> None:
    holder = per_loop()

    async def use() -> Resource:
        first = await holder.get()
        assert await holder.get() is first
        return first

    resource = asyncio.run(use())
    assert resource.closed_on is resource.loop and holder.values() == []
    second = asyncio.run(use())
    assert second is not resource and holder.opened == 2


def test_loops_running_at_once_never_share_a_resource() -> None:
    holder = per_loop()
    made: list[Resource] = []
    together = threading.Barrier(3)

    async def use() -> None:
        made.append(await holder.get())
        await asyncio.to_thread(together.wait, 5)

    threads = [threading.Thread(target=asyncio.run, args=(use(),)) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len({id(r) for r in made}) == 3 and all(r.closed_on is r.loop for r in made)


def test_aclose_closes_this_loops_resource_and_the_next_get_makes_one() -> None:
    holder = per_loop()

    async def use() -> tuple[Resource, Resource]:
        first = await holder.get()
        await holder.aclose()
        assert first.closed_on is first.loop
        return first, await holder.get()

    first, second = asyncio.run(use())
    assert first is not second and holder.opened == 2


def test_close_from_sync_code_closes_on_each_loop() -> None:
    holder = per_loop()
    loop = asyncio.new_event_loop()
    try:
        resource = loop.run_until_complete(holder.get())
        holder.close()  # the loop is idle: closed at once, on it
        assert resource.closed_on is loop and holder.values() == []
    finally:
        loop.close()


def test_a_dropped_holder_closes_its_resource_on_the_running_loop() -> None:
    async def use() -> Resource:
        holder = per_loop()
        resource = await holder.get()
        del holder
        gc.collect()
        for _ in range(5):
            await asyncio.sleep(0)
        return resource

    resource = asyncio.run(use())
    assert resource.closed_on is resource.loop


def test_a_loop_closed_without_shutting_down_is_forgotten() -> None:
    holder = per_loop()
    loop = asyncio.new_event_loop()
    loop.run_until_complete(holder.get())
    loop.close()  # no shutdown_asyncgens: nothing could close the resource on it
    asyncio.run(holder.get())  # any later use forgets it
    assert holder.values() == []
