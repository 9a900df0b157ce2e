"""Holding pushes until a database transaction commits (Laravel's ``afterCommit``).

Wrap the unit of work whose commit should release the jobs::

    with eventbus.after_commit():          # or: with eventbus.after_commit(), session.begin():
        order.ship()
        emit(OrderShipped(order.id))       # after_commit listeners are pushed on success only

Pushes marked ``after_commit`` inside the block are held and made when it exits normally, in
order, and dropped when it exits with an exception (the transaction rolled back, so the job would
see data that never existed). Outside such a block they are pushed at once. Blocks nest: the
outermost one releases.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

_local = threading.local()


def _pending() -> list[list[Callable[[], object]]]:
    stack: list[list[Callable[[], object]]] | None = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


@contextlib.contextmanager
def after_commit() -> Iterator[None]:
    """Hold ``after_commit`` pushes until this block exits without an exception."""
    stack = _pending()
    stack.append([])
    try:
        yield
    except BaseException:
        stack.pop()
        raise
    held = stack.pop()
    if stack:  # nested: the outer block decides
        stack[-1].extend(held)
        return
    for push in held:
        push()


def defer_if_in_transaction(push: Callable[[], object]) -> None:
    """Run ``push`` now, or hold it for the enclosing :func:`after_commit` block."""
    stack = _pending()
    if stack:
        stack[-1].append(push)
    else:
        push()
