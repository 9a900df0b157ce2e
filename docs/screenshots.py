"""Make the dashboard screenshots of the README: ``python docs/screenshots.py [--out DIR]``.

It runs a small demo shop on a throw-away SQLite database: two supervised workers drain a few
hundred jobs (some fail), the dashboard is served on a loopback port, and headless Chromium
(``/usr/bin/chromium``, driven by Playwright) takes ``dashboard-overview.png`` and
``dashboard-failed.png``. The hour before is seeded into the metrics with
:class:`eventbus.monitoring.MetricsRecorder` so the charts have a shape; everything else on the
pictures is live. The workers run a copy of the package from the temporary directory, so the
tracebacks on the failed-job page show that directory, not this checkout.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]

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
''')


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def prepare(workdir: pathlib.Path, url: str) -> pathlib.Path:
    """A site directory with a copy of eventbus and the demo shop, configured for ``url``."""
    site = workdir / "site"
    shutil.copytree(ROOT / "eventbus", site / "eventbus", ignore=shutil.ignore_patterns("__pycache__"))
    (site / "shop").mkdir()
    (site / "shop" / "__init__.py").write_text(
        "import eventbus\n"
        f"eventbus.configure(default='database', connections={{'database': {{'driver': 'database', "
        f"'url': {url!r}}}, 'redis': {{'driver': 'null'}}}})\n")
    (site / "shop" / "jobs.py").write_text(SHOP)
    return site


def seed_history(connection: str) -> None:
    from eventbus import runtime
    from eventbus.monitoring import MetricsRecorder

    recorder = MetricsRecorder(connection)
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
    recorder.flush(runtime.state(connection))


def main(out: pathlib.Path) -> None:
    from playwright.sync_api import sync_playwright

    workdir = pathlib.Path(tempfile.mkdtemp(prefix="eventbus-demo-"))
    url = f"sqlite:///{workdir / 'shop.sqlite3'}"
    site = prepare(workdir, url)
    sys.path.insert(0, str(site))
    import eventbus
    import uvicorn
    from eventbus.dashboard import create_app

    from shop import jobs  # type: ignore[import-not-found]  # configures eventbus

    eventbus.connection().ping()
    eventbus.runtime.migrate()
    seed_history("database")
    env = {**os.environ, "PYTHONPATH": str(site), "EVENTBUS_CONNECTION": "database",
           "EVENTBUS_MONITOR_INTERVAL": "0.5", "EVENTBUS_APP": "shop.jobs"}
    env.pop("PYTHONSAFEPATH", None)
    worker = subprocess.Popen([sys.executable, "-m", "eventbus", "work", "--queue", "payments,mail,default",
                               "--processes", "2", "--name", "shop", "--sleep", "0.2", "--quiet"],
                              env=env, cwd=workdir, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(title="shop · eventbus"), host="127.0.0.1", port=port,
                                           log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    try:
        for order in range(1, 241):
            jobs.ChargeCard(order, round(random.uniform(10, 200), 2)).dispatch()
            jobs.SendReceipt(order).dispatch()
            if order % 3 == 0:
                jobs.GenerateInvoice(order).dispatch()
        time.sleep(8)  # the workers get through part of it: the queues are still busy
        failed = eventbus.runtime.failed_store().all()
        out.mkdir(parents=True, exist_ok=True)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(f"http://127.0.0.1:{port}/")
            page.wait_for_selector("#live[data-updated]")
            page.screenshot(path=str(out / "dashboard-overview.png"), full_page=True)
            if failed:
                page.goto(f"http://127.0.0.1:{port}/failed/{failed[0].uuid}")
            else:
                page.goto(f"http://127.0.0.1:{port}/failed")
            page.screenshot(path=str(out / "dashboard-failed.png"), full_page=False)
            browser.close()
    finally:
        os.killpg(worker.pid, 9)
        worker.wait()
        server.should_exit = True
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"wrote {out / 'dashboard-overview.png'} and {out / 'dashboard-failed.png'}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, default=ROOT / "docs" / "images")
    main(parser.parse_args().out)
