"""Where monitoring keeps its entries in a connection's state store, and how names fit in keys.

::

    workers:{connection}:{host}:{pid}                     one running worker (JSON), short TTL
    recent:{connection}:{host}:{pid}                      its last finished jobs (JSON list)
    queues:{connection}:{queue}                           a queue that held jobs lately
    paused:{connection}:{queue}                           a paused queue (workers skip it)
    paused-version:{connection}                           bumped by every pause and resume
    paused:{connection}:supervisor:{name}                 a paused supervisor (its workers idle)
    supervisors:{connection}:{host}:{pid}:{name}          one supervisor of a running master (JSON)
    terminate:{connection}                                bumped by ``eventbus terminate``
    metrics:{connection}:{minute}:{queue}:{job}:{field}   a counter of one minute's bucket
    history:{connection}:{minute}                         that minute per queue (JSON), kept longer
    alerted:{connection}:{queue}:{kind}                   an alert was sent (TTL: the cooldown)
    alerted-job:{connection}:{job}                        a job class's failure alert was sent

Queue and job names are percent-encoded (``:`` and ``%`` included), so a key splits back
into its parts; a job name too long for a key is cut and given a digest.
"""

from __future__ import annotations

import hashlib
from urllib.parse import quote, unquote

from eventbus.state.base import MAX_KEY_LENGTH
from eventbus.state.keys import readable

#: Fields of one metrics bucket: attempts by outcome, summed runtime, summed wait and its count.
FIELDS = ("done", "failed", "released", "runtime", "wait", "waited")


def part(name: str) -> str:
    """A name as one key part: no ``:`` (percent-encoded like everything unusual)."""
    return quote(name, safe="._-@/+")


def unpart(text: str) -> str:
    return unquote(text)


def workers(connection: str) -> str:
    return f"workers:{part(connection)}:"


def recent(connection: str) -> str:
    return f"recent:{part(connection)}:"


def queues(connection: str) -> str:
    return f"queues:{part(connection)}:"


def paused(connection: str) -> str:
    return f"paused:{part(connection)}:"


def paused_version(connection: str) -> str:
    return f"paused-version:{part(connection)}"


def paused_supervisors(connection: str) -> str:
    """Beside the paused queues (one listing reads both): a queue's part never holds a ``:``."""
    return f"{paused(connection)}supervisor:"


def supervisors(connection: str) -> str:
    return f"supervisors:{part(connection)}:"


def terminate(connection: str) -> str:
    return f"terminate:{part(connection)}"


def metrics(connection: str) -> str:
    return f"metrics:{part(connection)}:"


def history(connection: str) -> str:
    return f"history:{part(connection)}:"


def snapshot(connection: str, minute: int) -> str:
    """The key of the snapshot of the minute starting at ``minute`` (epoch seconds)."""
    return f"{history(connection)}{minute}"


def alerted(connection: str, queue: str, kind: str) -> str:
    return f"alerted:{part(connection)}:{part(queue)}:{part(kind)}"


def alerted_job(connection: str, job: str) -> str:
    """The cooldown key of the failure alerts of one job class (a long name as its digest)."""
    return f"alerted-job:{part(connection)}:{part(readable(job))}"


def worker_id(host: str, pid: int) -> str:
    return f"{part(host)}:{pid}"


def metric(connection: str, minute: int, queue: str, job: str, field: str) -> str:
    """The counter key of one field of one (queue, job) in the bucket starting at ``minute``."""
    head = f"{metrics(connection)}{minute}:{part(queue)}:"
    tail = f":{field}"
    job_part = part(job)
    room = MAX_KEY_LENGTH - len(head) - len(tail)
    if len(job_part) > room:
        digest = hashlib.sha1(job.encode("utf-8", "surrogateescape")).hexdigest()[:10]
        cut = job_part[:max(room - 11, 0)]
        escape = cut.rfind("%", len(cut) - 2)
        job_part = (cut[:escape] if escape >= 0 else cut) + "~" + digest
    return head + job_part + tail


def parse_metric(connection: str, key: str) -> tuple[int, str, str, str] | None:
    """(minute, queue, job, field) of a metrics key, or None when it is not one."""
    rest = key[len(metrics(connection)):] if key.startswith(metrics(connection)) else None
    pieces = rest.split(":") if rest is not None else []
    if len(pieces) != 4 or pieces[3] not in FIELDS or not pieces[0].isdigit():
        return None
    return int(pieces[0]), unpart(pieces[1]), unpart(pieces[2]), pieces[3]
