"""An app on plain SQLAlchemy ORM, for the tests (in-process workers and worker subprocesses).

``SA_TEST_DB_URL`` names its database. Books and authors travel by primary key; the jobs read
their lazy relationships and write through ``job_session()``.
"""

from __future__ import annotations

import os

import sqlalchemy as sa
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship, sessionmaker

import eventbus
from eventbus.contrib.sqlalchemy import job_session, use_sessions

Session = sessionmaker()
use_sessions(Session)


def bind(url: str) -> sa.Engine:
    """Point the app at the database at ``url`` (the tests give each test its own)."""
    engine = sa.create_engine(url)
    Session.configure(bind=engine)
    return engine


engine = bind(os.environ.get("SA_TEST_DB_URL", "sqlite://"))


class Base(DeclarativeBase):
    pass


class Author(Base):
    __tablename__ = "authors"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str]


class Book(Base):
    __tablename__ = "books"
    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str]
    author_id: Mapped[int] = mapped_column(sa.ForeignKey("authors.id"))
    author: Mapped[Author] = relationship()


class Shelf(Base):
    """A composite primary key."""

    __tablename__ = "shelves"
    room: Mapped[str] = mapped_column(primary_key=True)
    number: Mapped[int] = mapped_column(primary_key=True)
    label: Mapped[str]


class Note(Base):
    """What the jobs write."""

    __tablename__ = "notes"
    id: Mapped[int] = mapped_column(primary_key=True)
    text: Mapped[str]


class WriteNote(eventbus.Job):
    """Reads the book's author (a lazy load: the job's session is open) and writes a note."""

    def __init__(self, book: Book) -> None:
        self.book = book

    def handle(self) -> None:
        session = job_session()
        assert sa.inspect(self.book).session is session
        session.add(Note(text=f"{self.book.title} by {self.book.author.name}"))
        session.commit()


class ShelfNote(eventbus.Job):
    def __init__(self, shelf: Shelf) -> None:
        self.shelf = shelf

    def handle(self) -> None:
        session = job_session()
        session.add(Note(text=f"{self.shelf.room}/{self.shelf.number}: {self.shelf.label}"))
        session.commit()


SEEN: list[str] = []


class ReadAuthor(eventbus.Job):
    """Only reads (a lazy load): its connection stays checked out until its session closes."""

    def __init__(self, book: Book) -> None:
        self.book = book

    def handle(self) -> None:
        SEEN.append(self.book.author.name)


class ForgivingNote(WriteNote):
    delete_when_missing_models = True


def notes() -> list[str]:
    with Session() as session:
        return list(session.scalars(sa.select(Note.text).order_by(Note.id)))


def seed() -> None:
    Base.metadata.create_all(Session.kw["bind"])
    with Session.begin() as session:
        ada = Author(id=1, name="Ada")
        session.add_all([ada, Book(id=7, title="Notes", author=ada),
                         Shelf(room="attic", number=2, label="letters")])
