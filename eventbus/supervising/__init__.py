"""Supervisors: Horizon's ``horizon`` command for eventbus, ``eventbus supervise``.

A supervisor is a named group of worker processes on one connection's queues, declared with
``configure(supervisors={...})`` or in a TOML file (:mod:`~eventbus.supervising.options`). One
master process (:mod:`~eventbus.supervising.master`) runs every supervisor and moves processes
between their queues (:mod:`~eventbus.supervising.balancing`); it publishes what it runs in the
state store (:mod:`~eventbus.supervising.state`) for ``eventbus supervisors`` and the dashboard,
and reads ``eventbus terminate`` and ``eventbus supervise pause|continue`` back from there.

This package's ``__init__`` imports only the settings and the arithmetic: :mod:`eventbus.config`
checks ``configure(supervisors=...)`` without loading the master.
"""

from __future__ import annotations

from eventbus.supervising.balancing import QueueLoad, auto_counts, simple_counts
from eventbus.supervising.options import BALANCES, SupervisorOptions, checked_supervisors, load_toml

__all__ = ["BALANCES", "QueueLoad", "SupervisorOptions", "auto_counts", "checked_supervisors",
           "load_toml", "simple_counts"]
