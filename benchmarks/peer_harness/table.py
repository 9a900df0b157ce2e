"""Medians over the repeated runs, and the table: each figure and its ratio to eventbus's, the best
concurrency setting of each peer, who acknowledges after the job, and issue 29's targets."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from typing import Any

from peer_jobs import AT_LEAST_ONCE, PeerSpec

NOT_APPLICABLE = "—"
DEFAULTS = "defaults"
ASYNC_NATIVE = ("arq", "saq", "streaq", "taskiq")  # issue 29's async-native peers
SQL_PEERS = ("procrastinate", "pgqueuer", "oban")


def rate(value: float) -> str:
    return f"{value:,.0f}/s"


def ms(value: float) -> str:
    return f"{value * 1000:.2f}" if value < 0.01 else f"{value * 1000:.1f}" if value < 0.1 else f"{value * 1000:.0f}"


def size(value: float) -> str:
    return f"{value:,.0f} B"


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
        self.default_setting = first.get("default_setting", "")
        self.settings: list[str] = first.get("settings", [])
        self.async_setting = first.get("async_setting_label", "")
        self.python = first.get("python", "")
        self.contended = [r["machine"] for r in runs if r.get("contended")]

    def values(self, metric: str) -> list[Any]:
        return [r["figures"][metric] for r in self.runs if metric in r.get("figures", {})]

    def median(self, metric: str, index: int | None = None) -> float | None:
        values = self.values(metric)
        if not values:
            return None
        # a figure saved by an older version may be a bare number where a list is read now
        return statistics.median(v[index] if index is not None and isinstance(v, list) else v for v in values)

    def at_setting(self, label: str, index: int) -> float | None:
        """The median drain figure ``index`` at setting ``label`` (``DEFAULTS``: the plain drain)."""
        if label == DEFAULTS:
            return self.median("drain", index)
        values = [r["figures"]["drain_at"][label][index] for r in self.runs
                  if isinstance(r.get("figures", {}).get("drain_at", {}).get(label), list)]
        return statistics.median(values) if values else None

    def best(self, index: int = 0) -> tuple[str, float] | None:
        """(setting, median) of the setting with the highest median drain figure ``index``."""
        found = [(label, value) for label in (DEFAULTS, *self.settings)
                 if (value := self.at_setting(label, index)) is not None]
        return max(found, key=lambda pair: pair[1]) if found else None

    def run_twice(self) -> int:
        """Jobs run more than once in all of the peer's drains (the counter beyond N)."""
        total = 0
        for r in self.runs:
            figures = r.get("figures", {})
            drains = [figures.get("drain"), figures.get("async"), *figures.get("drain_at", {}).values()]
            total += sum(d[-1] for d in drains if isinstance(d, list) and len(d) in (2, 4))
        return total

    def error(self, metric: str) -> str | None:
        for r in self.runs:
            errors = r.get("errors", {})
            if "all" in errors or metric in errors:
                return str(errors.get("all") or errors[metric])
        if metric == "best":
            for r in self.runs:
                for value in r.get("figures", {}).get("drain_at", {}).values():
                    if isinstance(value, str):
                        return value
        return None

    def partial(self, metric: str) -> str:
        got = len(self.values(metric))
        return "" if got in (0, len(self.runs)) else f" [{got} of {len(self.runs)} runs]"


def ratio(value: float, base: float | None) -> str:
    return "" if base is None or base == 0 else f" ({value / base:.2f}x)"


def missing(summary: Summary, metric: str) -> str:
    return f"n/a ({summary.error(metric) or 'not run'})"


def figure_cell(summary: Summary, base: Summary | None, metric: str, show: Callable[[float], str],
                index: int | None = None) -> str:
    value = summary.median(metric, index)
    if value is None:
        return missing(summary, metric)
    reference = None if base is None or base is summary else base.median(metric, index)
    return show(value) + ratio(value, reference) + summary.partial(metric)


def best_cell(summary: Summary, base: Summary | None) -> str:
    best = summary.best()
    if best is None:
        return missing(summary, "best")
    label, value = best
    reference = None if base is None or base is summary else (base.best() or (None, None))[1]
    where = "its defaults" if label == DEFAULTS else label
    failed = sorted({tried for r in summary.runs
                     for tried, got in r.get("figures", {}).get("drain_at", {}).items() if isinstance(got, str)})
    return f"{rate(value)}{ratio(value, reference)} at {where}" + (f" [failed: {', '.join(failed)}]" if failed else "")


def start_cell(summary: Summary, base: Summary | None) -> str:
    text = figure_cell(summary, base, "drain", rate, 1)
    first = summary.median("drain", 2)
    return text if first is None else f"{text}, first job {first:.2f} s"


def latency_cell(summary: Summary, base: Summary | None) -> str:
    p50, p99 = summary.median("latency", 0), summary.median("latency", 1)
    if p50 is None or p99 is None:
        return missing(summary, "latency")
    text = f"{ms(p50)} / {ms(p99)} ms"
    if base is not None and base is not summary:
        b50, b99 = base.median("latency", 0), base.median("latency", 1)
        if b50 and b99:
            text += f" ({p50 / b50:.2f}x / {p99 / b99:.2f}x)"
    return text + summary.partial("latency")


def delivery_cell(summary: Summary) -> str:
    """What becomes of a job whose worker dies while running it: run again, or lost."""
    return summary.spec.delivery if summary.spec.delivery == AT_LEAST_ONCE else f"**{summary.spec.delivery}**"


#: (key, title, applies to the backend); each key's cell is made by ``cell`` below.
COLUMNS = (
    ("dispatch", "dispatch, one call per job", ("redis", "postgres")),
    ("bulk", "bulk", ("redis", "postgres")),
    ("drain", "drain, {processes} processes, defaults", ("redis", "postgres")),
    ("best", "drain at its best setting", ("redis", "postgres")),
    ("start", "drain incl. start", ("redis", "postgres")),
    ("latency", "idle latency p50 / p99", ("redis",)),
    ("memory", "Redis memory a queued job", ("redis",)),
    ("async", "async I/O, 1 process x 50", ("redis",)),
    ("delivery", "a job whose worker dies", ("redis", "postgres")),
)
NEEDS = {"start": "drain", "delivery": ""}


def cell(key: str, s: Summary, base: Summary | None) -> str:
    if key == "delivery":
        return delivery_cell(s)
    if key == "bulk" and s.bulk_api.startswith("n/a") and s.median("bulk") is None:
        return NOT_APPLICABLE
    if key == "async" and not s.spec.async_native:
        return NOT_APPLICABLE
    if key == "best":
        return NOT_APPLICABLE if s.spec.floor else best_cell(s, base)
    if key == "start":
        return start_cell(s, base)
    if key == "latency":
        return latency_cell(s, base)
    if key == "memory":
        return figure_cell(s, base, "memory", size, 0)
    if key == "async":
        return figure_cell(s, base, "async", rate, 0)
    text = figure_cell(s, base, key, rate, 0 if key == "drain" else None)
    twice = s.run_twice() if key == "drain" else 0
    return text + (f" [{twice} job{'s' if twice > 1 else ''} ran twice]" if twice else "")


def render(summaries: Sequence[Summary], metrics: Sequence[str], processes: int) -> str:
    """A Markdown table: one row per peer, the first eventbus row as the base of the ratios."""
    base = next((s for s in summaries if s.spec.name.startswith("eventbus")), None)
    backend = summaries[0].spec.backend if summaries else "redis"
    columns = [(key, title.format(processes=processes)) for key, title, backends in COLUMNS
               if backend in backends and NEEDS.get(key, key) in (*metrics, "")]
    lines = ["| peer | " + " | ".join(title for _, title in columns) + " |",
             "|---" * (len(columns) + 1) + "|"]
    for s in summaries:
        name = (f"bare {s.version} (floor)" if s.spec.floor else f"{s.spec.name} {s.version}".strip())
        name += " ~" if s.contended else ""
        lines.append(f"| {name} | " + " | ".join(cell(key, s, base) for key, _ in columns) + " |")
    return "\n".join(lines)


def notes(summaries: Sequence[Summary], python: str) -> str:
    """What each peer's bulk call, workers and settings were, how it acknowledges, and which runs
    were contended (``python``: the harness's version, named where a peer ran on another)."""
    lines = []
    for s in summaries:
        other = f" (Python {s.python})" if s.python and s.python != python else ""
        tried = f"; also tried: {', '.join(f'`{label}`' for label in s.settings)}" if s.settings else ""
        concurrency = f" ({s.default_setting})" if s.default_setting else ""
        bulk = f"bulk = {s.bulk_api}; " if s.bulk_api and not s.bulk_api.startswith("n/a") else ""
        asynchronous = f"; async I/O at {s.async_setting}" if s.spec.async_native and s.async_setting else ""
        lines.append(f"- {s.spec.name}{other}: {bulk}workers = {s.workers or '?'}{concurrency}{tried}{asynchronous}")
    lines.append("- delivery: " + "; ".join(f"{s.spec.name}: {s.spec.delivery}, {s.spec.acks}"
                                        for s in summaries if s.spec.acks))
    contended = [f"{s.spec.name} {len(s.contended)} of {len(s.runs)}" for s in summaries if s.contended]
    if contended:
        lines.append("- ~ runs on a busy machine (other work over the threshold before or during the run; "
                     "see --json for each): " + ", ".join(contended))
    return "\n".join(lines)
