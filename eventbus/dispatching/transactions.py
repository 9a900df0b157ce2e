"""Holding pushes until a database transaction commits (Laravel's ``afterCommit``).

Wrap the unit of work whose commit should release the jobs::

    with eventbus.after_commit():          # or: with eventbus.after_commit(), session.begin():
        order.ship()
        emit(OrderShipped(order.id))       # after_commit listeners are pushed on success only
        dispatch(SendInvoice(order.id), after_commit=True)

Pushes marked ``after_commit`` (a listener or notification option, a job class attribute, or
``dispatch(..., after_commit=True)``) made inside the block are held and made when it exits
normally, in order, and dropped when it exits with an exception (the transaction rolled back, so
the job would see data that never existed). Outside such a block they are pushed at once. Blocks
nest: the outermost one releases.

The pending pushes live in a context variable, not a thread-local: under asyncio every task has
its own, so one request's rollback never drops another request's jobs.

Frameworks whose transactions have a commit callback of their own (Django's
``transaction.on_commit``) join in with :func:`hold_pushes_with`: a push marked ``after_commit``
that no block holds, and what a block releases, is offered to them first.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator

Push = Callable[[], object]
#: ``holder(push)`` returns True when it took ``push`` to run once its own transaction commits.
Holder = Callable[[Push], bool]
_holders: list[Holder] = []  # module-level: the ORM integrations install theirs once per process

# A ContextVar: pending pushes belong to a context, not to a configuration.
_pending: contextvars.ContextVar[tuple[list[Push], ...]] = contextvars.ContextVar(
    "eventbus_after_commit", default=())


@contextlib.contextmanager
def after_commit() -> Iterator[None]:
    """Hold ``after_commit`` pushes until this block exits without an exception."""
    held: list[Push] = []
    token = _pending.set((*_pending.get(), held))
    try:
        yield
    finally:
        _pending.reset(token)
    outer = _pending.get()
    if outer:  # nested: the outer block decides
        outer[-1].extend(held)
        return
    for push in held:
        _release(push)


class Hold:
    """Pushes held for one transaction that is not a ``with`` block (an ORM session's, say).

    Framework integrations open one when a transaction begins and close it when it commits or
    rolls back: ``hold = Hold.open()`` ... ``hold.close(committed=True)``. Inside it, pushes
    marked ``after_commit`` wait, exactly as inside :func:`after_commit`.
    """

    def __init__(self) -> None:
        self.pushes: list[Push] = []
        self.closed = False

    @classmethod
    def open(cls) -> Hold:
        hold = cls()
        _pending.set((*_pending.get(), hold.pushes))
        return hold

    def close(self, *, committed: bool) -> None:
        """Push what was held (``committed``) or drop it; an outer hold or block inherits it."""
        if self.closed:
            return
        self.closed = True
        stack = tuple(held for held in _pending.get() if held is not self.pushes)
        _pending.set(stack)
        if not committed:
            return
        if stack:
            stack[-1].extend(self.pushes)
            return
        for push in self.pushes:
            _release(push)


def in_after_commit_block() -> bool:
    return bool(_pending.get())


def hold_pushes_with(holder: Holder) -> Holder:
    """Offer ``after_commit`` pushes that no block holds to ``holder`` (a framework's own
    transactions): ``holder(push)`` returns True when it will run ``push`` on commit (and drop it
    on rollback), False to let it go out now. Holders are asked in registration order."""
    _holders.append(holder)
    return holder


def stop_holding_pushes_with(holder: Holder) -> None:
    if holder in _holders:
        _holders.remove(holder)


def _release(push: Push) -> None:
    """Push now, unless a framework transaction is still open around us and takes it."""
    for holder in list(_holders):
        if holder(push):
            return
    push()


def defer_if_in_transaction(push: Push) -> None:
    """Run ``push`` now, or hold it for the enclosing :func:`after_commit` block (or a
    framework transaction, see :func:`hold_pushes_with`)."""
    stack = _pending.get()
    if stack:
        stack[-1].append(push)
    else:
        _release(push)
