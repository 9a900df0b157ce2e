"""The worker's output: one line per finished attempt, as text or as JSON.

Text (the default) reads left to right as what happened::

    2025-05-01 12:00:00 default-1[4242] shop.jobs.SendMail [mail] 2/3 12.34ms RELEASED (retry in 5s)

``--log-format json`` writes one JSON object per line instead, and :class:`JsonFormatter` makes
the worker's log records JSON objects too, so that one stream carries everything a log shipper
needs (``{"event": "job", ...}`` for attempts, ``{"event": "log", ...}`` for records).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import logging
import os
from typing import Any

from eventbus.monitoring.display import printable

FORMATS = ("text", "json")


@dataclasses.dataclass(frozen=True)
class JobReport:
    """One finished attempt as the worker reports it."""

    worker: str
    pid: int
    connection: str
    queue: str
    job: str
    uuid: str
    attempt: int
    max_tries: int | None
    runtime_s: float
    status: str
    delay_s: float | None = None
    error: str | None = None
    at: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        del data["at"]
        return {"time": _iso(self.at), "event": "job", **data,
                "runtime_ms": round(self.runtime_s * 1000, 3)}


def _iso(at: float) -> str:
    return dt.datetime.fromtimestamp(at, dt.timezone.utc).isoformat(timespec="milliseconds")


def _seconds(value: float) -> str:
    return f"{value:g}s" if value < 60 else f"{value / 60:.1f}min"


def text_line(report: JobReport) -> str:
    """The human line: time, worker[pid], job [queue], attempt/tries, runtime, outcome."""
    stamp = dt.datetime.fromtimestamp(report.at).strftime("%Y-%m-%d %H:%M:%S")
    attempt = f"{report.attempt}/{report.max_tries}" if report.max_tries else f"{report.attempt}"
    line = (f"{stamp} {printable(report.worker)}[{report.pid}] {printable(report.job)} "
            f"[{printable(report.queue)}] {attempt} {report.runtime_s * 1000:.2f}ms {report.status}")
    if report.status == "RELEASED" and report.delay_s is not None:
        line += f" (retry in {_seconds(report.delay_s)})"
    return line


def job_line(report: JobReport, log_format: str = "text") -> str:
    if log_format == "json":
        return json.dumps(report.to_dict(), ensure_ascii=True)
    return text_line(report)


class JsonFormatter(logging.Formatter):
    """Log records as one JSON object per line (the traceback inside, as text)."""

    def __init__(self, worker: str | None = None) -> None:
        super().__init__()
        self.worker = worker

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {"time": _iso(record.created), "event": "log",
                                "level": record.levelname.lower(), "logger": record.name,
                                "message": record.getMessage(), "pid": record.process or os.getpid()}
        if self.worker:
            data["worker"] = self.worker
        if record.exc_info:
            data["exception"] = self.formatException(record.exc_info)
        return json.dumps(data, ensure_ascii=True)
