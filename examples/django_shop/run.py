"""Ship an order through the Django app and watch it go through the queue: ``python examples/django_shop/run.py``.

1. ``manage.py migrate`` runs in this process (the shop's tables in ``db.sqlite3``, and the
   eventbus tables), the shop is seeded (customer 1, order 7), and ``POST /orders/7/ship`` is
   sent to the app (Django's test client: the whole request through the URL conf and the view,
   in this process). The view emits OrderShipped inside ``transaction.atomic()``: the audit
   listener runs at once, NotifyCustomer is pushed by ``transaction.on_commit``.
2. A worker (``manage.py eventbus work --stop-when-empty``) loads the order with
   ``Order.objects``, runs NotifyCustomer, which queues one notification job per channel, and
   runs those.
3. We print what the worker did, where the mail went and what the database channel stored.

To serve it for real: ``python manage.py runserver`` and ``python manage.py eventbus work``.
"""

from __future__ import annotations

import logging
import os
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.chdir(HERE)  # the SQLite databases and storage/mail live beside the example
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "django_shop.settings")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402

import eventbus  # noqa: E402
from django_shop.shop.models import Customer, seed  # noqa: E402


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    call_command("migrate", verbosity=0)
    seed()
    queue = eventbus.connection()
    print(f"queue: {queue.connection_name} ({queue.driver}), {queue.size()} job(s) waiting")
    response = Client().post("/orders/7/ship")
    print(f"POST /orders/7/ship -> {response.status_code} {response.json()}; "
          f"{queue.size()} job(s) now waiting")
    print("running: python manage.py eventbus work --stop-when-empty --sleep 0")
    result = subprocess.run([sys.executable, "manage.py", "eventbus", "work", "--stop-when-empty",
                             "--sleep", "0"], check=False)
    if result.returncode != 0:
        print(f"worker exited with {result.returncode}")
        return result.returncode
    mails = sorted((HERE / "storage" / "mail").glob("*.eml"), key=lambda p: p.stat().st_mtime)
    if eventbus.settings().mail.startswith("log") and mails:
        print(f"mail written to {mails[-1]}")
    else:
        print(f"mail sent through {eventbus.settings().mail.split('@')[-1]}")
    stored = Customer.objects.get(pk=1).notifications
    if stored:
        print(f"database notification: {stored[0].data}")
    print(f"{queue.size()} job(s) left; failed jobs: {len(eventbus.failed_store().all())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
