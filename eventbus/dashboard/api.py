"""The dashboard's read-only JSON API: the numbers and lists the pages show, for scripts.

Behind the same gate as the pages (token or ``authorize``, allowed hosts); GET only. Every
answer is a JSON object; a malformed query parameter gets a 400 with ``{"error": "..."}``, an
unknown job a 404 with the same shape. Lists carry ``problems``: the connections or stores that
could not be read, as the pages show them. The shapes are documented in ``docs/operations.md``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from eventbus.dashboard import data
from eventbus.dashboard.ranges import DEFAULT_RANGE, RANGES, Range, queue_series
from eventbus.dashboard.security import SECURITY_HEADERS
from eventbus.errors import EventBusError
from eventbus.monitoring.listing import STATUSES, JobFilter, list_jobs
from eventbus.monitoring.lookup import NOT_FOUND, find_job
from eventbus.monitoring.monitored_tags import monitored
from eventbus.monitoring.status import connections as watched_connections
from eventbus.monitoring.status import status
from eventbus.payload import MAX_TAG_LENGTH
from eventbus.supervising import commands

DEFAULT_LIMIT = 50
MAX_LIMIT = 1000
MAX_QUEUE_NAME = 255


class BadParameter(ValueError):
    """A query parameter the API cannot use; its message is the 400's ``error``."""


def answer(document: dict[str, Any], status_code: int = 200) -> Response:
    return Response(json.dumps(document, ensure_ascii=False), status_code, media_type="application/json",
                    headers=SECURITY_HEADERS)


def error(message: str, status_code: int = 400) -> Response:
    return answer({"error": message}, status_code)


def limit_of(request: Request) -> int:
    text = request.query_params.get("limit")
    if text is None or text == "":
        return DEFAULT_LIMIT
    if not (text.isascii() and text.isdigit() and len(text) <= 6) or not 1 <= int(text) <= MAX_LIMIT:
        raise BadParameter(f"limit must be a whole number from 1 to {MAX_LIMIT}")
    return int(text)


def queue_of(request: Request) -> str | None:
    name = request.query_params.get("queue") or None
    if name is not None and (len(name) > MAX_QUEUE_NAME or not name.isprintable()):
        raise BadParameter(f"queue must be a queue name (printable, at most {MAX_QUEUE_NAME} characters)")
    return name


def status_of(request: Request) -> str | None:
    chosen = request.query_params.get("status") or None
    if chosen is not None and chosen not in STATUSES:
        raise BadParameter(f"status must be one of: {', '.join(STATUSES)}")
    return chosen


def text_of(request: Request, name: str, longest: int = MAX_TAG_LENGTH) -> str | None:
    """A filter's text (a tag, a class name): printable, at most ``longest`` characters."""
    value = request.query_params.get(name) or None
    if value is not None and (len(value) > longest or not value.isprintable()):
        raise BadParameter(f"{name} must be printable text of at most {longest} characters")
    return value


def filter_of(request: Request) -> JobFilter:
    """The jobs the query asks for: ``tag``, ``class``, ``queue``, ``status``, ``limit``."""
    return JobFilter(tag=text_of(request, "tag"), job_class=text_of(request, "class", MAX_QUEUE_NAME),
                     queue=queue_of(request), status=status_of(request), limit=limit_of(request))


def range_of(request: Request) -> Range:
    chosen = request.query_params.get("range") or DEFAULT_RANGE
    if chosen not in RANGES:
        raise BadParameter(f"range must be one of: {', '.join(RANGES)}")
    return RANGES[chosen]


@dataclasses.dataclass
class Api:
    """The endpoints, over the connections the dashboard watches."""

    names: Sequence[str] | None

    async def stats(self, request: Request) -> Response:
        return answer(data.stats(self.names))

    async def queues(self, request: Request) -> Response:
        current = status(self.names, with_failed=False)
        return answer({"queues": [q.to_dict() for q in current.queues], "problems": current.problems})

    async def workers(self, request: Request) -> Response:
        current = status(self.names, with_failed=False)
        return answer({"workers": [w.to_dict() for w in current.workers], "problems": current.problems})

    async def jobs(self, request: Request) -> Response:
        try:
            chosen = filter_of(request)
        except BadParameter as exc:
            return error(str(exc))
        return answer(list_jobs(chosen, self.names).to_dict())

    async def tags(self, request: Request) -> Response:
        found, problems = monitored(self.names)
        return answer({"tags": [t.to_dict() for t in found], "problems": problems})

    async def failed(self, request: Request) -> Response:
        try:
            queue, limit = queue_of(request), limit_of(request)
        except BadParameter as exc:
            return error(str(exc))
        return answer(data.failed_list(queue, limit))

    async def batches(self, request: Request) -> Response:
        found = data.batches(self.names)
        return answer({"batches": [{**b.to_dict(), "ref": b.ref} for b in found["batches"]],
                       "problems": found["problems"]})

    async def supervisors(self, request: Request) -> Response:
        return answer(commands.running(watched_connections(self.names)).to_dict())
    async def metrics(self, request: Request) -> Response:
        """Per queue over a range: a point per minute up to 3 h (live counters), per 10 minutes
        over 24 h and per hour over 7 d (the metrics history)."""
        try:
            chosen, queue = range_of(request), queue_of(request)
        except BadParameter as exc:
            return error(str(exc))
        problems: list[str] = []
        found = queue_series(self.names, chosen, problems, queue=queue)
        return answer({"range": chosen.name, "bucket_s": chosen.bucket_s,
                       "source": "history" if chosen.from_history else "live",
                       "series": [q.to_dict() for q in found], "problems": problems})

    async def unknown(self, request: Request) -> Response:
        return error("no such endpoint: see the JSON API in the operations guide", 404)

    async def job(self, request: Request) -> Response:
        uuid = request.path_params["uuid"]
        try:
            found = find_job(uuid, self.names)
        except EventBusError as exc:
            return error(str(exc), 503)
        if found is None:
            return error(NOT_FOUND.format(uuid=uuid), 404)
        return answer(found.to_dict())
