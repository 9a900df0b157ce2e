"""The shop's tables (plain SQLAlchemy ORM) and the session factory eventbus loads models with."""

from __future__ import annotations

import datetime as dt
import os
import pathlib

import sqlalchemy as sa
from sqlalchemy import JSON, ForeignKey
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship, sessionmaker

from eventbus.contrib.sqlalchemy import use_sessions
from notifications import Notifiable

DEFAULT_DATABASE = pathlib.Path(__file__).resolve().parent.parent / "shop.sqlite3"
engine = sa.create_engine(os.environ.get("SHOP_DATABASE_URL", f"sqlite:///{DEFAULT_DATABASE}"))
Session = sessionmaker(engine, expire_on_commit=False)

# Mapped instances travel by primary key; the worker loads them through Session, one per job.
use_sessions(Session)


class Base(DeclarativeBase):
    pass


class Customer(Base, Notifiable):
    """Mail goes to ``email``, SMS to ``phone``; database notifications are stored under ``id``."""

    __tablename__ = "customers"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str]
    email: Mapped[str]
    phone: Mapped[str]
    orders: Mapped[list[Order]] = relationship(back_populates="customer")


class Order(Base):
    __tablename__ = "orders"
    id: Mapped[int] = mapped_column(primary_key=True)
    customer_id: Mapped[int] = mapped_column(ForeignKey("customers.id"))
    items: Mapped[list[str]] = mapped_column(JSON)
    shipped_at: Mapped[dt.datetime | None]
    customer: Mapped[Customer] = relationship(back_populates="orders")

    @property
    def tracking_url(self) -> str:
        return f"https://shop.example/track/{self.id}"


def seed() -> None:
    """Create the tables, and customer 1 (Ada) with order 7 unless they exist."""
    Base.metadata.create_all(engine)
    with Session.begin() as session:
        if session.get(Customer, 1) is None:
            ada = Customer(id=1, name="Ada Lovelace", email="ada@example.com", phone="+15550100")
            session.add_all([ada, Order(id=7, customer=ada,
                                        items=["Analytical Engine manual", "Punch cards (x100)"])])


def ship_order(order_id: int) -> Order | None:
    """Mark the order shipped and commit; the order comes back detached, its columns loaded."""
    with Session.begin() as session:
        order = session.get(Order, order_id)
        if order is not None:
            order.shipped_at = dt.datetime.now(dt.timezone.utc)
        return order
