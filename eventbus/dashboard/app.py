"""The dashboard as a Starlette app: server-rendered pages, POST actions, nothing from a CDN.

``create_app()`` returns an ASGI app to serve on its own (``eventbus dashboard``) or to mount in
a FastAPI or Starlette app (``app.mount("/eventbus", create_app(authorize=...))``): every link is
made from the request's ``root_path``, so it works under any prefix. Pages: overview, queues
(pause and resume), recent jobs, failed jobs (retry, forget, bulk retry), workers, metrics per
queue and job class (:mod:`~eventbus.dashboard.ranges`: 15 minutes to 7 days), one job (pending,
delayed, reserved or failed; cancel), jobs by tag, class, queue and status, monitored tags and
their jobs, batches (retry failed), supervisors of ``eventbus supervise`` (pause and continue),
and a
read-only JSON API under ``/api`` (:mod:`eventbus.dashboard.api`). The overview, queues, jobs and workers pages refresh their content every few seconds
with the small script in ``static/`` (the pages work without it).
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any
from urllib.parse import quote, urlencode

import jinja2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from eventbus import config, control, runtime
from eventbus.batching.batch import find as find_batch
from eventbus.dashboard import charts, data
from eventbus.dashboard.api import Api, BadParameter, filter_of
from eventbus.dashboard.data import RECENT_LIMIT
from eventbus.dashboard.ranges import RANGES
from eventbus.dashboard.security import (
    CSRF_COOKIE,
    LOOPBACK_HOSTS,
    SECURITY_HEADERS,
    TOKEN_COOKIE,
    AllowedHosts,
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
from eventbus.monitoring.listing import STATUSES, list_jobs
from eventbus.monitoring.lookup import find_job
from eventbus.monitoring.monitored_tags import monitored, tagged_jobs
from eventbus.monitoring.status import connections as watched_connections
from eventbus.monitoring.status import status
from eventbus.supervising import commands

HERE = pathlib.Path(__file__).resolve().parent
Handler = Callable[[Request], Awaitable[Response]]

NOTICES = {
    "retried": "Pushed {n} failed job(s) back onto their queues.",
    "forgotten": "Deleted {n} failed job record(s).",
    "paused": "Paused {queue}: workers skip it within a second.",
    "resumed": "Resumed {queue}.",
    "missing": "That failed job no longer exists.",
    "gone": "That job is no longer queued, nor failed.",
    "cancelled": "Cancelled the job: it will not run.",
    "uncancelled": "The job was not cancelled: a worker holds it, it belongs to a batch, or it ran meanwhile.",
    "batch-retried": "Pushed {n} failed job(s) of the batch back onto their queues.",
    "supervisor-paused": "Paused supervisor {name}: its workers finish their job and take no other.",
    "supervisor-continued": "Continued supervisor {name}.",
}


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined)
    env.filters.update(duration=duration, clock=clock, number=number)
    env.globals.update(line_chart=charts.line_chart, sparkline=charts.sparkline)
    return env


class GateMiddleware:
    """Every request (pages, actions, static files) passes the host check, then the gate."""

    def __init__(self, app: ASGIApp, gate: Gate, hosts: AllowedHosts) -> None:
        self.app = app
        self.gate = gate
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            instead = await self.answer_instead(Request(scope))
            if instead is not None:
                await instead(scope, receive, send)
                return
        await self.app(scope, receive, send)

    async def answer_instead(self, request: Request) -> Response | None:
        """What the request gets instead of the page, if anything: 400 for a host name that is
        not allowed, the redirect that turns ``?token=`` into a cookie, the gate's 401 or 403."""
        if not self.hosts.allow(request.headers.get("host")):
            return PlainTextResponse("Bad request: this dashboard does not answer to that host name "
                                     "(see allowed_hosts).", 400, headers=SECURITY_HEADERS)
        offered = self.gate.offered_token(request)
        if offered is not None:
            return remember_token(request, offered)
        if not await self.gate.allows(request):
            return self.refusal()
        return None

    def refusal(self) -> Response:
        if self.gate.status_code == 401:
            return PlainTextResponse(f"Unauthorized: {self.gate.describe()}.", 401, headers={
                **SECURITY_HEADERS, "www-authenticate": 'Bearer realm="eventbus"'})
        return PlainTextResponse(f"Forbidden: {self.gate.describe()}.", 403, headers=SECURITY_HEADERS)


def remember_token(request: Request, offered: str) -> Response:
    """``?token=...``: remember it in a cookie, then drop it from the URL."""
    query = urlencode([(k, v) for k, v in request.query_params.multi_items() if k != "token"])
    response = RedirectResponse(request.url.path + (f"?{query}" if query else ""), 303)
    response.set_cookie(TOKEN_COOKIE, token_digest(offered), httponly=True, samesite="strict",
                        path=request.scope.get("root_path") or "/", secure=request.url.scheme == "https")
    return response


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
        return template.format(n=int(count) if count.isascii() and count.isdigit() and len(count) < 10 else 0,
                               queue=request.query_params.get("queue", ""),
                               name=request.query_params.get("name", ""))

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
    def windows(request: Request, *, live_only: bool = False) -> list[tuple[str, str]]:
        """Links to the same page over each metrics range (the live ones only: per job class)."""
        keep = {k: v for k, v in request.query_params.items() if k in ("job", "queue")}
        return [(name, "?" + urlencode({**keep, "window": name})) for name, chosen in RANGES.items()
                if not (live_only and chosen.from_history)]

    # -- pages ----------------------------------------------------------------------------------
    async def overview(self, request: Request) -> Response:
        chosen = data.window_of(request.query_params.get("window"))
        return self.render(request, "overview.html", {**data.overview(self.names, chosen),
                                                      "window": chosen.name, "windows": self.windows(request)},
                           page="overview")

    async def queues(self, request: Request) -> Response:
        current = status(self.names, with_failed=False)
        return self.render(request, "queues.html", {"status": current, "problems": current.problems},
                           page="queues")

    async def jobs(self, request: Request) -> Response:
        """Recent jobs; with a filter (``tag``, ``class``, ``queue``, ``status``), the jobs it
        selects, as ``/api/jobs`` and ``eventbus jobs`` list them."""
        try:
            chosen = filter_of(request)
        except BadParameter as exc:
            return PlainTextResponse(f"Bad request: {exc}.", 400, headers=SECURITY_HEADERS)
        filters = {"tag": chosen.tag or "", "class": chosen.job_class or "", "queue": chosen.queue or "",
                   "status": chosen.status or ""}
        if not any(filters.values()):
            return self.render(request, "jobs.html", {**data.jobs_page(self.names), "filters": filters,
                                                      "statuses": STATUSES, "listing": None}, page="jobs")
        listing = list_jobs(chosen, self.names)
        return self.render(request, "jobs.html", {"filters": filters, "statuses": STATUSES, "listing": listing,
                                                  "problems": listing.problems}, page="jobs")

    async def tags(self, request: Request) -> Response:
        found, problems = monitored(self.names)
        return self.render(request, "tags.html", {"tags": found, "problems": problems}, page="tags")

    async def tag_show(self, request: Request) -> Response:
        tag = request.path_params["tag"]
        try:
            found, problems = tagged_jobs(tag, self.names, limit=RECENT_LIMIT)
        except ValueError as exc:
            return PlainTextResponse(f"Bad request: {exc}.", 400, headers=SECURITY_HEADERS)
        watched = tag in {t.tag for t in monitored(self.names)[0]}
        return self.render(request, "tag_show.html", {"tag": tag, "jobs": found, "problems": problems,
                                                      "watched": watched}, page="tags")

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

    async def job_show(self, request: Request) -> Response:
        uuid = request.path_params["uuid"]
        try:
            found = find_job(uuid, self.names)
        except EventBusError as exc:
            return self.render(request, "job_show.html", {"job": None, "problems": [str(exc)]},
                               page="jobs", status_code=503)
        if found is None:
            return self.back(request, "/jobs", notice="gone")
        return self.render(request, "job_show.html", {"job": found}, page="jobs")

    async def batches(self, request: Request) -> Response:
        return self.render(request, "batches.html", data.batches(self.names), page="batches")

    async def workers(self, request: Request) -> Response:
        current = status(self.names, with_failed=False)
        return self.render(request, "workers.html", {"status": current, "problems": current.problems},
                           page="workers")

    async def supervisors(self, request: Request) -> Response:
        found = commands.running(watched_connections(self.names))
        return self.render(request, "supervisors.html",
                           {"supervisors": found.supervisors, "problems": found.problems}, page="supervisors")

    async def metrics(self, request: Request) -> Response:
        chosen = data.window_of(request.query_params.get("window"))
        job, queue = request.query_params.get("job"), request.query_params.get("queue")
        if job:  # per job class: the live counters only
            chosen = chosen if not chosen.from_history else RANGES["3h"]
            return self.render(request, "metrics_job.html",
                               {**data.job_metrics_page(self.names, job, chosen), "window": chosen.name,
                                "windows": self.windows(request, live_only=True)}, page="metrics")
        if queue:
            return self.render(request, "metrics_queue.html",
                               {**data.queue_metrics_page(self.names, queue, chosen), "window": chosen.name,
                                "windows": self.windows(request)}, page="metrics")
        return self.render(request, "metrics.html", {**data.metrics_page(self.names, chosen),
                                                     "window": chosen.name, "windows": self.windows(request)},
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

    async def cancel(self, request: Request) -> Response:
        """Cancel a pending or delayed job (as ``eventbus cancel`` does); back to its page."""
        form = await self.checked_form(request)
        if isinstance(form, Response):
            return form
        uuid = request.path_params["uuid"]
        try:
            found = find_job(uuid, self.names)
            done = found is not None and found.cancellable and control.cancel(
                uuid, connection=found.connection, queue=found.queue).cancelled
        except EventBusError as exc:
            return PlainTextResponse(f"Could not cancel: {exc}", 503, headers=SECURITY_HEADERS)
        if done:
            return self.back(request, "/jobs", notice="cancelled")
        return self.back(request, "/jobs/" + quote(uuid, safe=""), notice="uncancelled")

    async def retry_batch(self, request: Request) -> Response:
        """Push a batch's failed jobs back, as ``eventbus retry-batch`` does."""
        form = await self.checked_form(request)
        if isinstance(form, Response):
            return form
        ref = (form.get("batch") or [""])[0]
        _, _, connection = ref.partition("@")
        if connection not in watched_connections(self.names):
            return PlainTextResponse("Unknown batch.", 400, headers=SECURITY_HEADERS)
        found = find_batch(ref)
        if found is None:
            return PlainTextResponse("Unknown batch.", 400, headers=SECURITY_HEADERS)
        done, _ = control.retry(list(found.failed_job_ids))
        return self.back(request, "/batches", notice="batch-retried", n=len(done))

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

    async def pause_supervisor(self, request: Request) -> Response:
        return await self._pausing_supervisor(request, pause=True)

    async def continue_supervisor(self, request: Request) -> Response:
        return await self._pausing_supervisor(request, pause=False)

    async def _pausing_supervisor(self, request: Request, *, pause: bool) -> Response:
        """Pause or continue one supervisor, as ``eventbus supervise pause|continue NAME`` does."""
        form = await self.checked_form(request)
        if isinstance(form, Response):
            return form
        connection = (form.get("connection") or [""])[0]
        name = (form.get("name") or [""])[0]
        if connection not in watched_connections(self.names) or not name:
            return PlainTextResponse("Unknown connection or supervisor.", 400, headers=SECURITY_HEADERS)
        (commands.pause if pause else commands.resume)([(connection, name)])
        return self.back(request, "/supervisors", notice="supervisor-paused" if pause else "supervisor-continued",
                         name=name)

    async def status_json(self, request: Request) -> Response:
        """The same document as ``eventbus status --json``."""
        return Response(json.dumps(status(self.names).to_dict()), media_type="application/json",
                        headers=SECURITY_HEADERS)


def create_app(*, authorize: Authorize | None = None, token: str | None = None,
               secret: str | None = None, connections: Sequence[str] | None = None,
               title: str = "eventbus", refresh_s: float = 2.0,
               allowed_hosts: Sequence[str] | None = None) -> ASGIApp:
    """The dashboard as an ASGI app.

    ``authorize(request) -> bool`` (sync or async) or ``token`` open it beyond local clients
    (see :mod:`eventbus.dashboard.security`). ``secret`` signs the CSRF tokens
    (``EVENTBUS_DASHBOARD_SECRET``, else random per process). ``connections`` limits it to
    those connections (default: every connection workers consume). ``allowed_hosts``: the
    ``Host`` names it answers (default the loopback names ``localhost``, ``127.0.0.1`` and
    ``::1``; ``*.example.com`` for subdomains, ``["*"]`` for any); mounted in a site, give the
    site's names.
    """
    board = Dashboard(Csrf(secret or config.env("EVENTBUS_DASHBOARD_SECRET")),
                      list(connections) if connections else None, title, refresh_s)
    api = Api(board.names)
    routes = [
        Route("/", board.overview, name="overview"),
        Route("/queues", board.queues, name="queues"),
        Route("/queues/pause", board.pause, methods=["POST"]),
        Route("/queues/resume", board.resume, methods=["POST"]),
        Route("/jobs", board.jobs, name="jobs"),
        Route("/jobs/{uuid:str}", board.job_show, name="job_show"),
        Route("/jobs/{uuid:str}/cancel", board.cancel, methods=["POST"]),
        Route("/tags", board.tags, name="tags"),
        Route("/tags/{tag:path}", board.tag_show, name="tag_show"),
        Route("/batches", board.batches, name="batches"),
        Route("/batches/retry", board.retry_batch, methods=["POST"]),
        Route("/failed", board.failed, name="failed"),
        Route("/failed/retry", board.retry, methods=["POST"]),
        Route("/failed/forget", board.forget, methods=["POST"]),
        Route("/failed/{uuid:str}", board.failed_show, name="failed_show"),
        Route("/workers", board.workers, name="workers"),
        Route("/supervisors", board.supervisors, name="supervisors"),
        Route("/supervisors/pause", board.pause_supervisor, methods=["POST"]),
        Route("/supervisors/continue", board.continue_supervisor, methods=["POST"]),
        Route("/metrics", board.metrics, name="metrics"),
        Route("/status.json", board.status_json, name="status_json"),
        Route("/api/stats", api.stats), Route("/api/queues", api.queues), Route("/api/workers", api.workers),
        Route("/api/jobs", api.jobs), Route("/api/jobs/{uuid:str}", api.job),
        Route("/api/batches", api.batches), Route("/api/failed", api.failed), Route("/api/tags", api.tags),
        Route("/api/supervisors", api.supervisors),
        Route("/api/metrics", api.metrics),
        Route("/api/{rest:path}", api.unknown),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    hosts = AllowedHosts(LOOPBACK_HOSTS if allowed_hosts is None else allowed_hosts)
    return GateMiddleware(Starlette(routes=routes), Gate(authorize=authorize, token=token), hosts)
