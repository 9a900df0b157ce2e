"""The dashboard as a Starlette app: server-rendered pages, POST actions, nothing from a CDN.

``create_app()`` returns an ASGI app to serve on its own (``eventbus dashboard``) or to mount in
a FastAPI or Starlette app (``app.mount("/eventbus", create_app(authorize=...))``): every link is
made from the request's ``root_path``, so it works under any prefix. Pages: overview, queues
(pause and resume), recent jobs, failed jobs (retry, forget, bulk retry), workers, metrics per
job class. The overview, queues, jobs and workers pages refresh their content every few seconds
with the small script in ``static/`` (the pages work without it).
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any
from urllib.parse import urlencode

import jinja2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from eventbus import control, runtime
from eventbus.dashboard import charts, data
from eventbus.dashboard.security import (
    CSRF_COOKIE,
    SECURITY_HEADERS,
    TOKEN_COOKIE,
    Authorize,
    Csrf,
    FormTooLarge,
    Gate,
    read_form,
    same_origin,
    token_digest,
)
from eventbus.errors import EventBusError
from eventbus.monitoring import failures, pausing
from eventbus.monitoring.humanize import clock, duration, number
from eventbus.monitoring.status import connections as watched_connections
from eventbus.monitoring.status import status

HERE = pathlib.Path(__file__).resolve().parent
Handler = Callable[[Request], Awaitable[Response]]

NOTICES = {
    "retried": "Pushed {n} failed job(s) back onto their queues.",
    "forgotten": "Deleted {n} failed job record(s).",
    "paused": "Paused {queue}: workers skip it within a second.",
    "resumed": "Resumed {queue}.",
    "missing": "That failed job no longer exists.",
}


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined)
    env.filters.update(duration=duration, clock=clock, number=number)
    env.globals.update(line_chart=charts.line_chart, sparkline=charts.sparkline)
    return env


class GateMiddleware:
    """Every request (pages, actions, static files) passes the gate first."""

    def __init__(self, app: ASGIApp, gate: Gate) -> None:
        self.app = app
        self.gate = gate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        offered = self.gate.offered_token(request)
        if offered is not None:  # ?token=...: remember it in a cookie, then drop it from the URL
            query = urlencode([(k, v) for k, v in request.query_params.multi_items() if k != "token"])
            response: Response = RedirectResponse(request.url.path + (f"?{query}" if query else ""), 303)
            response.set_cookie(TOKEN_COOKIE, token_digest(offered), httponly=True, samesite="strict",
                                path=scope.get("root_path") or "/", secure=request.url.scheme == "https")
            await response(scope, receive, send)
            return
        if not await self.gate.allows(request):
            response = PlainTextResponse(f"Forbidden: {self.gate.describe()}.", 403,
                                         headers=SECURITY_HEADERS)
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


@dataclasses.dataclass
class Dashboard:
    """The pages and actions; one instance per app."""

    csrf: Csrf
    names: Sequence[str] | None
    title: str
    refresh_s: float
    env: jinja2.Environment = dataclasses.field(default_factory=_environment)

    # -- rendering ------------------------------------------------------------------------------
    @staticmethod
    def root(request: Request) -> str:
        return str(request.scope.get("root_path", "")).rstrip("/")

    def render(self, request: Request, template: str, context: dict[str, Any], *,
               page: str, status_code: int = 200) -> Response:
        cookie = request.cookies.get(CSRF_COOKIE)
        new_cookie = None if cookie else Csrf.new_cookie()
        root = self.root(request)
        notice = self._notice(request)
        base = {"url": lambda path: root + path, "csrf": self.csrf.token(cookie or new_cookie or ""),
                "page": page, "title": self.title, "refresh_ms": int(self.refresh_s * 1000),
                "notice": notice, "problems": [], "now": time.time()}
        tmpl = self.env.get_template(template)
        ctx = {**base, **context}
        if request.query_params.get("fragment") == "1" and "live" in tmpl.blocks:
            html = "".join(tmpl.blocks["live"](tmpl.new_context(ctx)))
        else:
            html = tmpl.render(ctx)
        response = HTMLResponse(html, status_code=status_code, headers=SECURITY_HEADERS)
        if new_cookie:
            response.set_cookie(CSRF_COOKIE, new_cookie, httponly=True, samesite="strict",
                                path=root or "/", secure=request.url.scheme == "https")
        return response

    @staticmethod
    def _notice(request: Request) -> str | None:
        key = request.query_params.get("notice", "")
        template = NOTICES.get(key)
        if template is None:
            return None
        count = request.query_params.get("n", "0")
        return template.format(n=int(count) if count.isdigit() else 0,
                               queue=request.query_params.get("queue", ""))

    def back(self, request: Request, path: str, **params: str | int) -> Response:
        """Post/redirect/get: 303 to one of our own pages."""
        query = urlencode({k: v for k, v in params.items() if v not in (None, "")})
        return RedirectResponse(self.root(request) + path + (f"?{query}" if query else ""), 303)

    async def checked_form(self, request: Request) -> dict[str, list[str]] | Response:
        """The POSTed form, or the 403/413 to send when it is not ours."""
        if not same_origin(request):
            return PlainTextResponse("Forbidden: cross-site request.", 403, headers=SECURITY_HEADERS)
        try:
            form = await read_form(request)
        except FormTooLarge:
            return PlainTextResponse("Form too large.", 413, headers=SECURITY_HEADERS)
        if not self.csrf.valid(request.cookies.get(CSRF_COOKIE), (form.get("csrf") or [""])[0]):
            return PlainTextResponse("Forbidden: the form is stale or not from this dashboard; "
                                     "reload the page and try again.", 403, headers=SECURITY_HEADERS)
        return form

    @staticmethod
    def windows(request: Request) -> list[tuple[str, str]]:
        """Links to the same page over each metrics window."""
        keep = {k: v for k, v in request.query_params.items() if k in ("job",)}
        return [(name, "?" + urlencode({**keep, "window": name})) for name in data.WINDOWS]

    # -- pages ----------------------------------------------------------------------------------
    async def overview(self, request: Request) -> Response:
        window, seconds = data.window_of(request.query_params.get("window"))
        return self.render(request, "overview.html", {**data.overview(self.names, seconds),
                                                      "window": window, "windows": self.windows(request)},
                           page="overview")

    async def queues(self, request: Request) -> Response:
        current = status(self.names, with_failed=False)
        return self.render(request, "queues.html", {"status": current, "problems": current.problems},
                           page="queues")

    async def jobs(self, request: Request) -> Response:
        return self.render(request, "jobs.html", data.jobs_page(self.names), page="jobs")

    async def failed(self, request: Request) -> Response:
        queue = request.query_params.get("queue") or None
        return self.render(request, "failed.html", data.failed_page(queue), page="failed")

    async def failed_show(self, request: Request) -> Response:
        uuid = request.path_params["uuid"]
        try:
            record = runtime.failed_store().find(uuid)
        except EventBusError as exc:
            return self.render(request, "failed_show.html", {"detail": None, "problems": [str(exc)]},
                               page="failed", status_code=503)
        if record is None:
            return self.back(request, "/failed", notice="missing")
        return self.render(request, "failed_show.html", {"detail": failures.describe(record)},
                           page="failed")

    async def workers(self, request: Request) -> Response:
        current = status(self.names, with_failed=False)
        return self.render(request, "workers.html", {"status": current, "problems": current.problems},
                           page="workers")

    async def metrics(self, request: Request) -> Response:
        window, seconds = data.window_of(request.query_params.get("window"))
        job = request.query_params.get("job")
        if job:
            return self.render(request, "metrics_job.html",
                               {**data.job_metrics_page(self.names, job, seconds), "window": window,
                                "windows": self.windows(request)}, page="metrics")
        return self.render(request, "metrics.html", {**data.metrics_page(self.names, seconds),
                                                     "window": window, "windows": self.windows(request)},
                           page="metrics")

    # -- actions --------------------------------------------------------------------------------
    def _uuids(self, form: dict[str, list[str]]) -> list[str]:
        one = [u for u in form.get("one", []) if u]
        return one or [u for u in form.get("uuid", []) if u]

    async def retry(self, request: Request) -> Response:
        form = await self.checked_form(request)
        if isinstance(form, Response):
            return form
        queue = (form.get("queue") or [""])[0] or None
        if (form.get("all") or [""])[0] == "1":
            records = failures.failed_jobs(queue=queue)
        else:
            store = runtime.failed_store()
            records = [r for r in (store.find(u) for u in self._uuids(form)) if r is not None]
        done = [control.retry_record(record) for record in records]
        return self.back(request, "/failed", notice="retried", n=len(done), queue=queue or "")

    async def forget(self, request: Request) -> Response:
        form = await self.checked_form(request)
        if isinstance(form, Response):
            return form
        store = runtime.failed_store()
        forgotten = sum(1 for uuid in self._uuids(form) if store.forget(uuid))
        queue = (form.get("queue") or [""])[0]
        return self.back(request, "/failed", notice="forgotten", n=forgotten, queue=queue)

    async def pause(self, request: Request) -> Response:
        return await self._pausing(request, pause=True)

    async def resume(self, request: Request) -> Response:
        return await self._pausing(request, pause=False)

    async def _pausing(self, request: Request, *, pause: bool) -> Response:
        form = await self.checked_form(request)
        if isinstance(form, Response):
            return form
        connection = (form.get("connection") or [""])[0]
        queue = (form.get("queue") or [""])[0]
        if connection not in watched_connections(self.names) or not queue:
            return PlainTextResponse("Unknown connection or queue.", 400, headers=SECURITY_HEADERS)
        store = runtime.state(connection)
        if pause:
            pausing.pause(store, connection, queue)
        else:
            pausing.resume(store, connection, queue)
        return self.back(request, "/queues", notice="paused" if pause else "resumed",
                         queue=f"{connection}:{queue}")

    async def status_json(self, request: Request) -> Response:
        """The same document as ``eventbus status --json``."""
        return Response(json.dumps(status(self.names).to_dict()), media_type="application/json",
                        headers=SECURITY_HEADERS)


def create_app(*, authorize: Authorize | None = None, token: str | None = None,
               secret: str | None = None, connections: Sequence[str] | None = None,
               title: str = "eventbus", refresh_s: float = 2.0) -> ASGIApp:
    """The dashboard as an ASGI app.

    ``authorize(request) -> bool`` (sync or async) or ``token`` open it beyond local clients
    (see :mod:`eventbus.dashboard.security`). ``secret`` signs the CSRF tokens
    (``EVENTBUS_DASHBOARD_SECRET``, else random per process). ``connections`` limits it to
    those connections (default: every connection workers consume).
    """
    board = Dashboard(Csrf(secret or os.environ.get("EVENTBUS_DASHBOARD_SECRET")),
                      list(connections) if connections else None, title, refresh_s)
    routes = [
        Route("/", board.overview, name="overview"),
        Route("/queues", board.queues, name="queues"),
        Route("/queues/pause", board.pause, methods=["POST"]),
        Route("/queues/resume", board.resume, methods=["POST"]),
        Route("/jobs", board.jobs, name="jobs"),
        Route("/failed", board.failed, name="failed"),
        Route("/failed/retry", board.retry, methods=["POST"]),
        Route("/failed/forget", board.forget, methods=["POST"]),
        Route("/failed/{uuid:str}", board.failed_show, name="failed_show"),
        Route("/workers", board.workers, name="workers"),
        Route("/metrics", board.metrics, name="metrics"),
        Route("/status.json", board.status_json, name="status_json"),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    return GateMiddleware(Starlette(routes=routes), Gate(authorize=authorize, token=token))
