"""Ship an order through the FastAPI app and watch it go through the queue: ``python examples/fastapi_shop/run.py``.

1. The tables are created and seeded (customer 1, order 7); uvicorn serves the app on a free
   local port in a thread of this process (its lifespan builds the queue connection) and
   ``POST /orders/7/ship`` is sent to it over HTTP. The route commits, then awaits
   ``bus.emit``: the audit listener runs at once, NotifyCustomer is pushed off the event loop.
2. A worker (``eventbus work --app fastapi_shop.app --stop-when-empty``) loads the order in a
   session of its own, runs NotifyCustomer, which queues one notification job per channel, and
   runs those.
3. We print what the worker did, where the mail went and what the database channel stored.

To serve it for real: ``uvicorn fastapi_shop.app:app`` and ``eventbus work --app fastapi_shop.app``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pathlib
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.chdir(HERE)  # the SQLite queue and storage/mail live beside the example

import httpx  # noqa: E402
import uvicorn  # noqa: E402

from fastapi_shop.app import app  # noqa: E402
from fastapi_shop.models import Customer, Session, seed  # noqa: E402

import eventbus  # noqa: E402


@contextlib.contextmanager
def serving(timeout_s: float = 30.0) -> Iterator[str]:
    """Serve the app with uvicorn on a free port of 127.0.0.1 until the block ends; yield its URL."""
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout_s)


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    seed()
    queue = eventbus.connection()
    print(f"queue: {queue.connection_name} ({queue.driver}), {queue.size()} job(s) waiting")
    with serving() as url:
        response = httpx.post(f"{url}/orders/7/ship")
    print(f"POST /orders/7/ship -> {response.status_code} {response.json()}; "
          f"{queue.size()} job(s) now waiting")
    print("running: eventbus work --app fastapi_shop.app --stop-when-empty --sleep 0")
    env = {**os.environ, "PYTHONPATH": str(HERE) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    result = subprocess.run([sys.executable, "-m", "eventbus", "work", "--app", "fastapi_shop.app",
                             "--stop-when-empty", "--sleep", "0"], env=env, check=False)
    if result.returncode != 0:
        print(f"worker exited with {result.returncode}")
        return result.returncode
    mails = sorted((HERE / "storage" / "mail").glob("*.eml"), key=lambda p: p.stat().st_mtime)
    if eventbus.settings().mail.startswith("log") and mails:
        print(f"mail written to {mails[-1]}")
    else:
        print(f"mail sent through {eventbus.settings().mail.split('@')[-1]}")
    with Session() as session:
        stored = session.get(Customer, 1).notifications
    if stored:
        print(f"database notification: {stored[0].data}")
    print(f"{queue.size()} job(s) left; failed jobs: {len(eventbus.failed_store().all())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
