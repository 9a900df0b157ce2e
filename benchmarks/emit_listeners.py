"""The queued listener of ``emit.py``: importing this module registers it (a listener a worker
could run must live in a module, not in the script)."""

from __future__ import annotations

from bench_app import OrderShipped
from listeners import listener


@listener(queued=True)
def later(event: OrderShipped) -> None:
    pass
