"""Issue 29's targets, checked against one run's medians: one line each, met or MISSED, with the
figures it was decided on. A target whose figures are missing from the run is skipped.

eventbus is read at its defaults (``eventbus work --processes 2``); every peer at its best setting.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable

from peer_harness.table import ASYNC_NATIVE, DEFAULTS, SQL_PEERS, Summary, ms, rate, size

EVENTBUS, EVENTBUS_PG, FLOOR, PG_FLOOR = "eventbus", "eventbus-pg", "redis-py loops", "psycopg-loops"
FIRST_JOB_S = 0.25


def check(summaries: dict[str, Summary]) -> list[str]:
    """The lines of the targets block (empty when the run measured nothing they need)."""
    ours, floor = summaries.get(EVENTBUS), summaries.get(FLOOR)
    peers = [s for s in summaries.values()
             if s.spec.backend == "redis" and not s.spec.floor and s.spec.name != EVENTBUS]
    lines: list[str | None] = []
    if ours is not None:
        lines += [
            _at_most("start: first job within 0.25 s of launching 2 worker processes",
                     ours.median("drain", 2), FIRST_JOB_S, lambda v: f"{v:.2f} s"),
            _versus("drain incl. start >= 1.3x the best peer's", ours.median("drain", 1),
                    _best_setting(peers, 1), 1.3, rate),
            _versus("drain, start excluded, >= 1.3x the best peer at its best setting",
                    ours.median("drain", 0), _best_setting(peers, 0), 1.3, rate),
            _versus("bulk >= 0.8x the pipelined floor", ours.median("bulk"),
                    _of(floor, "bulk"), 0.8, rate),
            _versus("dispatch, one call per job, >= the floor", ours.median("dispatch"),
                    _of(floor, "dispatch"), 1.0, rate),
            _at_most("idle latency p99 <= the best peer's p99", ours.median("latency", 1),
                     _lowest(peers, lambda s: s.median("latency", 1)), lambda v: f"{ms(v)} ms"),
            _at_most("idle latency p50 <= 1.2x the floor's", ours.median("latency", 0),
                     _of(floor, "latency", 0, factor=1.2), lambda v: f"{ms(v)} ms"),
            _versus("async I/O >= 1.2x the best async-native peer (arq, saq, streaQ, taskiq)",
                    ours.median("async", 0),
                    _best([s for s in peers if s.spec.name in ASYNC_NATIVE], lambda s: s.median("async", 0)),
                    1.2, rate),
            _at_most("Redis memory a queued job <= the median peer's", ours.median("memory", 0),
                     _median(peers, lambda s: s.median("memory", 0)), size),
        ]
    pg = summaries.get(EVENTBUS_PG)
    if pg is not None:
        sql = [s for s in summaries.values() if s.spec.name in SQL_PEERS]
        lines.append(_versus("PostgreSQL drain >= 1.5x the best of procrastinate, PgQueuer, oban",
                             pg.median("drain", 0), _best_setting(sql, 0), 1.5, rate))
        floor_drain = _of(summaries.get(PG_FLOOR), "drain", 0)
        if floor_drain is not None and pg.median("drain", 0):
            lines.append(f"- for scale: the PostgreSQL floor (the row taken, the job's UPDATE and the commit in "
                         f"one transaction) drained {rate(floor_drain[1])}; eventbus-pg "
                         f"{pg.median('drain', 0) / floor_drain[1]:.2f}x of it")
    return [line for line in lines if line is not None]


Reference = tuple[str, float] | None  # (whose figure, the figure)


def _versus(label: str, ours: float | None, theirs: Reference, factor: float,
            show: Callable[[float], str]) -> str | None:
    if ours is None or theirs is None:
        return None
    who, value = theirs
    verdict = "met" if ours >= factor * value else "MISSED"
    return f"- {verdict}: {label}: {show(ours)} against {show(value)} ({who}), {ours / value:.2f}x"


def _at_most(label: str, ours: float | None, limit: Reference | float | None,
             show: Callable[[float], str]) -> str | None:
    if ours is None or limit is None:
        return None
    who, value = ("", limit) if isinstance(limit, float) else limit
    verdict = "met" if ours <= value else "MISSED"
    return f"- {verdict}: {label}: {show(ours)}, limit {show(value)}" + (f" ({who})" if who else "")


def _best_setting(group: Iterable[Summary], index: int) -> Reference:
    """The highest drain figure ``index`` of any peer at any of its settings, and whose it is."""
    found = [(s.spec.name if label == DEFAULTS else f"{s.spec.name} at {label}", value)
             for s in group if (best := s.best(index)) is not None for label, value in [best]]
    return max(found, key=lambda pair: pair[1]) if found else None


def _best(group: Iterable[Summary], figure: Callable[[Summary], float | None]) -> Reference:
    found = [(s.spec.name, v) for s in group if (v := figure(s)) is not None]
    return max(found, key=lambda pair: pair[1]) if found else None


def _lowest(group: Iterable[Summary], figure: Callable[[Summary], float | None]) -> Reference:
    found = [(s.spec.name, v) for s in group if (v := figure(s)) is not None]
    return min(found, key=lambda pair: pair[1]) if found else None


def _median(group: Iterable[Summary], figure: Callable[[Summary], float | None]) -> Reference:
    found = [v for s in group if (v := figure(s)) is not None]
    return (f"median of {len(found)} peers", statistics.median(found)) if found else None


def _of(summary: Summary | None, metric: str, index: int | None = None, *, factor: float = 1.0) -> Reference:
    """``summary``'s median ``metric`` (times ``factor``), named, if the run has it."""
    value = None if summary is None else summary.median(metric, index)
    return None if summary is None or value is None else (summary.spec.name, value * factor)
