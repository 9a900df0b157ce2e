"""Make the dashboard screenshots of the README and docs/operations.md.

    python docs/screenshots.py [--out DIR] [--redis-url URL] [--pages NAME,...]

It runs a small demo shop on Redis under a key prefix of its own (``eventbus-demo-<random>:``,
removed at the end, so the database's other keys are never touched): an ``eventbus supervise``
master runs two supervisors (``default``, balanced ``auto`` over the payments and default
queues, and ``mail``, ``simple``) whose workers drain a few hundred jobs and three batches (some
card payments fail), a report waits on a queue nobody works, and the dashboard is served on a
loopback port. Headless Chromium (``/usr/bin/chromium``, driven by Playwright) saves each page
of :data:`PAGES` as a PNG; a page that answers 404 (a page this version does not have) is
skipped. The last hour of counters and the last day of metrics history are seeded so the charts
have a shape; everything else on the pictures is live. The workers run a compiled copy of the
package (see :func:`prepare`), so the tracebacks on the failed-job page show
``app/eventbus/...``, no directory of this machine.

To add a picture, add a :class:`Shot` to :data:`PAGES`.
"""

from __future__ import annotations

import argparse
import compileall
import dataclasses
import os
import pathlib
import random
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
VIEWPORT = {"width": 1280, "height": 860}


@dataclasses.dataclass(frozen=True)
class Shot:
    """One picture: the page's path (``{job}``: the waiting report's uuid, ``{failed}``: a
    failed payment's), the file it goes to, and how much of the page: all of it, or the top
    ``height`` pixels (the screen when None)."""

    name: str
    path: str
    file: str
    full_page: bool = False
    height: int | None = None


PAGES = [
    Shot("overview", "/", "dashboard-overview.png", full_page=True),
    Shot("jobs", "/jobs", "dashboard-jobs.png", height=620),
    Shot("job", "/jobs/{job}", "dashboard-job.png"),
    Shot("failed", "/failed/{failed}", "dashboard-failed.png"),
    Shot("batches", "/batches", "dashboard-batches.png"),
    Shot("metrics", "/metrics?queue=payments&window=24h", "dashboard-metrics.png"),
    Shot("supervisors", "/supervisors", "dashboard-supervisors.png", height=300),
]

#: What the demo's ``eventbus supervise`` master runs (the ``reports`` queue is nobody's).
SUPERVISORS = {
    "default": {"queues": ["payments", "default"], "balance": "auto", "min_processes": 1, "max_processes": 3,
                "balance_cooldown": 2, "sleep": 0.2},
    "mail": {"queues": ["mail"], "balance": "simple", "max_processes": 1, "sleep": 0.2},
}

SHOP = textwrap.dedent('''
    """A demo shop's jobs."""
    import random
    import time

    import eventbus


    class CardDeclined(Exception):
        pass


    class SendReceipt(eventbus.Job):
        queue = "mail"

        def __init__(self, order_id: int) -> None:
            self.order_id = order_id

        def handle(self) -> None:
            time.sleep(random.uniform(0.02, 0.08))


    class ChargeCard(eventbus.Job):
        queue = "payments"
        tries = 2

        def __init__(self, order_id: int, amount: float) -> None:
            self.order_id = order_id
            self.amount = amount

        def handle(self) -> None:
            time.sleep(random.uniform(0.05, 0.15))
            if self.order_id % 17 == 0:
                raise CardDeclined(f"card declined for order {self.order_id}: insufficient funds")


    class GenerateInvoice(eventbus.Job):
        def __init__(self, order_id: int) -> None:
            self.order_id = order_id

        def handle(self) -> None:
            time.sleep(random.uniform(0.1, 0.3))


    class MonthlyReport(eventbus.Job):
        queue = "reports"

        def __init__(self, month: str) -> None:
            self.month = month

        def handle(self) -> None:
            time.sleep(1)
''')


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def prepare(workdir: pathlib.Path, redis_url: str, prefix: str) -> pathlib.Path:
    """The demo shop, configured for Redis, and a copy of eventbus in ``workdir/app``; beside it
    ``workdir/site``, the same compiled without the sources, its code naming its files
    ``app/...``. Everything imports from ``site``, so the tracebacks on the pictures show
    ``app/eventbus/...`` (whose lines are found again from the workers' directory), not a
    directory of the machine that took them."""
    app, site = workdir / "app", workdir / "site"
    shutil.copytree(ROOT / "eventbus", app / "eventbus", ignore=shutil.ignore_patterns("__pycache__"))
    (app / "shop").mkdir()
    (app / "shop" / "__init__.py").write_text(
        "import eventbus\n"
        f"eventbus.configure(default='redis', connections={{'redis': {{'driver': 'redis', "
        f"'url': {redis_url!r}, 'prefix': {prefix!r}, 'block_for': 1}}, 'database': {{'driver': 'null'}}}},\n"
        f"                   supervisors={SUPERVISORS!r})\n")
    (app / "shop" / "jobs.py").write_text(SHOP)
    shutil.copytree(app, site)
    compileall.compile_dir(site, ddir=app.name, legacy=True, quiet=1)
    for source in site.rglob("*.py"):
        source.unlink()
    return site


def seed_history(connection: str) -> None:
    """The last hour of live counters, and the last day of per-minute snapshots (what the workers
    would have taken), busier in office hours, when a backlog builds up."""
    from eventbus import runtime
    from eventbus.monitoring import keys
    from eventbus.monitoring.history import QueuePoint, Snapshot
    from eventbus.monitoring.metrics import MetricsRecorder, Tally, bucket_of

    recorder, store = MetricsRecorder(connection), runtime.state(connection)
    now, rng = time.time(), random.Random(7)
    for minutes_ago in range(60, 0, -1):
        at = now - minutes_ago * 60
        busy = 1.0 + 0.6 * ((60 - minutes_ago) / 60) + rng.uniform(-0.2, 0.2)
        for _ in range(int(25 * busy)):
            recorder.record("mail", "shop.jobs.SendReceipt", "done", rng.uniform(0.02, 0.08),
                            wait_s=rng.uniform(0.05, 0.6) * busy, at=at)
        for i in range(int(12 * busy)):
            status = "failed" if i == 0 and minutes_ago % 9 == 0 else "done"
            recorder.record("payments", "shop.jobs.ChargeCard", status, rng.uniform(0.05, 0.15),
                            wait_s=rng.uniform(0.1, 1.5) * busy, at=at)
        for _ in range(int(6 * busy)):
            recorder.record("default", "shop.jobs.GenerateInvoice", "done", rng.uniform(0.1, 0.3),
                            wait_s=rng.uniform(0.5, 3.0) * busy, at=at)
    recorder.flush(store)
    snapshots = {}
    for step in range(24 * 60, 0, -1):
        minute = bucket_of(now) - step * 60
        hour = time.localtime(minute).tm_hour
        busy = 0.3 + (1.2 if 9 <= hour < 18 else 0.0) + rng.uniform(0, 0.3)
        queues = {}
        for queue, rate, runtime_s, wait_s in (("payments", 12, 0.1, 0.8), ("mail", 25, 0.05, 0.3),
                                               ("default", 6, 0.2, 1.5)):
            done = int(rate * busy)
            failed = int(rng.random() < 0.05) if queue == "payments" else 0
            tally = Tally(done=done, failed=failed, runtime=(done + failed) * runtime_s,
                          wait=(done + failed) * wait_s * busy, waited=done + failed)
            queues[queue] = QueuePoint(tally, backlog=int(max(busy - 0.8, 0) * rate * 4))
        snapshots[keys.snapshot(connection, minute)] = Snapshot(minute, queues).to_json()
    store.put_many(snapshots, ttl_s=runtime.settings().metrics_retention_s)


def place_orders(jobs: Any, orders: range) -> None:
    """Each order's payment and receipt, and an invoice for every third."""
    for order in orders:
        jobs.ChargeCard(order, round(random.uniform(10, 200), 2)).dispatch()
        jobs.SendReceipt(order).dispatch()
        if order % 3 == 0:
            jobs.GenerateInvoice(order).dispatch()


def dispatch_demo(jobs: Any) -> str:
    """Orders, three batches (one with declined cards), and a report nobody works on yet."""
    import eventbus

    place_orders(jobs, range(1, 241))
    eventbus.batch([jobs.SendReceipt(n) for n in range(300, 320)]).name("newsletter, part 1").dispatch()
    eventbus.batch([jobs.ChargeCard(n, 42.0) for n in range(330, 350)]).name(
        "subscription renewals").allow_failures().dispatch()
    eventbus.batch([jobs.MonthlyReport(m) for m in ("2025-09", "2025-10", "2025-11")]).name(
        "quarterly reports").dispatch()
    return str(jobs.MonthlyReport("2025-12").dispatch())


def capture(base: str, out: pathlib.Path, shots: list[Shot], values: dict[str, str]) -> list[pathlib.Path]:
    """Save each page of ``shots`` as a PNG in ``out``; skip a page that answers 404."""
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    saved = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            page = browser.new_page(viewport=VIEWPORT)
            for shot in shots:
                response = page.goto(base + shot.path.format(**values))
                if response is not None and response.status == 404:
                    print(f"skipped {shot.path}: the dashboard has no such page")
                    continue
                if page.locator("#live[data-live]").count():
                    page.wait_for_selector("#live[data-updated]")  # one live refresh, as a reader sees it
                clip = None if shot.height is None else {"x": 0, "y": 0, "width": VIEWPORT["width"],
                                                         "height": shot.height}
                page.screenshot(path=str(out / shot.file), full_page=shot.full_page, clip=clip)
                saved.append(out / shot.file)
        finally:
            browser.close()
    return saved


def remove_keys(redis_url: str, prefix: str) -> None:
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        pattern = "".join(f"\\{c}" if c in "*?[]\\" else c for c in prefix) + "*"
        for key in list(client.scan_iter(match=pattern, count=1000)):
            client.delete(key)
    finally:
        client.close()


def main(out: pathlib.Path, redis_url: str, names: list[str] | None) -> list[pathlib.Path]:
    shots = [s for s in PAGES if names is None or s.name in names]
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="eventbus-demo-"))
    prefix = f"eventbus-demo-{secrets.token_hex(4)}:"
    site = prepare(workdir, redis_url, prefix)
    sys.path.insert(0, str(site))
    import uvicorn

    import eventbus
    from eventbus.dashboard import create_app

    from shop import jobs  # type: ignore[import-not-found]  # configures eventbus

    env = {k: v for k, v in os.environ.items() if not k.startswith("EVENTBUS_")}
    env.update({"PYTHONPATH": str(site), "EVENTBUS_MONITOR_INTERVAL": "0.5", "EVENTBUS_APP": "shop.jobs"})
    env.pop("PYTHONSAFEPATH", None)
    master = None
    server = uvicorn.Server(uvicorn.Config(create_app(title="shop · eventbus"), host="127.0.0.1",
                                           port=free_port(), log_level="warning"))
    try:
        eventbus.connection().ping()
        seed_history("redis")
        waiting = dispatch_demo(jobs)
        master = subprocess.Popen([sys.executable, "-m", "eventbus", "supervise", "--quiet"],
                                  env=env, cwd=workdir, start_new_session=True,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        threading.Thread(target=server.run, daemon=True).start()
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and (len(eventbus.runtime.failed_store().all()) < 3
                                               or not server.started):
            time.sleep(0.5)  # declined cards fail on their second try, once the first orders are done
        for order in range(1001, 1301):  # a rush of payments: the master moves a process to them
            jobs.ChargeCard(order, round(random.uniform(10, 200), 2)).dispatch()
        failed = eventbus.runtime.failed_store().all()
        values = {"job": waiting, "failed": failed[0].uuid if failed else "none"}
        saved = capture(f"http://127.0.0.1:{server.config.port}", out, shots, values)
    finally:
        if master is not None:  # the master and its workers: nothing of the demo is worth waiting for
            os.killpg(master.pid, 9)
            master.wait()
        server.should_exit = True
        remove_keys(redis_url, prefix)
        shutil.rmtree(workdir, ignore_errors=True)
    for path in saved:
        print(f"wrote {path} ({path.stat().st_size // 1024} KB)")
    return saved


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "docs" / "images")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0",
                        help="the Redis database the demo uses, under a prefix of its own")
    parser.add_argument("--pages", default="", help="names of the pages to take (default: all): "
                        + ", ".join(s.name for s in PAGES))
    args = parser.parse_args()
    main(args.out, args.redis_url, [n.strip() for n in args.pages.split(",") if n.strip()] or None)
