"""The Flask app: ``POST /orders/<id>/ship`` ships an order.

Settings: ``SHOP_DATABASE_URL`` for the shop's tables (default ``shop.sqlite3`` beside this
package), and eventbus's from ``EVENTBUS_*`` (in ``app.config``, or the environment): with
nothing set, the queue is ``eventbus.sqlite3`` in the working directory and mail is written to
``storage/mail``.
"""

from __future__ import annotations

import datetime as dt
import os
import pathlib
from collections.abc import Mapping
from typing import Any

from flask import Flask

from eventbus import emit
from eventbus.contrib.flask import EventBus
from flask_shop.models import Order, db, seed
from flask_shop.shop import OrderShipped

DEFAULT_DATABASE = pathlib.Path(__file__).resolve().parent.parent / "shop.sqlite3"

eventbus_ext = EventBus()


def create_app(config: Mapping[str, Any] | None = None) -> Flask:
    app = Flask(__name__)
    app.config["SQLALCHEMY_DATABASE_URI"] = os.environ.get("SHOP_DATABASE_URL", f"sqlite:///{DEFAULT_DATABASE}")
    app.config.update(config or {})
    db.init_app(app)
    eventbus_ext.init_app(app)
    app.cli.command("seed")(seed)

    @app.post("/orders/<int:order_id>/ship")
    def ship(order_id: int) -> dict[str, Any]:
        order = db.get_or_404(Order, order_id)
        order.shipped_at = dt.datetime.now(dt.timezone.utc)
        emit(OrderShipped(order))   # audit runs now; NotifyCustomer waits for the commit
        db.session.commit()
        return {"order_id": order.id, "shipped": True}

    return app
