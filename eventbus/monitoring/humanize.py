"""Numbers and times as people read them, shared by the CLI and the dashboard."""

from __future__ import annotations

import datetime as dt
import math


def duration(seconds: float | None) -> str:
    """``850ms``, ``4.2s``, ``12s``, ``4m 05s``, ``2h 10m``; ``-`` for nothing."""
    if seconds is None or not math.isfinite(seconds):
        return "-"
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 60:
        return f"{seconds:.1f}s" if seconds < 10 else f"{seconds:.0f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def clock(at: float) -> str:
    """A local wall-clock time, to the second."""
    return dt.datetime.fromtimestamp(at).strftime("%Y-%m-%d %H:%M:%S")


def number(value: float) -> str:
    """Whole numbers without a fraction, others with one decimal."""
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"
