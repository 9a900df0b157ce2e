"""SQLAlchemy ORM: models by primary key without registration, a session per job, after_commit
tied to a session's transaction, and the eventbus tables for Alembic."""

from __future__ import annotations

import json
import pathlib
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

import eventbus
import sa_app
from eventbus import Worker, WorkerOptions, runtime, serializer
from eventbus.contrib.sqlalchemy import (
    follow_transactions,
    job_session,
    skip_eventbus_tables,
    sql_metadata,
    use_sessions,
)
from eventbus.errors import EventBusError, SerializationError
from eventbus.testing import fake_queue
from framework_helpers import PYTHON, clean_env, python_path, run_process

HERE = pathlib.Path(__file__).resolve().parent


@pytest.fixture
def db(tmp_path: pathlib.Path) -> Iterator[sa.Engine]:
    """sa_app's tables in a fresh SQLite file, seeded; its package trusted, as --app would."""
    eventbus.trust("sa_app")
    engine = sa_app.bind(f"sqlite:///{tmp_path / 'sa_app.sqlite3'}")
    use_sessions(sa_app.Session)
    sa_app.seed()
    yield engine
    engine.dispose()


def work() -> int:
    return Worker.for_connection(options=WorkerOptions(stop_when_empty=True, sleep_s=0, memory_mb=0)).run()


def book(session: Any, book_id: int = 7) -> sa_app.Book:
    found = session.get(sa_app.Book, book_id)
    assert found is not None
    return found


def test_a_mapped_instance_travels_as_class_and_primary_key(db: sa.Engine) -> None:
    with sa_app.Session() as session:
        encoded = serializer.encode(book(session))
        shelf = serializer.encode(session.get(sa_app.Shelf, ("attic", 2)))
    assert encoded == {"__t__": "model", "cls": "sa_app.Book", "key": 7}
    assert shelf == {"__t__": "model", "cls": "sa_app.Shelf", "key": ["attic", 2]}


def test_a_pending_instance_is_flushed_for_its_key_and_a_transient_one_refused(db: sa.Engine) -> None:
    with sa_app.Session() as session:
        new = sa_app.Book(title="Sketch", author_id=1)
        with pytest.raises(SerializationError, match="no primary key yet"):
            serializer.encode(new)
        session.add(new)
        assert serializer.encode(new)["key"] == new.id is not None


def test_the_worker_loads_the_row_fresh_in_a_session_it_closes(db: sa.Engine) -> None:
    with sa_app.Session() as session:
        eventbus.dispatch(sa_app.WriteNote(book(session)))
        eventbus.dispatch(sa_app.ShelfNote(session.get(sa_app.Shelf, ("attic", 2))))
        eventbus.dispatch(sa_app.ReadAuthor(book(session)))
    with sa_app.Session.begin() as session:
        book(session).title = "Notes, revised"          # after the dispatch, before the job
    assert work() == 0
    assert sa_app.notes() == ["Notes, revised by Ada", "attic/2: letters"]
    assert sa_app.SEEN[-1] == "Ada"
    assert db.pool.checkedout() == 0                   # the jobs' sessions were closed
    assert eventbus.failed_store().all() == []


def test_a_missing_row_fails_the_job_or_deletes_it_when_the_job_says_so(db: sa.Engine) -> None:
    with sa_app.Session() as session:
        eventbus.dispatch(sa_app.WriteNote(book(session)))
        eventbus.dispatch(sa_app.ForgivingNote(book(session)))
    with sa_app.Session.begin() as session:
        session.delete(book(session))
    assert work() == 0
    [failed] = eventbus.failed_store().all()
    assert "ModelNotFoundError" in failed.exception and "sa_app.Book" in failed.exception
    assert json.loads(failed.payload)["displayName"] == "sa_app.WriteNote"
    assert eventbus.connection().size() == 0 and sa_app.notes() == []


def test_job_session_exists_only_while_a_job_runs() -> None:
    with pytest.raises(EventBusError, match="only available while a queued job runs"):
        job_session()


def test_a_worker_process_needs_no_registration(db: sa.Engine, tmp_path: pathlib.Path) -> None:
    """The worker imports the app (use_sessions there) and loads the book with its author."""
    with sa_app.Session() as session:
        eventbus.dispatch(sa_app.WriteNote(book(session)))
    env = clean_env(PYTHONPATH=python_path(HERE), PYTHONWARNINGS="error",
                    SA_TEST_DB_URL=f"sqlite:///{tmp_path / 'sa_app.sqlite3'}")
    done = run_process([PYTHON, "-m", "eventbus", "work", "--app", "sa_app", "--stop-when-empty",
                        "--sleep", "0"], env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "sa_app.WriteNote [default]" in done.stdout and "DONE" in done.stdout
    assert sa_app.notes() == ["Notes by Ada"]


# -- after_commit follows the session --------------------------------------------------------------

class Reindex(eventbus.Job):
    after_commit = True

    def __init__(self, book: sa_app.Book) -> None:
        self.book = book

    def handle(self) -> None: ...


def pushed_titles(queue: Any) -> list[str]:
    return [p.command.book.title for p in queue.pushed]


def test_pushes_made_in_a_session_transaction_go_out_when_it_commits(db: sa.Engine) -> None:
    with fake_queue() as queue:
        with sa_app.Session() as session:
            b = book(session)
            b.title = "Committed"
            Reindex(b).dispatch()
            eventbus.dispatch(Reindex(b), after_commit=False)   # not marked: at once
            assert len(queue.pushed) == 1
            session.commit()
            assert len(queue.pushed) == 2
            Reindex(book(session)).dispatch()                 # read-only transaction, closed below
            assert len(queue.pushed) == 2
        assert len(queue.pushed) == 3


def test_pushes_are_dropped_when_the_transaction_rolls_back_or_is_closed_after_writing(db: sa.Engine) -> None:
    with fake_queue() as queue:
        with sa_app.Session() as session:
            b = book(session)
            Reindex(b).dispatch()
            session.rollback()
        with sa_app.Session() as session:
            b = book(session)
            b.title = "Never committed"
            session.flush()
            Reindex(b).dispatch()
        assert queue.pushed == []
        with pytest.raises(ValueError):
            with sa_app.Session.begin() as session:
                Reindex(book(session)).dispatch()
                raise ValueError("rolled back")
        assert queue.pushed == []


def test_a_savepoint_rolled_back_drops_only_its_own_pushes(db: sa.Engine) -> None:
    with fake_queue() as queue:
        with sa_app.Session.begin() as session:
            b = book(session)
            Reindex(b).dispatch()
            savepoint = session.begin_nested()
            Reindex(b).dispatch()
            savepoint.rollback()
            with session.begin_nested():
                Reindex(b).dispatch()
            assert queue.pushed == []
        assert len(queue.pushed) == 2


def test_following_a_sessionmaker_twice_holds_once(db: sa.Engine) -> None:
    follow_transactions(sa_app.Session)
    with fake_queue() as queue:
        with sa_app.Session.begin() as session:
            Reindex(book(session)).dispatch()
        assert len(queue.pushed) == 1


# -- Alembic --------------------------------------------------------------------------------------

BATCH_TABLES = {"eventbus_batches", "eventbus_batch_jobs", "eventbus_batch_outbox"}
#: An app with a jobs table of its own keeps its batches in tables of its own too.
REPORT_BATCH_TABLES = {"report_jobs_batches", "report_jobs_batch_jobs", "report_jobs_batch_outbox"}
#: The recent-jobs store's tables, beside the state table (eventbus.tracking).
TRACKING_TABLES = {"eventbus_job_records", "eventbus_job_tags", "eventbus_monitored_tags"}
REPORT_TRACKING_TABLES = {"report_jobs_job_records", "report_jobs_job_tags", "report_jobs_monitored_tags"}


def test_sql_metadata_has_the_tables_of_the_configuration(tmp_path: pathlib.Path) -> None:
    import notifications.store

    assert set(sql_metadata().tables) == {"jobs", "eventbus_signals", "eventbus_state", "failed_jobs", *BATCH_TABLES,
                                          *TRACKING_TABLES}
    eventbus.configure(connections={"reports": {"driver": "database", "table": "report_jobs",
                                                "url": f"sqlite:///{tmp_path / 'reports.sqlite3'}"}})
    assert set(sql_metadata(notifications.store.metadata).tables) == {
        "jobs", "report_jobs", "eventbus_signals", "eventbus_state", "report_jobs_state", "failed_jobs",
        "notifications", *BATCH_TABLES, *REPORT_BATCH_TABLES, *TRACKING_TABLES, *REPORT_TRACKING_TABLES}
    only_reports = sql_metadata(url=f"sqlite:///{tmp_path / 'reports.sqlite3'}")
    assert set(only_reports.tables) == {"report_jobs", "eventbus_signals", "report_jobs_state", *REPORT_BATCH_TABLES,
                                        *REPORT_TRACKING_TABLES}
    eventbus.configure(default="redis")  # the built-in SQLite connection is not used: no table of it
    assert set(sql_metadata().tables) == set()  # failed jobs and batches: Redis


def autogenerate(url: str, target: Any, include_object: Any = None) -> list[tuple[str, str]]:
    """What Alembic's autogenerate would propose: (operation, table) pairs."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            opts = {"include_object": include_object} if include_object else {}
            context = MigrationContext.configure(conn, opts=opts)
            diffs = compare_metadata(context, target)
    finally:
        engine.dispose()
    return [(d[0], d[1].name) for d in diffs if isinstance(d, tuple) and d[0].endswith("_table")]


def test_alembic_keeps_the_eventbus_tables_when_told_about_them(tmp_path: pathlib.Path) -> None:
    """The issue: autogenerate on the shared database proposed dropping the eventbus tables."""
    pytest.importorskip("alembic")
    import notifications.store

    url = f"sqlite:///{tmp_path / 'app.sqlite3'}"
    eventbus.configure(connections={"database": {"driver": "database", "url": url}})
    app = sa.MetaData()
    sa.Table("orders", app, sa.Column("id", sa.Integer, primary_key=True))
    engine = sa.create_engine(url)
    app.create_all(engine)
    engine.dispose()
    runtime.migrate()  # jobs, signals, state, batches, failed_jobs, notifications, the recent-jobs store

    dropped = {name for op, name in autogenerate(url, app) if op == "remove_table"}
    assert dropped == {"jobs", "eventbus_signals", "eventbus_state", "failed_jobs", "notifications",
                       *BATCH_TABLES, *TRACKING_TABLES}
    assert autogenerate(url, [app, sql_metadata(notifications.store.metadata, url=url)]) == []
    assert autogenerate(url, app, skip_eventbus_tables(notifications.store.metadata)) == []
