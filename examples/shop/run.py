"""Ship an order and watch it go through the queue: ``python examples/shop/run.py``.

1. ``ship()`` emits OrderShipped: the audit listener runs at once, NotifyCustomer is queued.
2. A worker (``eventbus work --app shop.app --stop-when-empty``) runs NotifyCustomer, which queues
   one notification job per channel (mail, sms, database), and then runs those.
3. We print what the worker did, where the .eml landed and what the database channel stored.
"""

from __future__ import annotations

import logging
import os
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.chdir(HERE)  # the SQLite queue and storage/mail live beside the example

from shop.app import CUSTOMERS, ship  # noqa: E402

import eventbus  # noqa: E402
from notifications import notifications_for  # noqa: E402


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    queue = eventbus.connection()
    print(f"queue: {queue.connection_name} ({queue.driver}), {queue.size()} job(s) waiting")
    ship(order_id=7)
    print(f"emitted OrderShipped(order_id=7); {queue.size()} job(s) now waiting")
    print("running: eventbus work --app shop.app --stop-when-empty --sleep 0")
    env = {**os.environ, "PYTHONPATH": str(HERE) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    result = subprocess.run([sys.executable, "-m", "eventbus", "work", "--app", "shop.app",
                             "--stop-when-empty", "--sleep", "0"], env=env, check=False)
    if result.returncode != 0:
        print(f"worker exited with {result.returncode}")
        return result.returncode
    mails = sorted((HERE / "storage" / "mail").glob("*.eml"), key=lambda p: p.stat().st_mtime)
    if mails:
        print(f"mail written to {mails[-1]}")
    stored = notifications_for(CUSTOMERS[1])
    if stored:
        print(f"database notification: {stored[0].data}")
    print(f"{queue.size()} job(s) left; failed jobs: {len(eventbus.failed_store().all())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
