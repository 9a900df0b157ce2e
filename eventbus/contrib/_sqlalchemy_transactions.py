"""``after_commit`` pushes held by a SQLAlchemy session's transaction (session events).

When a session of a followed factory begins a transaction, an :class:`eventbus.dispatching.transactions.Hold`
opens in the current context; pushes marked ``after_commit`` made from then on wait in it. How
the transaction ends decides their fate:

- it commits: they go out (or move to an enclosing ``after_commit`` block or transaction);
- it rolls back, or the session is closed after it wrote (flushed) without committing: they are
  dropped, the data they would read never existed;
- it only read and the session is closed: nothing to wait for, they go out.

A savepoint (``begin_nested``) holds its own pushes: released into the enclosing transaction when
it is released, dropped when it is rolled back.

The hold lives in the context (thread, asyncio task) where the transaction began; the session's
work and its commit are expected there too, as in a request handler, a script or a job.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import event, orm

from eventbus.dispatching.transactions import Hold

_HOLDS = "eventbus.holds"
_COMMITTED = "eventbus.committed"
_ROLLED_BACK = "eventbus.rolled_back"
_WROTE = "eventbus.wrote"

_followed: list[Any] = []  # module-level: SQLAlchemy's event listeners are process-global too


def follow_transactions(target: Any) -> None:
    """Hold ``after_commit`` pushes for the transactions of ``target``'s sessions.

    ``target`` is a ``sessionmaker``, a ``scoped_session`` or a ``Session`` subclass (or the
    ``Session`` class itself, for every session of the process). Following it twice is harmless.
    """
    if any(target is seen for seen in _followed):
        return
    _followed.append(target)
    event.listen(target, "after_transaction_create", _opened)
    event.listen(target, "after_commit", _committed)
    event.listen(target, "after_rollback", _rolled_back)
    event.listen(target, "after_flush", _wrote)
    event.listen(target, "after_transaction_end", _ended)


def _holds(session: orm.Session) -> dict[orm.SessionTransaction, Hold]:
    holds: dict[orm.SessionTransaction, Hold] = session.info.setdefault(_HOLDS, {})
    return holds


def _opened(session: orm.Session, transaction: orm.SessionTransaction) -> None:
    if transaction.parent is not None and not transaction.nested:
        return  # an internal subtransaction (a flush): part of its parent
    holds = _holds(session)
    if transaction not in holds:
        holds[transaction] = Hold.open()


def _committed(session: orm.Session) -> None:
    session.info[_COMMITTED] = True


def _rolled_back(session: orm.Session) -> None:
    session.info[_ROLLED_BACK] = True


def _wrote(session: orm.Session, flush_context: Any) -> None:
    session.info[_WROTE] = True


def _ended(session: orm.Session, transaction: orm.SessionTransaction) -> None:
    hold = _holds(session).pop(transaction, None)
    if hold is None:
        return
    rolled_back = bool(session.info.pop(_ROLLED_BACK, False))
    if transaction.nested:
        hold.close(committed=not rolled_back)
        return
    committed = bool(session.info.pop(_COMMITTED, False))
    wrote = bool(session.info.pop(_WROTE, False))
    hold.close(committed=committed or not (rolled_back or wrote))
