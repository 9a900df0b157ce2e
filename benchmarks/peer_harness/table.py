"""Medians over the repeated runs, and the table: each figure and its ratio to eventbus."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from peer_jobs import PeerSpec

NOT_APPLICABLE = "—"


def rate(value: float) -> str:
    return f"{value:,.0f}/s"


def ms(value: float) -> str:
    return f"{value * 1000:.1f}" if value < 0.1 else f"{value * 1000:.0f}"


class Summary:
    """One peer's runs: the median of each figure over the runs that produced it."""

    def __init__(self, spec: PeerSpec, runs: Sequence[dict[str, Any]]) -> None:
        self.spec = spec
        self.runs = runs
        first = next((r for r in runs if r.get("version")), runs[0] if runs else {})
        self.version = first.get("version", "")
        self.server = first.get("server", "")
        self.bulk_api = first.get("bulk_api", "")
        self.workers = first.get("workers", "")
        self.contended = [r["machine"] for r in runs if r.get("contended")]

    def values(self, metric: str) -> list[Any]:
        return [r["figures"][metric] for r in self.runs if metric in r.get("figures", {})]

    def median(self, metric: str, index: int | None = None) -> float | None:
        values = self.values(metric)
        if not values:
            return None
        return statistics.median(v[index] if index is not None else v for v in values)

    def error(self, metric: str) -> str | None:
        for r in self.runs:
            errors = r.get("errors", {})
            if "all" in errors or metric in errors:
                return str(errors.get("all") or errors[metric])
        return None

    def partial(self, metric: str) -> str:
        got = len(self.values(metric))
        return "" if got in (0, len(self.runs)) else f" [{got} of {len(self.runs)} runs]"


def ratio(value: float, base: float | None) -> str:
    return "" if base is None or base == 0 else f" ({value / base:.2f}x)"


def cell(summary: Summary, base: Summary | None, metric: str, applicable: bool, index: int | None = None) -> str:
    if not applicable:
        return NOT_APPLICABLE
    value = summary.median(metric, index)
    if value is None:
        return f"n/a ({summary.error(metric) or 'not run'})"
    reference = None if base is None or base is summary else base.median(metric, index)
    return rate(value) + ratio(value, reference) + summary.partial(metric)


def latency_cell(summary: Summary, base: Summary | None, applicable: bool) -> str:
    if not applicable:
        return NOT_APPLICABLE
    p50, p99 = summary.median("latency", 0), summary.median("latency", 1)
    if p50 is None or p99 is None:
        return f"n/a ({summary.error('latency') or 'not run'})"
    text = f"{ms(p50)} / {ms(p99)} ms"
    if base is not None and base is not summary:
        b50, b99 = base.median("latency", 0), base.median("latency", 1)
        if b50 and b99:
            text += f" ({p50 / b50:.2f}x / {p99 / b99:.2f}x)"
    return text + summary.partial("latency")


def render(summaries: Sequence[Summary], metrics: Sequence[str], processes: int) -> str:
    """A Markdown table: one row per peer, the first eventbus row as the base of the ratios."""
    base = next((s for s in summaries if s.spec.name.startswith("eventbus")), None)
    redis = bool(summaries) and summaries[0].spec.backend == "redis"
    columns = [("dispatch", "dispatch, one call per job"), ("bulk", "bulk"),
               ("drain", f"drain, {processes} worker processes"),
               ("drain+start", "drain incl. worker start")]
    if redis:
        columns.append(("latency", "idle-worker latency p50 / p99"))
    columns = [c for c in columns if c[0].split("+")[0] in metrics]
    lines = ["| peer | " + " | ".join(title for _, title in columns) + " |",
             "|---" * (len(columns) + 1) + "|"]
    for s in summaries:
        cells = []
        for key, _ in columns:
            applicable = key in ("dispatch", "latency") or not s.spec.floor
            if key == "latency":
                cells.append(latency_cell(s, base, applicable))
            elif key.startswith("drain"):
                cells.append(cell(s, base, "drain", applicable, 1 if key == "drain+start" else 0))
            else:
                cells.append(cell(s, base, key, applicable))
        name = (f"bare {s.version} loops (floor: EVALSHA push, BLPOP worker)" if s.spec.floor
                else f"{s.spec.name} {s.version}".strip())
        name += " ~" if s.contended else ""
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def notes(summaries: Sequence[Summary]) -> str:
    """What each peer's bulk call and workers were, and which runs were contended."""
    lines = []
    for s in summaries:
        if s.spec.floor:
            continue
        lines.append(f"- {s.spec.name}: bulk = {s.bulk_api or '?'}; workers = {s.workers or '?'}")
    contended = [f"{s.spec.name} {len(s.contended)} of {len(s.runs)}" for s in summaries if s.contended]
    if contended:
        lines.append("- ~ runs on a busy machine (other work over the threshold before or during the run; "
                     "see --json for each): " + ", ".join(contended))
    return "\n".join(lines)


def targets(summaries: dict[str, Summary]) -> list[str]:
    """The issue's goals, checked against this run's medians (skipped where a figure is missing)."""
    def m(name: str, metric: str, index: int | None = None) -> float | None:
        s = summaries.get(name)
        return None if s is None else s.median(metric, index)

    checks: list[tuple[str, float | None, float | None]] = [
        ("drain, 2 processes >= 2x Huey", m("eventbus", "drain", 0), _times(m("huey", "drain", 0), 2)),
        ("dispatch >= Huey", m("eventbus", "dispatch"), m("huey", "dispatch")),
        ("dispatch >= 90% of the EVALSHA loop", m("eventbus", "dispatch"),
         _times(m("redis-py EVALSHA loop", "dispatch"), 0.9)),
        ("bulk >= 5x Huey's map", m("eventbus", "bulk"), _times(m("huey", "bulk"), 5)),
        ("PostgreSQL drain >= best SQL peer", m("eventbus-pg", "drain", 0),
         max((v for v in (m("procrastinate", "drain", 0), m("pgqueuer", "drain", 0)) if v), default=None)),
    ]
    lines = [f"- {'met' if got >= want else 'NOT met'}: {label} ({rate(got)} vs {rate(want)})"
             for label, got, want in checks if got is not None and want is not None]
    p50, p99, huey50 = m("eventbus", "latency", 0), m("eventbus", "latency", 1), m("huey", "latency", 0)
    if p50 is not None and huey50 is not None:
        lines.append(f"- {'met' if p50 <= huey50 else 'NOT met'}: latency p50 <= Huey's "
                     f"({ms(p50)} vs {ms(huey50)} ms)")
    if p50 is not None and p99 is not None:
        floor50, floor99 = m("redis-py EVALSHA loop", "latency", 0), m("redis-py EVALSHA loop", "latency", 1)
        machine = (f"; the bare BLPOP loop's own p99 is {floor99 / floor50:.2f}x its p50"
                   if floor50 and floor99 else "")
        lines.append(f"- {'met' if p99 <= 2 * p50 else 'NOT met'}: latency p99 <= 2x own p50 "
                     f"({ms(p99)} vs {ms(2 * p50)} ms{machine})")
    return lines


def _times(value: float | None, factor: float) -> float | None:
    return None if value is None else value * factor
