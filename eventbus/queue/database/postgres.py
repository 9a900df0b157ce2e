"""What only PostgreSQL gets: a push and a batch reservation written out by hand, NOTIFY and LISTEN.

On PostgreSQL the worker's hot paths are one statement each, sent straight to psycopg
(:func:`eventbus.sql.run_driver_sql`): a push is one ``INSERT`` that also sends ``NOTIFY``, and a
prefetching worker's :meth:`DatabaseQueue.reserve <eventbus.queue.database.DatabaseQueue.reserve>`
is one statement of data-modifying CTEs. That text is in the driver's own parameter style
(``%(name)s``, arrays in binary as ``%(name)b``) and is run by the sync driver and by the async
push (:mod:`~eventbus.queue.database.aio`) alike, so each statement lives here beside the one
function that builds its parameters: change one, and the other is on the same screen.

A push sends ``NOTIFY eventbus_jobs`` with the queue's name, and an idle worker ``LISTEN``s
(:class:`NotifyListener`), so it wakes at once instead of after ``--sleep``: sender and receiver
of the channel live here too.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from eventbus.queue.base import QueueJob
from eventbus.queue.database.schema import MAX_ATTEMPTS
from eventbus.sql import run_driver_sql, server_clock

NOTIFY_CHANNEL = "eventbus_jobs"

#: PostgreSQL's push of one or many rows: one statement whose parameters are four arrays, rows
#: numbered in the order given (ids, and so pops, follow it), NOTIFY sent only when a row was added.
#: Arrays go in binary (``%(name)b``): psycopg's text format quotes every element in Python,
#: about 25 times slower for a thousand JSON payloads.
_PG_INSERT = """
WITH added AS (
    INSERT INTO {jobs} (uuid, queue, payload, attempts, exceptions, available_at, created_at)
    SELECT r.uuid, %(queue)s, r.payload, r.attempts, 0, {now} + r.delay, {now}
    FROM unnest(CAST(%(uuids)b AS text[]), CAST(%(payloads)b AS text[]),
                CAST(%(attempts)b AS integer[]), CAST(%(delays)b AS double precision[]))
         WITH ORDINALITY AS r(uuid, payload, attempts, delay, n)
    ORDER BY r.n
    ON CONFLICT (uuid) DO NOTHING
    RETURNING 1
)
SELECT pg_notify(%(channel)s, %(queue)s) FROM (SELECT FROM added LIMIT 1) AS any_added
"""

#: PostgreSQL's push of one row: as above, with plain parameters (dumping four arrays of one
#: element costs a single push about a tenth of its client time).
_PG_INSERT_ONE = """
WITH added AS (
    INSERT INTO {jobs} (uuid, queue, payload, attempts, exceptions, available_at, created_at)
    VALUES (%(uuid)s, %(queue)s, %(payload)s, %(attempts)s, 0, {now} + %(delay)s, {now})
    ON CONFLICT (uuid) DO NOTHING
    RETURNING 1
)
SELECT pg_notify(%(channel)s, %(queue)s) FROM (SELECT FROM added LIMIT 1) AS any_added
"""

#: PostgreSQL's :meth:`DatabaseQueue.reserve`: one statement, so one round trip and one
#: transaction. The rows to take are a FROM item (not ``id IN (subquery)``), so the locking
#: subquery runs once whatever the plan. Every part acts only where the job's token still holds (``id = ANY(ids) AND
#: token = ANY(tokens)`` is the pairwise test: a token is only ever given to one row). The held
#: jobs are kept out of ``taken`` so that no row is changed twice by the statement (one whose
#: reservation was reclaimed but not taken again is ready, and still carries its token).
_PG_RESERVE = """
WITH acked AS (
    DELETE FROM {jobs}
    WHERE id = ANY(CAST(%(ack_ids)b AS bigint[])) AND token = ANY(CAST(%(ack_tokens)b AS text[]))
), renewed AS (
    UPDATE {jobs} SET reserved_at = {now}
    WHERE id = ANY(CAST(%(renew_ids)b AS bigint[])) AND token = ANY(CAST(%(renew_tokens)b AS text[]))
    RETURNING id
), given AS (
    UPDATE {jobs} SET reserved_at = NULL, token = NULL, attempts = GREATEST(attempts - 1, 0)
    WHERE id = ANY(CAST(%(give_ids)b AS bigint[])) AND token = ANY(CAST(%(give_tokens)b AS text[]))
    RETURNING id
), taken AS (
    UPDATE {jobs} AS j SET reserved_at = {now}, token = %(prefix)s || j.id,
        attempts = CASE WHEN j.attempts < {max_attempts} THEN j.attempts + 1 ELSE j.attempts END
    FROM (
        SELECT id FROM {jobs}
        WHERE queue = %(queue)s AND reserved_at IS NULL AND available_at <= {now}
          AND id <> ALL(CAST(%(held)b AS bigint[]))
        ORDER BY id LIMIT %(limit)s
        FOR UPDATE SKIP LOCKED) AS picked
    WHERE j.id = picked.id
    RETURNING j.id, j.uuid, j.payload, j.attempts, j.failure
), notified AS (
    SELECT pg_notify(%(channel)s, %(queue)s) FROM (SELECT FROM given LIMIT 1) AS any_given
)
SELECT 'taken', id, uuid, payload, attempts, failure FROM taken
UNION ALL SELECT 'renewed', id, NULL, NULL, NULL, NULL FROM renewed
UNION ALL SELECT 'notified', NULL, NULL, NULL, NULL, NULL FROM notified
"""


class PostgresStatements:
    """The statements above for one jobs table, with the server's clock (each written out on
    first use, then kept), and the parameters they take."""

    def __init__(self, dialect: sa.Dialect, jobs: sa.Table) -> None:
        self.dialect = dialect
        self.jobs = jobs

    def _written_out(self, template: str) -> str:
        dialect = self.dialect
        return template.format(jobs=dialect.identifier_preparer.format_table(self.jobs),
                               now=server_clock(dialect.name).compile(dialect=dialect),
                               max_attempts=MAX_ATTEMPTS)

    @functools.cached_property
    def _insert(self) -> str:
        return self._written_out(_PG_INSERT)

    @functools.cached_property
    def _insert_one(self) -> str:
        return self._written_out(_PG_INSERT_ONE)

    @functools.cached_property
    def _reserve(self) -> str:
        return self._written_out(_PG_RESERVE)

    def push(self, name: str, rows: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
        """The push of ``rows`` (``uuid``, ``payload``, ``attempts``, ``delay``) to queue ``name``:
        the statement, in the driver's parameter style, and its parameters. One INSERT that sends
        NOTIFY when it added a row; many rows go as four arrays (``... SELECT FROM unnest(...)``,
        in their order), one row as plain parameters."""
        if len(rows) == 1:
            [row] = rows
            return self._insert_one, {"queue": name, "channel": NOTIFY_CHANNEL, "uuid": row["uuid"],
                                      "payload": row["payload"], "attempts": row["attempts"],
                                      "delay": float(row["delay"])}
        return self._insert, {"queue": name, "channel": NOTIFY_CHANNEL,
                              "uuids": [r["uuid"] for r in rows], "payloads": [r["payload"] for r in rows],
                              "attempts": [r["attempts"] for r in rows],
                              "delays": [float(r["delay"]) for r in rows]}

    def reserve(self, engine: sa.Engine, name: str, limit: int, prefix: str, acks: Sequence[QueueJob],
                renew: Sequence[QueueJob], give_back: Sequence[QueueJob]) -> tuple[list[Any], set[int]]:
        """:data:`_PG_RESERVE` on a connection of ``engine`` (the worker's, in autocommit),
        straight on the driver: the rows taken, and the ids of the renewed jobs still held."""
        params = {"queue": name, "limit": limit, "prefix": prefix, "channel": NOTIFY_CHANNEL,
                  "held": [int(job.job_id) for part in (acks, renew, give_back) for job in part],
                  "ack_ids": [int(job.job_id) for job in acks], "ack_tokens": [job.token for job in acks],
                  "renew_ids": [int(job.job_id) for job in renew], "renew_tokens": [job.token for job in renew],
                  "give_ids": [int(job.job_id) for job in give_back],
                  "give_tokens": [job.token for job in give_back]}
        result = run_driver_sql(engine, self._reserve, params)
        return ([row[1:] for row in result if row[0] == "taken"],
                {int(row[1]) for row in result if row[0] == "renewed"})


def notify(conn: sa.Connection, queue: str) -> None:
    """Wake the workers listening for ``queue`` (PostgreSQL sends it when ``conn`` commits)."""
    conn.execute(sa.text("SELECT pg_notify(:c, :q)"), {"c": NOTIFY_CHANNEL, "q": queue})


class NotifyListener:
    """An idle worker's ``LISTEN`` connection: psycopg's own, in autocommit, opened on the first
    wait and kept until :meth:`close` (or until it fails, then opened again on the next wait)."""

    def __init__(self, url: sa.URL) -> None:
        self.url = url
        self._connection: Any = None
        self._lock = threading.Lock()

    def wait(self, queues: Sequence[str], timeout: float) -> bool:
        """Block on LISTEN until a push to one of ``queues`` or ``timeout`` (a push to another
        queue does not wake the worker). False when LISTEN is not available."""
        deadline = time.monotonic() + timeout
        with self._lock:
            try:
                if self._connection is None:
                    import psycopg

                    params = self.url.set(drivername="postgresql").render_as_string(hide_password=False)
                    self._connection = psycopg.connect(params, autocommit=True)
                    self._connection.execute(f"LISTEN {NOTIFY_CHANNEL}")
                while (left := deadline - time.monotonic()) > 0:
                    if any(n.payload in queues for n in self._connection.notifies(timeout=left, stop_after=1)):
                        break
                return True
            except Exception:  # fall back to sleeping; the next pop reports a real outage
                self._close()
                return False

    def close(self) -> None:
        with self._lock:
            self._close()

    def _close(self) -> None:
        if self._connection is not None:
            try:
                self._connection.close()
            except Exception:
                pass
            self._connection = None
