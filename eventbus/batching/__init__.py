"""How batches keep their state and make their transitions (the user-facing API is
:mod:`eventbus.batches`).

- :mod:`~eventbus.batching.records`: what a store hands back, and batch references;
- :mod:`~eventbus.batching.rules`: the transition rules, as one function over a batch's state;
- :mod:`~eventbus.batching.repository`: the store seam and its in-memory implementation;
  :mod:`~eventbus.batching.redis` (Lua) and :mod:`~eventbus.batching.sql` (one transaction per
  step) the others; :mod:`~eventbus.batching.stores` picks one for a connection;
- :mod:`~eventbus.batching.outcomes`: what a batch does when one of its jobs finishes — the
  one place its transitions are made, and what a worker calls.
"""
