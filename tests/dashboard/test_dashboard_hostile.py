"""The dashboard against hostile requests: it answers only the hosts it is told (DNS
rebinding), a request a proxy passed on is not a local client's, a malformed request never
gets a 500, and the numbers of a waiting job cannot break a page."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import httpx
import pytest
import redis
from apps import jobs
from observing import serving
from test_dashboard_http import csrf_of, fail_one

import eventbus
from eventbus.dispatching import make_payload

pytest.importorskip("starlette")
from eventbus.dashboard import create_app  # noqa: E402


def raw_request(port: int, head: bytes, body: bytes = b"") -> tuple[int, str]:
    """Send bytes as they are (no client library cleans them up); the status and the body."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head + body)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    status_line, _, rest = answer.partition(b"\r\n")
    return int(status_line.split()[1]), rest.partition(b"\r\n\r\n")[2].decode("utf-8", "replace")


@pytest.fixture
def local(use_redis: redis.Redis) -> Iterator[int]:
    with serving(create_app()) as port:
        yield port


def test_a_rebinding_host_is_refused_on_every_request(local: int) -> None:
    fail_one()
    evil = {"host": "rebind.attacker.test"}
    with httpx.Client(base_url=f"http://127.0.0.1:{local}") as http:
        for path in ("/", "/failed", "/status.json", "/static/dashboard.css"):
            refused = http.get(path, headers=evil)
            assert refused.status_code == 400 and "rebind" not in refused.text, path
        page = http.get("/failed").text
        pause = http.post("/queues/pause", data={"csrf": csrf_of(page), "connection": "redis",
                                                 "queue": "default"},
                          headers={**evil, "origin": "http://rebind.attacker.test"})
        assert pause.status_code == 400
        for host in (f"127.0.0.1:{local}", f"localhost:{local}", "LOCALHOST", f"[::1]:{local}"):
            assert http.get("/failed", headers={"host": host}).status_code == 200, host
        for host in ("", "127.0.0.1.attacker.test", "127.0.0.1@attacker.test", "[::1", "a b"):
            assert http.get("/failed", headers={"host": host}).status_code == 400, host


def test_allowed_hosts_are_the_only_ones_answered(use_redis: redis.Redis) -> None:
    app = create_app(token="t0ken", allowed_hosts=["dash.example.com", "*.ops.example.com"])
    with serving(app) as port, httpx.Client(base_url=f"http://127.0.0.1:{port}",
                                            headers={"authorization": "Bearer t0ken"}) as http:
        for host in ("dash.example.com", "Dash.Example.Com:443", "eu.ops.example.com"):
            assert http.get("/", headers={"host": host}).status_code == 200, host
        for host in (f"127.0.0.1:{port}", "example.com", "ops.example.com.evil.test"):
            assert http.get("/", headers={"host": host}).status_code == 400, host


def test_a_request_passed_on_by_a_proxy_is_not_a_local_client(use_redis: redis.Redis) -> None:
    """nginx's default ``proxy_pass`` speaks HTTP/1.0 to the app, with ``Host`` set to the
    upstream's address and no ``X-Forwarded-For``: everything else about it looks local."""
    from starlette.applications import Starlette
    from starlette.routing import Mount

    site = Starlette(routes=[Mount("/eventbus", app=create_app())])
    with serving(site) as port:
        nginx = (f"GET /eventbus/failed HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n"
                 "User-Agent: Mozilla/5.0\r\n\r\n").encode()
        status, body = raw_request(port, nginx)
        assert status == 403 and "proxy" in body
        for header in ("X-Forwarded-For: 203.0.113.7", "Forwarded: for=203.0.113.7", "X-Real-IP: 203.0.113.7",
                       "X-Forwarded-Host: example.com", "Via: 1.1 proxy"):
            status, _ = raw_request(port, (f"GET /eventbus/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{header}\r\n"
                                           "Connection: close\r\n\r\n").encode())
            assert status == 403, header
        direct = httpx.get(f"http://127.0.0.1:{port}/eventbus/failed")
        assert direct.status_code == 200


def test_hostile_numbers_in_a_waiting_job_never_break_the_jobs_page(local: int) -> None:
    doc = make_payload(jobs.Record(1)).to_dict()
    texts = [json.dumps({**doc, "uuid": "a"}).replace('"pushedAt":', '"pushedAt":-1e999,"x":', 1),
             json.dumps({**doc, "uuid": "b", "pushedAt": int("9" * 400)}),
             json.dumps({**doc, "uuid": "c"}).replace('"pushedAt":', '"pushedAt":1e999,"x":', 1),
             json.dumps({**doc, "uuid": "d", "pushedAt": True, "displayName": ["x"] * 3})]
    for text in texts:
        eventbus.connection().push_raw(text)
    page = httpx.get(f"http://127.0.0.1:{local}/jobs")
    assert page.status_code == 200 and page.text.count("apps.jobs.Record") >= 3


def test_malformed_requests_get_4xx_never_500(local: int) -> None:
    fail_one()
    for query in ("/?notice=retried&n=%C2%B2", "/?notice=retried&n=" + "9" * 5000, "/?window=%ff",
                  "/metrics?job=%ff%fe&window=1h", "/failed?queue=%00", "/failed/%ff"):
        assert httpx.get(f"http://127.0.0.1:{local}{query}").status_code < 500, query
    with httpx.Client(base_url=f"http://127.0.0.1:{local}") as http:
        token = csrf_of(http.get("/failed").text)
        for origin in ("http://[", "http://127.0.0.1:99999", "\u00e9"):
            answer = http.post("/failed/retry", data={"csrf": token}, headers={"origin": origin.encode()})
            assert 400 <= answer.status_code < 500, origin
        assert http.post("/failed/retry", data={"csrf": "1.\u00e9\u00e9"}).status_code == 403
        fields = "&".join(f"f{n}=x" for n in range(2100))
        crowded = http.post("/failed/retry", content=f"csrf={token}&{fields}".encode(),
                            headers={"content-type": "application/x-www-form-urlencoded"})
        assert 400 <= crowded.status_code < 500


def test_the_token_gate_answers_401_to_any_bytes(use_redis: redis.Redis) -> None:
    with serving(create_app(token="s3cret")) as port:
        for head in (b"Authorization: Bearer \xc3\xa9\xff",
                     b"Cookie: eventbus_token=\xc3\xa9; eventbus_csrf=\xff",
                     b"Authorization: Bearer s3cret\xe9"):
            status, _ = raw_request(port, b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n" + head +
                                    b"\r\nConnection: close\r\n\r\n")
            assert status == 401, head
        for query in ("/?token=%C3%A9", "/?token=%ff", "/failed?token=s3cret%00"):
            assert httpx.get(f"http://127.0.0.1:{port}{query}").status_code == 401, query
        missing = httpx.get(f"http://127.0.0.1:{port}/")
        assert missing.status_code == 401 and missing.headers["www-authenticate"].startswith("Bearer")
        assert httpx.get(f"http://127.0.0.1:{port}/", headers={"authorization": "Bearer s3cret"}).status_code == 200


def test_the_json_api_answers_400_with_a_json_error_to_malformed_parameters(local: int) -> None:
    fail_one()
    jobs.Record(1).dispatch()
    bad = ("/api/jobs?limit=abc", "/api/jobs?limit=0", "/api/jobs?limit=-1", "/api/jobs?limit=99999999",
           "/api/jobs?limit=%C2%B2", "/api/jobs?limit=1e3", "/api/jobs?limit=%ff", "/api/jobs?status=finished",
           "/api/jobs?status=%00", "/api/jobs?queue=%00", "/api/jobs?queue=" + "q" * 5000,
           "/api/jobs?queue=a%0Ab", "/api/failed?limit=x", "/api/failed?queue=%00", "/api/failed?limit=" + "9" * 5000,
           "/api/jobs?limit=1&limit=abc")
    with httpx.Client(base_url=f"http://127.0.0.1:{local}") as http:
        for query in bad:
            answer = http.get(query)
            assert answer.status_code == 400, query
            assert answer.headers["content-type"] == "application/json" and set(answer.json()) == {"error"}, query
        for query in ("/api/jobs?queue=%ff%fe", "/api/jobs?limit=&queue=&status=", "/api/jobs?limit=1000",
                      "/api/failed?queue=<b>"):
            assert http.get(query).status_code == 200, query
        for path in ("/api/jobs/%ff", "/api/jobs/" + "u" * 5000, "/api/jobs/%00", "/api/jobs/..%2F..%2Fetc"):
            answer = http.get(path)
            assert answer.status_code == 404 and "error" in answer.json(), path
        for path in ("/jobs/%ff", "/jobs/" + "u" * 5000, "/jobs/%00"):
            assert http.get(path).status_code == 303, path
        for path in ("/api/stats", "/api/jobs", "/api/batches"):
            assert http.post(path).status_code == 405, path


def test_cancel_and_retry_failed_need_a_token_and_post(local: int) -> None:
    uuid = jobs.Record(1).dispatch()
    with httpx.Client(base_url=f"http://127.0.0.1:{local}") as http:
        token = csrf_of(http.get(f"/jobs/{uuid}").text)
        assert http.get(f"/jobs/{uuid}/cancel").status_code == 405
        assert http.post(f"/jobs/{uuid}/cancel").status_code == 403
        assert http.post(f"/jobs/{uuid}/cancel", data={"csrf": "1.forged"}).status_code == 403
        assert http.post(f"/jobs/{uuid}/cancel", data={"csrf": token},
                         headers={"origin": "https://evil.example"}).status_code == 403
        assert eventbus.connection().size() == 1
        assert http.get("/batches/retry").status_code == 405
        assert http.post("/batches/retry", data={"batch": "x@redis"}).status_code == 403
        for ref in ("x@redis", "@", "@@", "x@" + "r" * 5000, "\u00e9@redis", "x@redis@redis"):
            assert http.post("/batches/retry", data={"csrf": token, "batch": ref}).status_code == 400, ref
        gone = http.post("/jobs/%ff/cancel", data={"csrf": token})
        assert gone.status_code == 303 and "uncancelled" in gone.headers["location"]


def test_the_json_api_is_behind_the_same_gate(use_redis: redis.Redis) -> None:
    with serving(create_app(token="s3cret")) as port, httpx.Client(base_url=f"http://127.0.0.1:{port}") as http:
        for path in ("/api/stats", "/api/jobs", "/api/jobs/x", "/api/batches", "/api/failed"):
            assert http.get(path).status_code == 401, path
            assert http.get(path, headers={"authorization": "Bearer s3cret", "host": "evil.test"}).status_code == 400
            assert http.get(path, headers={"authorization": "Bearer s3cret"}).status_code in (200, 404), path
