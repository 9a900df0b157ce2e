"""Dispatching: the verbs an app calls (``dispatch``, ``dispatch_many``, ``dispatch_sync``) and
the API the add-ons (``listeners``, ``notifications``, third-party channels) build on to queue
their own commands: :func:`make_payload` turns a registered command into a
:class:`~eventbus.payload.Payload`, a :class:`Destination` says where it goes, and
:func:`push_command` / :func:`push_payload` send it (emitting ``JobQueued``). A connection whose
driver runs jobs inline (``sync``) runs the job here, through the worker's rules, before the push
returns. Fakes (``eventbus.testing.fake_queue``) take pushes through :data:`push_interceptors`.

The wing, one concern a module:

- :mod:`~eventbus.dispatching.verbs`: ``dispatch`` and its family;
- :mod:`~eventbus.dispatching.payloads`: building a payload, and where it goes;
- :mod:`~eventbus.dispatching.plan`: how a push goes (fakes, bulk blocks, inline connections,
  unique locks, traces, ``JobQueued``), written once for the sync and the async verbs;
- :mod:`~eventbus.dispatching.pushing`: the sync runner of those plans, and what a finished
  job pushes (its chain's next step, its batch's callbacks);
- :mod:`~eventbus.dispatching.apush`: the async runner and the async verbs;
- :mod:`~eventbus.dispatching.collecting`: pushes held by a ``bulk_pushes`` block;
- :mod:`~eventbus.dispatching.unique`, :mod:`~eventbus.dispatching.debounce`,
  :mod:`~eventbus.dispatching.chains`, :mod:`~eventbus.dispatching.transactions`.

The names below are imported from their modules on first use: the worker imports
:mod:`~eventbus.dispatching.unique` and :mod:`~eventbus.dispatching.debounce`, and pushing
imports the worker's rules for inline jobs, so a package that imported everything at once
would import itself through the worker.

(The package is not named ``dispatch`` so that ``eventbus.dispatch`` stays the function.)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from eventbus.dispatching.verbs import condition_holds, dispatch, dispatch_if, dispatch_many, dispatch_sync, dispatch_unless, emit_many
    from eventbus.dispatching.collecting import BULK_FLUSH_EVERY, Collected, collecting_pushes, hold_for_bulk, take_collected
    from eventbus.dispatching.payloads import Destination, command_name, holds_until_commit, make_payload, option, refuse_timeout_beyond_reservation, with_headers
    from eventbus.dispatching.plan import fake_locks, intercepted, push_interceptors
    from eventbus.dispatching.pushing import after_failure, after_success, bulk_pushes, dispatch_next_in_chain, push_after_commit, push_collected, push_command, push_payload, push_raw, push_steps, push_unique, ran_already, run, run_inline, send

#: Each public name and the module that defines it.
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(['condition_holds', 'dispatch', 'dispatch_if', 'dispatch_many', 'dispatch_sync', 'dispatch_unless', 'emit_many'], "eventbus.dispatching.verbs"),
    **dict.fromkeys(['BULK_FLUSH_EVERY', 'Collected', 'collecting_pushes', 'hold_for_bulk', 'take_collected'], "eventbus.dispatching.collecting"),
    **dict.fromkeys(['Destination', 'command_name', 'holds_until_commit', 'make_payload', 'option', 'refuse_timeout_beyond_reservation', 'with_headers'], "eventbus.dispatching.payloads"),
    **dict.fromkeys(['fake_locks', 'intercepted', 'push_interceptors'], "eventbus.dispatching.plan"),
    **dict.fromkeys(['after_failure', 'after_success', 'bulk_pushes', 'dispatch_next_in_chain', 'push_after_commit', 'push_collected', 'push_command', 'push_payload', 'push_raw', 'push_steps', 'push_unique', 'ran_already', 'run', 'run_inline', 'send'], "eventbus.dispatching.pushing"),
}

__all__ = [
    "BULK_FLUSH_EVERY", "Collected", "Destination", "after_failure", "after_success", "bulk_pushes",
    "collecting_pushes", "command_name", "condition_holds", "dispatch", "dispatch_if",
    "dispatch_many", "dispatch_next_in_chain", "dispatch_sync", "dispatch_unless", "emit_many",
    "fake_locks", "hold_for_bulk", "holds_until_commit", "intercepted", "make_payload", "option",
    "push_after_commit", "push_collected", "push_command", "push_interceptors", "push_payload",
    "push_raw", "push_steps", "push_unique", "ran_already", "refuse_timeout_beyond_reservation",
    "run", "run_inline", "send", "take_collected", "with_headers",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # found once; later reads skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
