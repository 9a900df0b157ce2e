"""The Amazon SQS driver, over boto3 (``pip install 'eventbus[sqs]'``).

Connection settings as Laravel's ``sqs`` connector: ``key``, ``secret`` (and ``token``; leave them
empty to use boto3's own credential chain: environment, profile, instance role), ``region``,
``prefix`` (the queue URL prefix, ``https://sqs.eu-west-1.amazonaws.com/123456789012``),
``suffix``, ``queue``, plus ``endpoint_url`` (a local SQS such as moto) and ``block_for``.

- **queue URLs**: a queue name that is a URL is used as is; with a ``prefix`` the URL is
  ``prefix/name+suffix`` (the suffix goes before ``.fifo``); without one, ``GetQueueUrl`` (once per
  name). eventbus never creates queues.
- **retry_after is the visibility timeout**, sent with every receive, so the queue's own
  ``VisibilityTimeout`` attribute plays no part and the worker's timeout rule holds.
- **delays** (``DelaySeconds``) are whole seconds, rounded up, and at most 900 (15 minutes): a
  longer ``later`` raises :class:`EventBusError` instead of running early; so does any delay on a
  FIFO queue (SQS allows none per message there). ``release`` is ``ChangeMessageVisibility``,
  which may hide a message up to 12 hours after its receive (longer backoffs are cut to that).
- **attempts** = the count at push (a message attribute, else the payload's) +
  ``ApproximateReceiveCount``, which counts every receive (a worker killed mid-job included). A
  release that gives its attempt back (a lock or a limit said "not now") sends a copy carrying
  one attempt fewer and deletes the original; on a FIFO queue it uses up a try instead (a copy
  would lose the group's order).
- **pop** is a short poll; the worker's idle **wait** is a long poll (``WaitTimeSeconds``) on its
  first queue, or 1-second long polls taking its queues in turn; the message it receives goes to
  the next pop. On AWS a short poll of a nearly empty queue can miss messages (it asks a subset of
  servers): a daemon worker finds them in its next long poll, ``--stop-when-empty`` may stop early.
- **fencing**: a receive hands out a receipt handle; an old handle cannot change the visibility of
  a message received again (AWS refuses it), so a stale worker cannot release it, and a delete
  that comes after the visibility timeout first proves it still holds the message by extending
  it (AWS's delete with an old handle "succeeds" without deleting). In one process the
  reservation token is the fence.
- **clear** receives and deletes ready messages until none is left. Not ``PurgeQueue``: that also
  deletes messages workers are running (in flight) and cannot count. No SQS call reaches a delayed
  message before it is due, so ``clear`` leaves those (``clears_delayed = False``), and on a FIFO
  queue the messages queued behind an in-flight one of their group.
- **size** and **stats**: ``ApproximateNumberOfMessages`` (+ ``Delayed``, + ``NotVisible``);
  **peek** returns nothing: a receive is not a look (it counts as an attempt).
- **idempotent push**: only FIFO queues deduplicate, by ``MessageDeduplicationId`` = the payload's
  uuid, for 5 minutes from the first send, *whether or not that job still exists*. ``push_raw``
  (how ``eventbus retry`` re-queues a failed job under its old uuid) sends a fresh deduplication id
  so that a retry is never dropped. FIFO messages share one group per queue (its name).
- **max_exceptions** travels with the message: when a job that counts exceptions is released
  after one, the driver sends a copy carrying the new count (and attempts) and deletes the
  original. On FIFO queues a copy would lose the group's order, so there the count is kept by the
  worker process that saw the exceptions.
- **worker signals** (``restart``, ``down``) are tags of the connection's default queue
  (``eventbus:signal:restart``), which must therefore exist.
- Bodies SQS would refuse (characters outside its set, an empty body) travel base64-encoded.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import itertools
import logging
import math
import re
import threading
import time
import uuid as uuid_module
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from eventbus.errors import (
    ConfigurationError,
    ConnectionUnavailableError,
    EventBusError,
    MissingDependencyError,
)
from eventbus.failed.base import refusal_description
from eventbus.payload import MAX_COUNT, Payload, attempts_of, uuid_of
from eventbus.queue.base import Delay, Queue, QueueJob, QueueStats, delay_seconds, parse_signals
from eventbus.queue.capabilities import GivesBackAttempts, WorkerSignals
from eventbus.urls import redact_url, redact_urls_in

log = logging.getLogger(__name__)
T = TypeVar("T")

MAX_DELAY_S = 900
MAX_VISIBILITY_S = 43_200
MAX_WAIT_S = 20
BATCH_ENTRIES = 10
BATCH_BYTES = 1_048_576
ATTEMPTS = "eventbus.attempts"
EXCEPTIONS = "eventbus.exceptions"
ENCODING = "eventbus.encoding"
SIGNAL_TAG = "eventbus:signal:"
QUEUE_NAME = re.compile(r"[A-Za-z0-9_-]{1,80}")
#: Text SQS accepts in a body; anything else goes base64-encoded.
SQS_TEXT = re.compile("[\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]+")
DEDUP_SAFE = re.compile(r"[!-~]{1,128}")
MISSING_QUEUE = {"AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist"}
LOST_RECEIPT = {"ReceiptHandleIsInvalid", "AWS.SimpleQueueService.MessageNotInflight",
                "MessageNotInflight"}
COUNTS = {"ApproximateNumberOfMessages": "ready", "ApproximateNumberOfMessagesDelayed": "delayed",
          "ApproximateNumberOfMessagesNotVisible": "reserved"}


def whole_seconds(seconds: float) -> int:
    """SQS counts in whole seconds: round up (a job must not run early), never below 0."""
    return max(math.ceil(round(seconds, 6)), 0)


def _number(value: int) -> dict[str, str]:
    return {"DataType": "Number", "StringValue": str(value)}


def wire_body(raw: str) -> tuple[str, dict[str, Any]]:
    """The message body SQS accepts, and the attribute saying how to read it back."""
    if SQS_TEXT.fullmatch(raw):
        return raw, {}
    if not raw:
        return "-", {ENCODING: {"DataType": "String", "StringValue": "empty"}}
    encoded = base64.b64encode(raw.encode("utf-8", "surrogateescape")).decode("ascii")
    return encoded, {ENCODING: {"DataType": "String", "StringValue": "base64"}}


def _attribute(message: Mapping[str, Any], name: str) -> Any:
    """A message attribute's ``StringValue`` as sent (None when absent): anyone who can send to
    the queue chooses these, so the caller validates what it reads."""
    attributes = message.get("MessageAttributes")
    found = attributes.get(name) if isinstance(attributes, Mapping) else None
    return found.get("StringValue") if isinstance(found, Mapping) else None


def read_body(message: Mapping[str, Any]) -> tuple[str, str | None]:
    """The payload text of a message, and what is wrong with it (None: nothing). A body that
    cannot be decoded as its attribute says comes back as it was sent, with the problem."""
    body, encoding = str(message.get("Body", "")), _attribute(message, ENCODING)
    if encoding is None:
        return body, None
    if encoding == "empty":
        return "", None
    if encoding == "base64":
        try:
            return base64.b64decode(body, validate=True).decode("utf-8", "surrogateescape"), None
        except ValueError:
            return body, f"its body is not base64, as its {ENCODING!r} attribute says"
    return body, f"its {ENCODING!r} attribute is {str(encoding)[:40]!r}, not 'base64' or 'empty'"


def count_attribute(message: Mapping[str, Any], name: str) -> tuple[int | None, str | None]:
    """A whole-number attribute (``eventbus.attempts``, ``eventbus.exceptions``): the number,
    or None and what is wrong with it."""
    value = _attribute(message, name)
    if value is None:
        return None, None
    text = str(value)
    if text.isascii() and text.isdigit() and len(text) <= 10 and int(text) <= MAX_COUNT:
        return int(text), None
    return None, f"its {name!r} attribute must be a whole number from 0 to {MAX_COUNT}, not {text[:40]!r}"


def _dedup_id(uuid: str) -> str:
    return uuid if DEDUP_SAFE.fullmatch(uuid) else hashlib.sha256(uuid.encode()).hexdigest()


def _error_code(exc: BaseException) -> tuple[str, str, int]:
    response = getattr(exc, "response", None) or {}
    error = response.get("Error", {})
    status = response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
    return str(error.get("Code", "")), str(error.get("Message", "")), int(status or 0)


class _ReceiptLost(Exception):
    """SQS refused a receipt handle: the message is no longer this worker's."""


class _QueueMissing(EventBusError):
    """The queue does not exist (an EventBusError for callers; inspection reads it as empty)."""


@dataclasses.dataclass
class _Held:
    """A message this process received: its token, receipt handle and exception count."""

    token: str
    url: str
    handle: str
    job: QueueJob
    received: float
    since: float
    exceptions: int = 0
    counted: bool = False  # an exception was recorded while holding it: a release sends a copy


class SqsQueue(Queue, GivesBackAttempts, WorkerSignals):  # gives back: not on FIFO queues (release_uncounted)
    driver = "sqs"
    not_cancellable_because = ("SQS deletes a message only with the receipt handle of a receive, "
                               "and a receive hides it from every worker meanwhile")
    defaults = {"queue": "default", "retry_after": 90.0, "block_for": 5.0, "key": "", "secret": "",
                "token": "", "region": "us-east-1", "prefix": "", "suffix": "", "endpoint_url": ""}
    holds_reservations = True
    idempotent_push = False
    delay_granularity_s = 1.0
    clears_delayed = False

    @classmethod
    def validate_config(cls, name: str, config: Mapping[str, Any]) -> dict[str, Any]:
        if "url" in config:
            raise ConfigurationError(f"connection {name!r}: the sqs driver takes 'prefix' (the queue "
                                     "URL prefix) and 'endpoint_url', not 'url'", connection=name)
        merged = super().validate_config(name, config)
        if not 0 < merged["retry_after"] <= MAX_VISIBILITY_S:
            raise ConfigurationError(f"connection {name!r}: 'retry_after' is the SQS visibility "
                                     f"timeout: more than 0 and at most {MAX_VISIBILITY_S} seconds",
                                     connection=name)
        if merged["block_for"] > MAX_WAIT_S:
            raise ConfigurationError(f"connection {name!r}: 'block_for' is one SQS long poll: at most "
                                     f"{MAX_WAIT_S} seconds", connection=name)
        for key in ("key", "secret", "token", "region", "prefix", "suffix", "endpoint_url"):
            if not isinstance(merged[key], str):
                raise ConfigurationError(f"connection {name!r}: {key!r} must be text", connection=name)
        cls.check_name(str(merged["queue"]), str(merged["suffix"]), name)
        return merged

    @staticmethod
    def full_name(queue: str, suffix: str) -> str:
        """Laravel's rule: the suffix is appended unless present, before a ``.fifo`` ending."""
        fifo = queue.endswith(".fifo")
        base = queue[:-5] if fifo else queue
        if suffix and not base.endswith(suffix):
            base += suffix
        return base + (".fifo" if fifo else "")

    @classmethod
    def check_name(cls, queue: str, suffix: str, connection: str) -> None:
        if queue.startswith(("https://", "http://")):
            return
        full = cls.full_name(queue, suffix)
        base = full[:-5] if full.endswith(".fifo") else full
        if not QUEUE_NAME.fullmatch(base) or len(full) > 80:
            raise ConfigurationError(
                f"queue {queue!r} cannot be an SQS queue on connection {connection!r}: a queue name "
                "is 1 to 80 characters of A-Z a-z 0-9 - _ (a FIFO queue's ends in .fifo)",
                queue=queue, connection=connection)

    def __init__(self, connection_name: str, config: Mapping[str, Any]) -> None:
        super().__init__(connection_name, config)
        try:
            import boto3  # heavy: imported only when an SQS connection is built
        except ImportError as exc:
            raise MissingDependencyError(
                f"connection {connection_name!r} uses the sqs driver, which needs boto3: "
                "pip install 'eventbus[sqs]'", connection=connection_name) from exc
        self._boto3 = boto3
        self.prefix = str(config.get("prefix") or "").rstrip("/")
        self.suffix = str(config.get("suffix") or "")
        self.endpoint_url = str(config.get("endpoint_url") or "") or None
        self.visibility = max(whole_seconds(self.retry_after), 1)
        self.block_for = min(float(config.get("block_for", 5.0) or 0.0), float(MAX_WAIT_S))
        self._client: Any = None
        self._urls: dict[str, str] = {}
        self._checked: set[str] = set()
        self._held: dict[str, _Held] = {}
        self._loose_exceptions: dict[str, int] = {}
        self._stash: QueueJob | None = None
        self._lock = threading.RLock()

    # -- plumbing -----------------------------------------------------------------------------
    @property
    def sqs(self) -> Any:
        """The boto3 client, made on first use (again after :meth:`close`)."""
        with self._lock:
            if self._client is None:
                from botocore.config import Config

                c = self.config
                session = self._boto3.session.Session(
                    aws_access_key_id=c.get("key") or None, aws_secret_access_key=c.get("secret") or None,
                    aws_session_token=c.get("token") or None, region_name=c.get("region") or None)
                self._client = session.client("sqs", endpoint_url=self.endpoint_url, config=Config(
                    connect_timeout=5, read_timeout=MAX_WAIT_S + 10,
                    retries={"mode": "standard", "max_attempts": 3}))
            return self._client

    def _call(self, action: str, fn: Callable[[], T], queue: str | None = None) -> T:
        """Run one SQS call; its failures become eventbus errors (ConnectionUnavailableError for an
        outage or throttling, which the worker rides out; _ReceiptLost for a stale handle)."""
        try:
            return fn()
        except Exception as exc:
            translated = self._translate(action, exc, queue)
            if translated is None:
                raise
            raise translated from exc

    def _translate(self, action: str, exc: Exception, queue: str | None) -> Exception | None:
        from botocore import exceptions as bx

        where = f"SQS{f' at {redact_url(self.endpoint_url)}' if self.endpoint_url else ''}"
        context = {"connection": self.connection_name, "queue": queue}
        if isinstance(exc, (bx.ConnectionError, bx.HTTPClientError)):
            return ConnectionUnavailableError(f"cannot reach {where} for connection "
                                              f"{self.connection_name!r} ({action}): "
                                              f"{redact_urls_in(str(exc))}", **context)
        if isinstance(exc, (bx.NoCredentialsError, bx.PartialCredentialsError, bx.NoRegionError)):
            return ConfigurationError(f"connection {self.connection_name!r}: {exc} (set 'key', "
                                      "'secret' and 'region', or configure boto3)", **context)
        if not isinstance(exc, bx.ClientError):
            return None
        code, message, status = _error_code(exc)
        if code in LOST_RECEIPT or (code == "InvalidParameterValue" and "receipt" in message.lower()):
            return _ReceiptLost(message)
        if code in MISSING_QUEUE:
            return _QueueMissing(f"SQS queue {queue!r} of connection {self.connection_name!r} does not "
                                 "exist (eventbus does not create SQS queues: create it first)", **context)
        if status >= 500 or "throttl" in code.lower():
            return ConnectionUnavailableError(f"{where} is unavailable for connection "
                                              f"{self.connection_name!r} ({action}): {code}: {message}",
                                              **context)
        return EventBusError(f"{where} refused {action} for connection {self.connection_name!r}"
                             f"{f' (queue {queue!r})' if queue else ''}: {code}: {message}", **context)

    def queue_url(self, queue: str | None) -> str:
        name = self.queue_name(queue)
        if name.startswith(("https://", "http://")):
            return name
        url = self._urls.get(name)
        if url is None:
            self.check_name(name, self.suffix, self.connection_name)
            full = self.full_name(name, self.suffix)
            if self.prefix:
                url = f"{self.prefix}/{full}"
            else:
                url = str(self._call("find queue", lambda: self.sqs.get_queue_url(QueueName=full),
                                     name)["QueueUrl"])
            self._urls[name] = url
        return url

    def is_fifo(self, queue: str | None) -> bool:
        return self.queue_name(queue).endswith(".fifo")

    # -- pushing ------------------------------------------------------------------------------
    def _message(self, name: str, raw: str, *, attempts: int, delay: float, dedup_id: str,
                 exceptions: int = 0) -> dict[str, Any]:
        body, attributes = wire_body(raw)
        attributes[ATTEMPTS] = _number(attempts)
        if exceptions:
            attributes[EXCEPTIONS] = _number(exceptions)
        message: dict[str, Any] = {"MessageBody": body, "MessageAttributes": attributes}
        seconds = whole_seconds(delay_seconds(delay))
        if seconds and self.is_fifo(name):
            raise EventBusError(f"SQS FIFO queue {name!r} cannot delay one message (only the whole "
                                "queue, with its DelaySeconds attribute): dispatch it without a delay "
                                "or use a standard queue", queue=name, connection=self.connection_name)
        if seconds > MAX_DELAY_S:
            raise EventBusError(
                f"SQS delays a message by at most {MAX_DELAY_S} seconds (15 minutes); this job asked "
                f"for {delay:g}s. Dispatch it closer to its time (from a scheduled task), or use the "
                "redis or database driver, which keep any delay", queue=name,
                connection=self.connection_name, job_uuid=uuid_of(raw))
        if seconds:
            message["DelaySeconds"] = seconds
        if self.is_fifo(name):
            message["MessageGroupId"] = name
            message["MessageDeduplicationId"] = _dedup_id(dedup_id)
        return message

    def _send(self, name: str, message: dict[str, Any]) -> str:
        url = self.queue_url(name)
        sent = self._call("push", lambda: self.sqs.send_message(QueueUrl=url, **message), name)
        return str(sent["MessageId"])

    def push(self, payload: Payload, queue: str | None = None) -> str:
        return self.later(0, payload, queue)

    def later(self, delay: Delay, payload: Payload, queue: str | None = None) -> str:
        name = self.queue_name(queue)
        self._send(name, self._message(name, payload.to_json(), attempts=payload.attempts,
                                       delay=delay_seconds(delay), dedup_id=payload.uuid))
        return payload.uuid

    def push_raw(self, payload: str, queue: str | None = None, *, delay: float = 0.0) -> str:
        """Store the text as is. On FIFO queues with a fresh deduplication id: this is how a
        failed job is retried under its old uuid, which SQS would otherwise drop for 5 minutes."""
        name = self.queue_name(queue)
        own = uuid_of(payload)
        message_id = self._send(name, self._message(name, payload, attempts=attempts_of(payload),
                                                    delay=delay, dedup_id=uuid_module.uuid4().hex))
        return own or self._fresh_uuid(message_id)

    def bulk(self, payloads: Iterable[Payload], queue: str | None = None) -> list[str]:
        """``SendMessageBatch``: at most 10 messages and 1 MiB a call; entries SQS failed on its
        side are sent again (twice at most), a refused entry raises."""
        name = self.queue_name(queue)
        items = list(payloads)
        messages = [self._message(name, p.to_json(), attempts=p.attempts, delay=0, dedup_id=p.uuid)
                    for p in items]
        url = self.queue_url(name)
        for chunk in _batches(messages):
            self._send_batch(url, name, chunk)
        return [p.uuid for p in items]

    def _send_batch(self, url: str, name: str, chunk: list[dict[str, Any]]) -> None:
        pending = {str(i): message for i, message in enumerate(chunk)}
        for _ in range(3):
            entries = [{"Id": key, **message} for key, message in pending.items()]
            result = self._call("bulk push", lambda: self.sqs.send_message_batch(
                QueueUrl=url, Entries=entries), name)
            failed = result.get("Failed", [])
            refused = [f for f in failed if f.get("SenderFault")]
            if refused:
                raise EventBusError(f"SQS refused {len(refused)} of a batch of {len(entries)} jobs "
                                    f"for queue {name!r}: {refused[0].get('Code')}: "
                                    f"{refused[0].get('Message')}", queue=name,
                                    connection=self.connection_name)
            pending = {f["Id"]: pending[f["Id"]] for f in failed}
            if not pending:
                return
        raise ConnectionUnavailableError(f"SQS kept failing {len(pending)} jobs of a batch for queue "
                                         f"{name!r}", queue=name, connection=self.connection_name)

    # -- popping ------------------------------------------------------------------------------
    def _receive(self, name: str, wait_s: int, count: int = 1,
                 visibility: int | None = None) -> list[dict[str, Any]]:
        url = self.queue_url(name)
        found = self._call("receive", lambda: self.sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=count, WaitTimeSeconds=wait_s,
            VisibilityTimeout=visibility or self.visibility, MessageAttributeNames=["All"],
            AttributeNames=["ApproximateReceiveCount"]), name)  # boto3 < 1.34 has no newer name
        return list(found.get("Messages", []))

    def pop(self, queue: str | None = None) -> QueueJob | None:
        name = self.queue_name(queue)
        handled, stashed = self._take_stash(name)
        if handled:
            return stashed
        since = time.monotonic()
        messages = self._receive(name, 0)
        return self._reserved(name, messages[0], since) if messages else None

    def _take_stash(self, name: str) -> tuple[bool, QueueJob | None]:
        """As the beanstalkd driver's: the message the idle wait received goes to the next pop."""
        with self._lock:
            stash, self._stash = self._stash, None
            if stash is None:
                return False, None
            held = self._held.get(stash.job_id)
            if held is None or held.job is not stash or self._may_have_expired(held):
                return False, None
            if stash.queue_name != name:
                self._stash = stash
                return True, None
            return True, stash

    def _reserved(self, name: str, message: Mapping[str, Any], since: float) -> QueueJob:
        """The job a received message holds. Its attributes are checked like the payload's
        envelope: one that is not what this driver sends fails that message (it is recorded,
        not run), never the worker that received it."""
        raw, problem = read_body(message)
        pushed_with, bad_attempts = count_attribute(message, ATTEMPTS)
        exceptions, bad_exceptions = count_attribute(message, EXCEPTIONS)
        problem = problem or bad_attempts or bad_exceptions
        receives = str(message.get("Attributes", {}).get("ApproximateReceiveCount", "1"))
        job = QueueJob(queue=self, queue_name=name, job_id=str(message["MessageId"]), raw=raw,
                       attempts=(attempts_of(raw) if pushed_with is None else pushed_with)
                       + (int(receives) if receives.isascii() and receives.isdigit() else 1),
                       token=uuid_module.uuid4().hex,
                       stored_uuid=self._fresh_uuid(str(message["MessageId"])),
                       failure=None if problem is None else refusal_description(
                           f"refusing SQS message {message['MessageId']}: {problem}"))
        exceptions = exceptions or 0
        url = self.queue_url(name)
        with self._lock:  # forget messages no receipt can hold any more (12 hours after receive)
            for stale in [i for i, h in self._held.items() if since - h.received > MAX_VISIBILITY_S]:
                del self._held[stale]
            self._held[job.job_id] = _Held(job.token, url, message["ReceiptHandle"], job, since, since,
                                           exceptions)
        return job

    def _fresh_uuid(self, message_id: str) -> str:
        return str(uuid_module.uuid5(uuid_module.NAMESPACE_URL, f"sqs-message:{message_id}"))

    def wait(self, queues: Sequence[str], timeout: float) -> None:
        """Long-poll until a message arrives or ``timeout`` (at most ``block_for`` per poll): one
        poll on a single queue, 1-second polls taking several queues in turn."""
        if timeout <= 0 or self._stash is not None:
            return
        if self.block_for <= 0:
            time.sleep(timeout)
            return
        deadline = time.monotonic() + timeout
        single = len(queues) == 1
        for name in itertools.cycle(queues):
            left = deadline - time.monotonic()
            if left <= 0:
                return
            wait_s = max(whole_seconds(min(left, self.block_for)), 1) if single else 1
            since = time.monotonic()
            messages = self._receive(name, wait_s)
            if messages:
                self._stash = self._reserved(name, messages[0], since)
                return
            if single:
                return

    # -- finishing a received message ---------------------------------------------------------
    def _holding(self, job: QueueJob) -> _Held | None:
        with self._lock:
            held = self._held.get(job.job_id)
            return held if held is not None and held.token == job.token else None

    def _let_go(self, job: QueueJob) -> None:
        with self._lock:
            held = self._held.get(job.job_id)
            if held is not None and held.token == job.token:
                del self._held[job.job_id]

    def _may_have_expired(self, held: _Held) -> bool:
        return time.monotonic() - held.since >= self.visibility - 1.0

    def _hide(self, held: _Held, seconds: int, action: str) -> None:
        """ChangeMessageVisibility: raises _ReceiptLost when the handle is no longer the holder's."""
        self._call(action, lambda: self.sqs.change_message_visibility(
            QueueUrl=held.url, ReceiptHandle=held.handle, VisibilityTimeout=seconds), held.job.queue_name)

    def delete_reserved(self, job: QueueJob) -> bool:
        held = self._holding(job)
        if held is None:
            return False
        try:
            if self._may_have_expired(held):
                self._hide(held, self.visibility, "delete")  # prove the handle still holds it
            self._call("delete", lambda: self.sqs.delete_message(
                QueueUrl=held.url, ReceiptHandle=held.handle), job.queue_name)
        except _ReceiptLost:
            self._let_go(job)
            return False
        self._let_go(job)
        return True

    def release_reserved(self, job: QueueJob, delay: float) -> bool:
        held = self._holding(job)
        if held is None:
            return False
        if held.counted and not self.is_fifo(job.queue_name):
            return self._release_as_copy(job, held, delay)
        seconds = whole_seconds(delay)
        left = int(MAX_VISIBILITY_S - (time.monotonic() - held.received)) - 5
        if seconds > left:
            log.warning("job %s: SQS hides a message at most 12 hours after its receive; released "
                        "for %ss instead of %ss", job.uuid, max(left, 0), seconds)
        try:
            self._hide(held, max(min(seconds, left), 0), "release")
        except _ReceiptLost:
            self._let_go(job)
            return False
        self._let_go(job)
        return True

    def release_uncounted(self, job: QueueJob, delay: float) -> bool:
        """SQS counts receives itself and cannot forget one: the job goes back as a copy that
        carries one attempt fewer (sent complete, then the original deleted), except on a FIFO
        queue, where a copy would lose its place in the group's order: there the release is
        ``ChangeMessageVisibility`` and uses up a try."""
        held = self._holding(job)
        if held is None:
            return False
        if self.is_fifo(job.queue_name):
            return self.release_reserved(job, delay)
        return self._release_as_copy(job, held, delay, attempts=max(job.attempts - 1, 0))

    def _release_as_copy(self, job: QueueJob, held: _Held, delay: float, *,
                         attempts: int | None = None) -> bool:
        """Send a copy carrying the exception count and attempts (``job.attempts`` unless
        given), then delete the original (a message's attributes cannot change). Held first, so
        a stale worker sends no copy."""
        seconds = whole_seconds(delay)
        if seconds > MAX_DELAY_S:
            log.warning("job %s: a copy can be delayed at most %ss by SQS; released for that instead "
                        "of %ss", job.uuid, MAX_DELAY_S, seconds)
        message = self._message(job.queue_name, job.raw,
                                attempts=job.attempts if attempts is None else attempts,
                                delay=min(seconds, MAX_DELAY_S), dedup_id=uuid_module.uuid4().hex,
                                exceptions=held.exceptions)
        try:
            self._hide(held, self.visibility, "release")
        except _ReceiptLost:
            self._let_go(job)
            return False
        self._send(job.queue_name, message)
        try:
            self._call("release", lambda: self.sqs.delete_message(
                QueueUrl=held.url, ReceiptHandle=held.handle), job.queue_name)
        except _ReceiptLost:
            log.warning("job %s was released as a copy but the original could not be deleted; it "
                        "may run twice", job.uuid)
        self._let_go(job)
        return True

    def touch_reserved(self, job: QueueJob) -> bool:
        """Hide the message for another ``retry_after`` (within SQS's 12 hours from its receive)."""
        held = self._holding(job)
        if held is None:
            return False
        since = time.monotonic()
        try:
            self._hide(held, self.visibility, "touch")
        except _ReceiptLost:
            self._let_go(job)
            return False
        held.since = since
        return True

    # -- inspection ---------------------------------------------------------------------------
    def stats(self, queue: str | None = None) -> QueueStats:
        name = self.queue_name(queue)
        try:
            url = self.queue_url(name)
            found = self._call("stats", lambda: self.sqs.get_queue_attributes(
                QueueUrl=url, AttributeNames=list(COUNTS)), name).get("Attributes", {})
        except _QueueMissing:
            return QueueStats(name, 0, 0, 0)
        counts = {state: int(found.get(attribute, 0)) for attribute, state in COUNTS.items()}
        return QueueStats(name, counts["ready"], counts["delayed"], counts["reserved"])

    def size(self, queue: str | None = None) -> int:
        return self.stats(queue).size

    def queues(self) -> list[str]:
        """The queues of this account and region (under ``prefix``, ending in ``suffix``) that
        hold messages."""
        names = [name for url in self._queue_urls() if (name := self._name_of(url)) is not None]
        return sorted(name for name in names if self.stats(name).size)

    def _queue_urls(self) -> Iterator[str]:
        token = None
        while True:
            extra: dict[str, str] = {"NextToken": token} if token else {}
            page = self._call("list queues", lambda: self.sqs.list_queues(MaxResults=1000, **extra))
            yield from page.get("QueueUrls", [])
            token = page.get("NextToken")
            if not token:
                return

    def _name_of(self, url: str) -> str | None:
        if self.prefix and not url.startswith(self.prefix + "/"):
            return None
        full = url.rstrip("/").rsplit("/", 1)[-1]
        fifo = full.endswith(".fifo")
        base = full[:-5] if fifo else full
        if self.suffix:
            if not base.endswith(self.suffix):
                return None
            base = base[:-len(self.suffix)]
        return base + (".fifo" if fifo else "")

    def clear(self, queue: str | None = None) -> int:
        """Receive and delete ready messages, 10 a call, until a 1-second long poll finds none."""
        name = self.queue_name(queue)
        rounds = self.stats(name).ready // BATCH_ENTRIES + 10
        deleted = 0
        for _ in range(rounds):
            messages = self._receive(name, 1, BATCH_ENTRIES, visibility=30)
            if not messages:
                break
            url = self.queue_url(name)
            entries = [{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)]
            result = self._call("clear", lambda: self.sqs.delete_message_batch(QueueUrl=url, Entries=entries),
                                name)
            deleted += len(result.get("Successful", []))
        return deleted

    def peek(self, queue: str | None = None, limit: int = 10) -> list[str]:
        """Nothing: SQS cannot show a message without receiving it (which counts an attempt)."""
        return []

    # -- worker support -----------------------------------------------------------------------
    def record_exception(self, uuid: str) -> int:
        with self._lock:
            held = next((h for h in self._held.values() if h.job.uuid == uuid), None)
            if held is None:  # not received by this process: counted here only
                self._loose_exceptions[uuid] = self._loose_exceptions.get(uuid, 0) + 1
                return self._loose_exceptions[uuid]
            held.exceptions += 1
            held.counted = True
            return held.exceptions

    def forget_exceptions(self, uuid: str) -> None:
        with self._lock:
            self._loose_exceptions.pop(uuid, None)

    def signals(self) -> dict[str, float]:
        try:
            url = self.queue_url(None)
            tags = self._call("signal check", lambda: self.sqs.list_queue_tags(QueueUrl=url),
                              self.default_queue).get("Tags", {})
        except _QueueMissing:
            return {}
        return parse_signals(((k[len(SIGNAL_TAG):], v) for k, v in tags.items()
                              if k.startswith(SIGNAL_TAG)), self.connection_name)

    def set_signal(self, name: str, value: float | None) -> bool:
        url = self.queue_url(None)
        key = SIGNAL_TAG + name
        if value is None:
            self._call("signal", lambda: self.sqs.untag_queue(QueueUrl=url, TagKeys=[key]),
                       self.default_queue)
        else:
            self._call("signal", lambda: self.sqs.tag_queue(QueueUrl=url, Tags={key: repr(value)}),
                       self.default_queue)
        return True

    def ping(self) -> None:
        """Reach SQS (a missing default queue is not an outage: a worker may use others)."""
        try:
            url = self.queue_url(None)
            self._call("connect", lambda: self.sqs.get_queue_attributes(
                QueueUrl=url, AttributeNames=["QueueArn"]), self.default_queue)
        except _QueueMissing:
            pass  # reachable: that is all a ping asks

    def close(self) -> None:
        """Drop the client; a message the idle wait received is made visible again at once."""
        with self._lock:
            stash, self._stash = self._stash, None
            held = self._held.get(stash.job_id) if stash is not None else None
        if held is not None and held.job is stash:
            try:
                self._hide(held, 0, "close")
            except Exception:  # closing must not fail: the message comes back after retry_after
                log.debug("could not hand back message %s on close", held.job.job_id, exc_info=True)
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()


def _entry_size(message: Mapping[str, Any]) -> int:
    size = len(str(message["MessageBody"]).encode("utf-8", "surrogateescape"))
    for name, value in message.get("MessageAttributes", {}).items():
        size += len(name) + len(value["DataType"]) + len(value.get("StringValue", ""))
    return size


def _batches(messages: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    """Chunks of at most 10 messages and 1 MiB (SQS's limits for one SendMessageBatch)."""
    chunk: list[dict[str, Any]] = []
    total = 0
    for message in messages:
        size = _entry_size(message)
        if chunk and (len(chunk) == BATCH_ENTRIES or total + size > BATCH_BYTES):
            yield chunk
            chunk, total = [], 0
        chunk.append(message)
        total += size
    if chunk:
        yield chunk
