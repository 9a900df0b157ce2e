"""The dashboard over HTTP (uvicorn on loopback, a real client): pages, actions, the gate, CSRF,
escaping, and mounting inside FastAPI and Starlette apps."""

from __future__ import annotations

import json
import pathlib
import re
from collections.abc import Iterator

import httpx
import pytest
import redis
from apps import jobs
from helpers import REDIS_URL
from observing import BACKENDS, Backend, serving, use_backend

import eventbus
from eventbus import runtime
from eventbus.failed.base import describe_exception
from eventbus.monitoring import pausing
from eventbus.supervising.state import SupervisorRegistry, SupervisorState

pytest.importorskip("starlette")
from eventbus.dashboard import create_app  # noqa: E402


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: pathlib.Path, redis_client: redis.Redis) -> Backend:
    return use_backend(request.param, tmp_path)


@pytest.fixture
def client(backend: Backend) -> Iterator[httpx.Client]:
    with serving(create_app()) as port, httpx.Client(base_url=f"http://127.0.0.1:{port}") as http:
        yield http


def fail_one(n: int = 1, queue: str = "default", connection: str | None = None) -> str:
    payload = eventbus.dispatching.make_payload(jobs.Record(n))
    try:
        raise RuntimeError(f"broken {n}")
    except RuntimeError as exc:
        runtime.failed_store().log(connection or runtime.settings().default, queue, payload.to_json(),
                                   describe_exception(exc), payload.uuid)
    return payload.uuid


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', html)
    assert found, "the page has no form"
    return found.group(1)


def post(client: httpx.Client, page: str, action: str, **fields: str | list[str]) -> httpx.Response:
    """Submit a form the way the browser would: token from the page, cookie from the client."""
    token = csrf_of(client.get(page).text)
    return client.post(action, data={"csrf": token, **fields})


def test_every_page_renders_with_strict_headers(backend: Backend, client: httpx.Client) -> None:
    jobs.Record(1).dispatch()
    uuid = fail_one()
    for path in ("/", "/queues", "/jobs", "/failed", f"/failed/{uuid}", "/workers", "/supervisors", "/metrics",
                 "/metrics?job=apps.jobs.Record&window=15m", "/?fragment=1", "/status.json",
                 f"/jobs/{uuid}", "/batches", "/api/stats", "/api/queues", "/api/workers", "/api/jobs",
                 f"/api/jobs/{uuid}", "/api/failed", "/api/batches", "/api/supervisors"):
        response = client.get(path)
        assert response.status_code == 200, path
        assert "script-src 'self'" in response.headers["content-security-policy"]
        assert response.headers["x-frame-options"] == "DENY"
    overview = client.get("/").text
    assert f"{backend.connection}:<strong>default</strong>" in overview
    assert '<span id="stat-ready">1</span>' in overview and 'id="stat-failed-jobs">1<' in overview
    assert "cdn" not in overview.lower() and "https://" not in overview
    fragment = client.get("/?fragment=1").text
    assert "<html" not in fragment and 'id="stat-ready"' in fragment
    assert json.loads(client.get("/status.json").text)["failed"] == 1


def test_everything_from_payloads_is_escaped(use_redis: redis.Redis) -> None:
    evil = "<script>alert(1)</script>"
    raw = json.dumps({"uuid": "u-1", "displayName": evil, "pushedAt": 1.0,
                      "data": {"commandName": evil, "command": {"x": "</pre><img src=x onerror=alert(2)>"}}})
    runtime.failed_store().log("redis", "<b>q</b>", raw, f"Boom: {evil}\n\nTraceback {evil}", "u-1")
    eventbus.connection().push_raw(raw, "<i>q</i>")
    with serving(create_app()) as port, httpx.Client(base_url=f"http://127.0.0.1:{port}") as http:
        pages = [http.get(p).text for p in ("/", "/queues", "/jobs", "/failed", "/failed/u-1")]
    for html in pages:
        assert "<script>alert" not in html and "<img src=x" not in html and "<b>q</b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in pages[3] and "&lt;b&gt;q&lt;/b&gt;" in pages[3]
    assert "&lt;img src=x onerror=alert(2)&gt;" in pages[4]


def test_retry_and_forget_one_bulk_and_all(backend: Backend, client: httpx.Client) -> None:
    a, b, c = fail_one(1, "mail"), fail_one(2, "mail"), fail_one(3, "default")
    d = fail_one(4, "default")
    response = post(client, "/failed", "/failed/retry", one=a)
    assert response.status_code == 303 and response.headers["location"].startswith("/failed?notice=retried&n=1")
    assert "Pushed 1 failed job(s) back" in client.get(response.headers["location"]).text
    assert eventbus.connection().size("mail") == 1
    assert post(client, "/failed", "/failed/forget", uuid=[b]).headers["location"].startswith(
        "/failed?notice=forgotten&n=1")
    assert post(client, "/failed?queue=default", "/failed/retry", all="1", queue="default").status_code == 303
    assert runtime.failed_store().all() == [] and eventbus.connection().size() == 2
    assert {c, d} == {json.loads(raw)["uuid"] for raw in eventbus.connection().peek()}


def test_pause_and_resume(backend: Backend, client: httpx.Client) -> None:
    jobs.Record(1).dispatch()
    conn = backend.connection
    response = post(client, "/queues", "/queues/pause", connection=conn, queue="default")
    assert response.status_code == 303
    assert pausing.paused_queues(runtime.state(), conn) == {"default"}
    page = client.get(response.headers["location"]).text
    assert f"Paused {conn}:default" in page and 'class="badge paused"' in page
    assert post(client, "/queues", "/queues/resume", connection=conn, queue="default").status_code == 303
    assert pausing.paused_queues(runtime.state(), conn) == set()
    assert post(client, "/queues", "/queues/pause", connection="nope", queue="x").status_code == 400


def test_pause_and_continue_a_supervisor(backend: Backend, client: httpx.Client) -> None:
    conn = backend.connection
    published = SupervisorState(name="mail", connection=conn, host="web-1", pid=4242, queues=("mail",),
                                balance="auto", processes={"mail": 2}, min_processes=1, max_processes=3)
    SupervisorRegistry(runtime.state(), conn).publish([published])
    page = client.get("/supervisors").text
    assert 'data-supervisor="mail"' in page and "mail=2" in page
    response = post(client, "/supervisors", "/supervisors/pause", connection=conn, name="mail")
    assert response.status_code == 303
    assert pausing.paused_supervisors(runtime.state(), conn) == {"mail"}
    assert "Paused supervisor mail" in client.get(response.headers["location"]).text
    assert post(client, "/supervisors", "/supervisors/continue", connection=conn, name="mail").status_code == 303
    assert pausing.paused_supervisors(runtime.state(), conn) == set()
    assert post(client, "/supervisors", "/supervisors/pause", connection="nope", name="mail").status_code == 400
    assert post(client, "/supervisors", "/supervisors/pause", connection=conn, name="").status_code == 400
    refused = client.post("/supervisors/pause", data={"connection": conn, "name": "mail", "csrf": "1.forged"})
    assert refused.status_code == 403 and pausing.paused_supervisors(runtime.state(), conn) == set()
    listed = client.get("/api/supervisors").json()
    assert listed["problems"] == [] and [(s["name"], s["master"], s["total_processes"])
                                         for s in listed["supervisors"]] == [("mail", "web-1:4242", 2)]


def test_actions_need_post_a_valid_token_and_the_same_origin(use_redis: redis.Redis) -> None:
    uuid = fail_one()
    with serving(create_app()) as port, httpx.Client(base_url=f"http://127.0.0.1:{port}") as http:
        token = csrf_of(http.get("/failed").text)
        http.get(f"/failed/retry?one={uuid}")
        http.get(f"/failed/retry?one={uuid}&csrf={token}")
        assert runtime.failed_store().find(uuid) is not None, "a GET never acts"
        assert http.post("/failed/retry", data={"one": uuid}).status_code == 403
        assert http.post("/failed/retry", data={"one": uuid, "csrf": "1.forged"}).status_code == 403
        assert http.post("/failed/retry", data={"one": uuid, "csrf": token},
                         headers={"origin": "https://evil.example"}).status_code == 403
        assert http.post("/failed/retry", data={"one": uuid, "csrf": token},
                         headers={"sec-fetch-site": "cross-site"}).status_code == 403
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as other:  # another browser: its own cookie
            other.get("/")
            assert other.post("/failed/retry", data={"one": uuid, "csrf": token}).status_code == 403
        assert http.post("/failed/retry", content=b"x" * 300_000,
                         headers={"content-type": "application/x-www-form-urlencoded"}).status_code == 413
        assert runtime.failed_store().find(uuid) is not None
        assert http.post("/failed/retry", data={"one": uuid, "csrf": token},
                         headers={"origin": f"http://127.0.0.1:{port}"}).status_code == 303
        assert runtime.failed_store().find(uuid) is None


def test_by_default_only_local_clients_get_in(use_redis: redis.Redis) -> None:
    with serving(create_app()) as port, httpx.Client(base_url=f"http://127.0.0.1:{port}") as http:
        assert http.get("/").status_code == 200
        refused = http.get("/", headers={"x-forwarded-for": "203.0.113.7"})
        assert refused.status_code == 403 and "only local clients" in refused.text
        assert http.get("/static/dashboard.css", headers={"forwarded": "for=203.0.113.7"}).status_code == 403


def test_a_token_opens_it_up(use_redis: redis.Redis) -> None:
    with serving(create_app(token="s3cret")) as port, httpx.Client(base_url=f"http://127.0.0.1:{port}") as http:
        assert http.get("/").status_code == 401
        assert http.get("/", headers={"authorization": "Bearer s3cret"}).status_code == 200
        assert http.get("/", headers={"authorization": "Bearer wrong"}).status_code == 401
        assert http.get("/failed?token=wrong").status_code == 401
        landed = http.get("/failed?queue=mail&token=s3cret")
        assert landed.status_code == 303 and landed.headers["location"] == "/failed?queue=mail"
        assert "s3cret" not in landed.headers["set-cookie"]
        assert http.get("/failed", headers={"x-forwarded-for": "203.0.113.7"}).status_code == 200


@pytest.mark.parametrize("asynchronous", [False, True])
def test_an_authorize_callable_decides(use_redis: redis.Redis, asynchronous: bool) -> None:
    def sync_gate(request: object) -> bool:
        return getattr(request, "headers").get("x-user") == "admin"

    async def async_gate(request: object) -> bool:
        return sync_gate(request)

    app = create_app(authorize=async_gate if asynchronous else sync_gate)
    with serving(app) as port, httpx.Client(base_url=f"http://127.0.0.1:{port}") as http:
        assert http.get("/").status_code == 403
        assert http.get("/", headers={"x-user": "admin"}).status_code == 200


def test_mounted_inside_fastapi_and_starlette(use_redis: redis.Redis) -> None:
    fastapi = pytest.importorskip("fastapi")
    from starlette.applications import Starlette
    from starlette.routing import Mount

    uuid = fail_one()
    api = fastapi.FastAPI()

    @api.get("/hello")
    def hello() -> dict[str, str]:
        return {"hello": "world"}

    api.mount("/eventbus", create_app())
    plain = Starlette(routes=[Mount("/ops/queues", create_app())])
    for app, prefix in ((api, "/eventbus"), (plain, "/ops/queues")):
        with serving(app) as port, httpx.Client(base_url=f"http://127.0.0.1:{port}") as http:
            page = http.get(f"{prefix}/failed").text
            assert f'href="{prefix}/static/dashboard.css"' in page and f'action="{prefix}/failed/retry"' in page
            assert http.get(f"{prefix}/static/dashboard.js").status_code == 200
            response = http.post(f"{prefix}/failed/retry", data={"csrf": csrf_of(page), "one": uuid})
            assert response.status_code == 303 and response.headers["location"].startswith(f"{prefix}/failed?")
            assert http.get(f"{prefix}/").status_code == 200
            uuid = fail_one()
    with serving(api) as port:
        assert httpx.get(f"http://127.0.0.1:{port}/hello").json() == {"hello": "world"}


def test_a_connection_that_is_down_is_a_problem_line_not_an_error(use_redis: redis.Redis) -> None:
    eventbus.configure(default="redis", connections={
        "redis": {"driver": "redis", "url": REDIS_URL, "block_for": 1}, "database": {"driver": "null"},
        "down": {"driver": "redis", "url": "redis://127.0.0.1:1/0"}})
    jobs.Record(1).dispatch()
    with serving(create_app()) as port, httpx.Client(base_url=f"http://127.0.0.1:{port}") as http:
        for path in ("/", "/queues", "/workers", "/jobs", "/metrics"):
            response = http.get(path)
            assert response.status_code == 200 and "cannot reach Redis" in response.text, path
        assert "redis:<strong>default</strong>" in http.get("/").text
