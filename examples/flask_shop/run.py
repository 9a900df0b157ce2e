"""Ship an order through the Flask app and watch it go through the queue: ``python examples/flask_shop/run.py``.

1. The app is created and seeded (customer 1, order 7), then ``POST /orders/7/ship`` is sent to it
   (Flask's test client: the whole request, in this process). The route emits OrderShipped: the
   audit listener runs at once; NotifyCustomer is pushed when the request's commit succeeds.
2. A worker (``flask --app flask_shop eventbus work --stop-when-empty``) loads the order in an
   app context, runs NotifyCustomer, which queues one notification job per channel, and runs those.
3. We print what the worker did, where the mail went and what the database channel stored.

To serve it for real: ``flask --app flask_shop run`` and ``flask --app flask_shop eventbus work``.
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

from flask_shop import create_app  # noqa: E402
from flask_shop.models import Customer, db, seed  # noqa: E402

import eventbus  # noqa: E402


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    app = create_app()
    with app.app_context():
        seed()
    queue = eventbus.connection()
    print(f"queue: {queue.connection_name} ({queue.driver}), {queue.size()} job(s) waiting")
    response = app.test_client().post("/orders/7/ship")
    print(f"POST /orders/7/ship -> {response.status_code} {response.get_json()}; "
          f"{queue.size()} job(s) now waiting")
    command = [sys.executable, "-m", "flask", "--app", "flask_shop", "eventbus", "work",
               "--stop-when-empty", "--sleep", "0"]
    print("running: flask --app flask_shop eventbus work --stop-when-empty --sleep 0")
    env = {**os.environ, "PYTHONPATH": str(HERE) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    result = subprocess.run(command, env=env, check=False)
    if result.returncode != 0:
        print(f"worker exited with {result.returncode}")
        return result.returncode
    mail_url = eventbus.settings().mail
    mails = sorted((HERE / "storage" / "mail").glob("*.eml"), key=lambda p: p.stat().st_mtime)
    if mail_url.startswith("log") and mails:
        print(f"mail written to {mails[-1]}")
    else:
        print(f"mail sent through {eventbus.settings().mail.split('@')[-1]}")
    with app.app_context():
        stored = db.session.get(Customer, 1).notifications
    if stored:
        print(f"database notification: {stored[0].data}")
    print(f"{queue.size()} job(s) left; failed jobs: {len(eventbus.failed_store().all())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
