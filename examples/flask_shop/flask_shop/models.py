"""The shop's tables: customers (who get notified) and their orders (which ship)."""

from __future__ import annotations

import datetime as dt

from flask_sqlalchemy import SQLAlchemy
from sqlalchemy import JSON, ForeignKey
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

from notifications import Notifiable


class Base(DeclarativeBase):
    pass


db = SQLAlchemy(model_class=Base)


class Customer(db.Model, Notifiable):  # type: ignore[name-defined,misc]
    """Mail goes to ``email``, SMS to ``phone``; database notifications are stored under ``id``."""

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str]
    email: Mapped[str]
    phone: Mapped[str]
    orders: Mapped[list[Order]] = relationship(back_populates="customer")


class Order(db.Model):  # type: ignore[name-defined,misc]
    id: Mapped[int] = mapped_column(primary_key=True)
    customer_id: Mapped[int] = mapped_column(ForeignKey("customer.id"))
    items: Mapped[list[str]] = mapped_column(JSON)
    shipped_at: Mapped[dt.datetime | None]
    customer: Mapped[Customer] = relationship(back_populates="orders")

    @property
    def tracking_url(self) -> str:
        return f"https://shop.example/track/{self.id}"


def seed() -> None:
    """Create the tables, and customer 1 (Ada) with order 7 unless they exist."""
    db.create_all()
    if db.session.get(Customer, 1) is None:
        ada = Customer(id=1, name="Ada Lovelace", email="ada@example.com", phone="+15550100")
        db.session.add_all([ada, Order(id=7, customer=ada,
                                       items=["Analytical Engine manual", "Punch cards (x100)"])])
        db.session.commit()
