"""The one JSON document every queued thing travels as (Laravel's payload shape).

Drivers store and return the payload text byte for byte; only the worker parses it. ``attempts``
is the count at push time; the live count is kept by the driver beside the body.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import math
import os
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from eventbus.errors import DeserializationError, SerializationError

HANDLER_NAME = "eventbus.CallQueuedHandler@call"
FORMAT_VERSION = 1
def new_uuid() -> str:
    """A random (version 4) UUID as text: what ``str(uuid.uuid4())`` gives, in a third of the time
    (one per dispatched job). The version digit is ``4``; the variant digit keeps two of its
    random bits (``8``, ``9``, ``a`` or ``b``), as ``uuid4`` does."""
    h = _urandom(16).hex()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{_VARIANT[h[16]]}{h[17:20]}-{h[20:]}"


_urandom = os.urandom
#: A random hex digit -> the RFC 4122 variant digit with the same two low bits.
_VARIANT = {digit: "89ab"[int(digit, 16) & 3] for digit in "0123456789abcdef"}


class _NoHeaders(dict[str, str]):
    """The headers of a payload that has none: one shared empty map that refuses changes.

    Most payloads have no headers and no chain steps. A payload held for a bulk push used to
    hold four fresh empty containers of them (the step lists are tuples now), which made the
    cyclic garbage collector run twice as often (see ``dispatching.BULK_FLUSH_EVERY``); one
    shared map costs nothing. It is still a ``dict`` (``json.dumps``, ``dataclasses.asdict``
    and ``==`` treat it as ``{}``) and copies and pickles as this same object.
    """

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError("a payload's headers are read-only; use dispatching.with_headers()")

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self) -> str:
        return "NO_HEADERS"  # the module's own name for it: pickle and copy keep the singleton


NO_HEADERS: Mapping[str, str] = _NoHeaders()

#: Compact JSON without NaN or Infinity; built once (json.dumps with options builds one per
#: call). No circular-reference check: see :func:`_encode_function`.
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False,
                            check_circular=False)


def _encode_function() -> Callable[[Any], str]:
    """``_ENCODER.encode`` without its per-call set-up, where the C accelerator exists.

    ``JSONEncoder.encode`` builds a new C encoder object for every call (a microsecond, a
    quarter of encoding a payload); this one is built once. It cannot check for circular
    references (the check's table would be shared between calls, and an encoding that fails
    half-way leaves entries in it), so neither does the fallback: a cycle ends at the
    recursion limit, which ``to_json`` reports. Only a hand-built payload can hold one: a job's
    state with a cycle is refused while it is encoded (``serializer.encode``).
    """
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return _ENCODER.encode
    encoder = make(None, _ENCODER.default, json.encoder.encode_basestring, None, ":", ",",
                   False, False, False)
    return lambda document: "".join(encoder(document, 0))


_encode = _encode_function()


def encode_json(value: Any) -> str:
    """``value`` as the payload's own encoder writes it (compact, NaN refused): for storage
    formats that must rebuild a payload's text byte for byte (``queue.redis.bodies``)."""
    return _encode(value)


#: Bounds for envelope numbers: a duration past a century or a count past a 32-bit column is
#: not a mistake to carry on with, it is a payload to refuse.
MAX_SECONDS = 100 * 366 * 86400.0
MAX_TIMESTAMP = 1e11
MAX_COUNT = 2**31 - 2
#: Bounds for the ``headers`` map (trace context and the like): small text, a few entries.
MAX_HEADERS = 32
MAX_HEADER_NAME = 128
MAX_HEADER_VALUE = 4096
#: Bounds for the ``tags`` list: what the listings, the tag indexes and a database column can
#: hold (191 characters fit an indexed utf8mb4 column on MySQL).
MAX_TAGS = 32
MAX_TAG_LENGTH = 191


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


#: Built once: ``json.loads`` with an option builds a decoder per call (one per job here).
_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)
_SCAN: Callable[[str, int], tuple[Any, int]] = _DECODER.scan_once  # type: ignore[attr-defined]


def parse_document(text: str | bytes) -> dict[str, Any]:
    """Parse a payload body as a JSON object, or raise :class:`DeserializationError`.

    Refuses what ``json.loads`` would otherwise accept or crash on: ``NaN``/``Infinity``, bytes
    that are not UTF-8 (drivers hand them over as lone surrogates, ``surrogateescape``, so that
    the failed record keeps them byte for byte), and nesting deep enough to exhaust the
    interpreter's stack.
    """
    if isinstance(text, str) and not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise DeserializationError(f"payload is not UTF-8 (at character {exc.start})") from None
    try:
        if isinstance(text, str):
            # The C scanner alone, as ``decode`` calls it: a payload this library wrote has no
            # white space around it. Anything else (white space, extra data, not JSON at all)
            # goes through ``decode``, which accepts or refuses it with its own message.
            try:
                doc, end = _SCAN(text, 0)
            except StopIteration:
                end = -1
            if end != len(text):
                doc = _DECODER.decode(text)
        else:
            doc = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise DeserializationError("payload is nested too deeply to read") from None
    except (ValueError, UnicodeError) as exc:
        raise DeserializationError(f"payload is not JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise DeserializationError("payload is not a JSON object")
    return doc


class _Envelope:
    """Typed readers for the envelope's fields; each failure names the field."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc

    @staticmethod
    def _refuse(name: str, value: Any, expected: str) -> DeserializationError:
        shown = repr(value)
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        return DeserializationError(f"payload field {name!r} must be {expected}, not {shown}")

    def text(self, name: str, value: Any) -> str:
        if not isinstance(value, str) or not value:
            raise self._refuse(name, value, "non-empty text")
        return value

    def mapping(self, name: str, value: Any) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self._refuse(name, value, "a JSON object")
        return value

    def steps(self, name: str) -> tuple[dict[str, Any], ...]:
        """Ready-made jobs to push later: ``[{"destination": {...}, "payload": {...}}, ...]``."""
        value = self.doc.get(name)
        if value is None:
            return ()
        if not isinstance(value, list) or not all(
                isinstance(step, dict) and isinstance(step.get("destination"), dict)
                and isinstance(step.get("payload"), dict) for step in value):
            raise self._refuse(name, value, "a list of {destination, payload} objects")
        return tuple(value)

    def chain(self, value: Any) -> tuple[dict[str, Any], ...]:
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(step, dict) for step in value):
            raise self._refuse("chained", value, "a list of objects")
        return tuple(value)

    def _number(self, name: str, value: Any, upper: float) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self._refuse(name, value, "a number")
        number = float(value)
        if not math.isfinite(number) or abs(number) > upper:
            raise self._refuse(name, value, f"a finite number up to {upper:g}")
        return number

    def seconds_of(self, name: str, value: Any) -> float:
        seconds = self._number(name, value, MAX_SECONDS)
        if seconds < 0:
            raise self._refuse(name, value, "seconds >= 0")
        return seconds

    def timestamp_of(self, name: str, value: Any) -> float:
        return self._number(name, value, MAX_TIMESTAMP)

    def count_of(self, name: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
            raise self._refuse(name, value, f"a whole number from 0 to {MAX_COUNT}")
        return value

    def flag(self, name: str) -> bool:
        value = self.doc.get(name, False)
        if not isinstance(value, bool):
            raise self._refuse(name, value, "true or false")
        return value

    def unique(self) -> dict[str, Any] | None:
        value = self.doc.get("unique")
        if value is None:
            return None
        lock = self.mapping("unique", value)
        self.text("unique.key", lock.get("key"))
        if lock.get("via") is not None:
            self.text("unique.via", lock.get("via"))
        if not isinstance(lock.get("untilProcessing", False), bool):
            raise self._refuse("unique.untilProcessing", lock.get("untilProcessing"), "true or false")
        return {"key": lock["key"], "via": lock.get("via"), "untilProcessing": lock.get("untilProcessing", False)}

    def headers(self) -> Mapping[str, str]:
        """The ``headers`` map: at most 32 text entries (names up to 128, values up to 4096)."""
        value = self.doc.get("headers")
        if value is None:
            return NO_HEADERS
        if not isinstance(value, dict) or len(value) > MAX_HEADERS:
            raise self._refuse("headers", value, f"a JSON object of at most {MAX_HEADERS} entries")
        for name, text in value.items():
            if not name or len(name) > MAX_HEADER_NAME or not isinstance(text, str) \
                    or len(text) > MAX_HEADER_VALUE:
                raise self._refuse("headers", {name: text}, "text names and text values")
        return dict(value)

    def tags(self) -> tuple[str, ...]:
        """The ``tags`` list: at most 32 non-empty texts of up to 191 characters."""
        value = self.doc.get("tags")
        if value is None:
            return ()
        if not isinstance(value, list) or len(value) > MAX_TAGS:
            raise self._refuse("tags", value, f"a list of at most {MAX_TAGS} texts")
        for tag in value:
            if not isinstance(tag, str) or not tag or len(tag) > MAX_TAG_LENGTH:
                raise self._refuse("tags", tag, f"non-empty text of at most {MAX_TAG_LENGTH} characters")
        return tuple(value)

    def backoff(self) -> list[float] | None:
        value = self.doc.get("backoff")
        if value is None:
            return None
        steps = value if isinstance(value, list) else [value]
        if not steps:
            return None
        out = []
        for step in steps:
            seconds = self._number("backoff", step, MAX_SECONDS)
            if seconds < 0:
                raise self._refuse("backoff", value, "seconds >= 0")
            out.append(seconds)
        return out


@dataclasses.dataclass(frozen=True)
class Payload:
    """A queued job as data. ``command`` is tagged JSON made by :mod:`eventbus.serializer`."""

    display_name: str
    command_name: str
    command: dict[str, Any]
    uuid: str = dataclasses.field(default_factory=lambda: new_uuid())
    job: str = HANDLER_NAME
    max_tries: int | None = None
    max_exceptions: int | None = None
    backoff: list[float] | None = None
    timeout: float | None = None
    retry_until: float | None = None
    fail_on_timeout: bool = False
    attempts: int = 0
    pushed_at: float = dataclasses.field(default_factory=time.time)
    #: The later steps of this job's chain, each ``{"destination", "payload"}``.
    chained: tuple[dict[str, Any], ...] = ()
    #: The unique-job lock this job holds: ``{"key", "via", "untilProcessing"}``.
    unique: dict[str, Any] | None = None
    #: The batch this job belongs to (``id@connection``).
    batch_id: str | None = None
    #: Jobs to push when a step of this job's chain fails for good, and when the chain ends.
    chain_catch: tuple[dict[str, Any], ...] = ()
    chain_finally: tuple[dict[str, Any], ...] = ()
    signature: str | None = None
    #: Text metadata that travels with the job (W3C ``traceparent`` when tracing is on).
    headers: Mapping[str, str] = dataclasses.field(default_factory=lambda: NO_HEADERS)
    #: Labels to find the job by (``eventbus jobs --tag``): its own ``tags()`` and one
    #: ``Class:key`` per model it carries (see :mod:`eventbus.dispatching.tags`).
    tags: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        """Step lists given as lists (a hand-built payload) become tuples, as a parsed one's
        are, so that the two compare equal. (``checked`` skips this: its callers pass tuples;
        :meth:`replace` makes tuples of the lists it is given.)"""
        for name in ("chained", "chain_catch", "chain_finally", "tags"):
            if not isinstance(getattr(self, name), tuple):
                object.__setattr__(self, name, tuple(getattr(self, name)))

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"commandName": self.command_name, "command": self.command}
        if self.chained:
            data["chained"] = list(self.chained)
        doc: dict[str, Any] = {
            "uuid": self.uuid,
            "displayName": self.display_name,
            "job": self.job,
            "maxTries": self.max_tries,
            "maxExceptions": self.max_exceptions,
            "backoff": self.backoff,
            "timeout": self.timeout,
            "retryUntil": self.retry_until,
            "failOnTimeout": self.fail_on_timeout,
            "data": data,
            "attempts": self.attempts,
            "pushedAt": self.pushed_at,
            "version": FORMAT_VERSION,
        }
        if self.unique is not None:
            doc["unique"] = self.unique
        if self.batch_id is not None:
            doc["batchId"] = self.batch_id
        if self.chain_catch:
            doc["chainCatch"] = list(self.chain_catch)
        if self.chain_finally:
            doc["chainFinally"] = list(self.chain_finally)
        if self.headers:
            doc["headers"] = dict(self.headers)
        if self.tags:
            doc["tags"] = list(self.tags)
        if self.signature is not None:
            doc["signature"] = self.signature
        return doc

    def to_json(self) -> str:
        """The payload as compact JSON; NaN and Infinity are refused (JSON has neither)."""
        try:
            return _encode(self.to_dict())
        except ValueError as exc:
            raise SerializationError(f"cannot queue {self.display_name}: {exc} (NaN and "
                                     "Infinity are not JSON)", job_uuid=self.uuid) from exc
        except RecursionError:
            raise SerializationError(f"cannot queue {self.display_name}: its data is nested too "
                                     "deeply (or refers to itself)", job_uuid=self.uuid) from None

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> Payload:
        """The payload a document describes, after checking every envelope field.

        This is the one place an envelope is validated: each field must have its type (a bool is
        not a number, text is not a number), every number must be finite and within bounds, so
        nothing later (the timeout alarm, the backoff, an SQL column) meets a value it cannot
        handle. A bad envelope raises :class:`DeserializationError` naming the field.
        """
        if not isinstance(doc, dict):
            raise DeserializationError("payload is not a JSON object")
        fields = _Envelope(doc)
        get = doc.get
        # The common case is decided by type checks on the spot; anything else goes to the
        # field's reader, which accepts what it may (subclasses, other numbers) or refuses it.
        data = get("data")
        if type(data) is not dict:
            data = fields.mapping("data", data)
        command_name, command = data.get("commandName"), data.get("command")
        if type(command_name) is not str or not command_name:
            command_name = fields.text("commandName", command_name)
        if type(command) is not dict:
            command = fields.mapping("command", command)
        uuid, display_name, job = get("uuid"), get("displayName") or command_name, get("job")
        if type(uuid) is not str or not uuid:
            uuid = fields.text("uuid", uuid)
        if type(display_name) is not str:
            display_name = fields.text("displayName", display_name)
        if type(job) is not str or not job:
            job = fields.text("job", job)
        chained = data.get("chained")
        # Most optional fields are absent or null: each is read once and checked only when set.
        max_tries, max_exceptions, timeout = get("maxTries"), get("maxExceptions"), get("timeout")
        retry_until, attempts, pushed_at = get("retryUntil"), get("attempts"), get("pushedAt")
        fail_on_timeout, batch_id, signature = get("failOnTimeout", False), get("batchId"), get("signature")
        if type(attempts) is not int or not 0 <= attempts <= MAX_COUNT:
            attempts = 0 if attempts is None else fields.count_of("attempts", attempts)
        if type(pushed_at) is not float or not -MAX_TIMESTAMP <= pushed_at <= MAX_TIMESTAMP:
            pushed_at = 0.0 if pushed_at is None else fields.timestamp_of("pushedAt", pushed_at)
        return cls._assemble(dict(
            display_name=display_name,
            command_name=command_name,
            command=command,
            uuid=uuid,
            job=job,
            max_tries=None if max_tries is None else fields.count_of("maxTries", max_tries),
            max_exceptions=None if max_exceptions is None else fields.count_of("maxExceptions", max_exceptions),
            backoff=None if get("backoff") is None else fields.backoff(),
            timeout=None if timeout is None else fields.seconds_of("timeout", timeout),
            retry_until=None if retry_until is None else fields.timestamp_of("retryUntil", retry_until),
            fail_on_timeout=fail_on_timeout if fail_on_timeout is False else fields.flag("failOnTimeout"),
            attempts=attempts,
            pushed_at=float(pushed_at),
            chained=() if chained is None else fields.chain(chained),
            unique=None if get("unique") is None else fields.unique(),
            batch_id=None if batch_id is None else fields.text("batchId", batch_id),
            chain_catch=() if get("chainCatch") is None else fields.steps("chainCatch"),
            chain_finally=() if get("chainFinally") is None else fields.steps("chainFinally"),
            signature=None if signature is None else fields.text("signature", signature),
            headers=NO_HEADERS if get("headers") is None else fields.headers(),
            tags=() if get("tags") is None else fields.tags(),
        ), None)

    @classmethod
    def checked(cls, *, key: str | None = None, **fields: Any) -> Payload:
        """A payload from every one of its fields, already checked by the caller, and signed
        with ``key`` when there is one (then ``signature`` is the new one, whatever was given).

        Every dispatched job builds one from all of its fields: this path skips the dataclass's
        ``__init__`` (see :meth:`_assemble`); a test checks it sets each of them.
        """
        if fields.keys() != _FIELD_NAMES:
            missing, unknown = _FIELD_NAMES - fields.keys(), fields.keys() - _FIELD_NAMES
            raise TypeError(f"Payload.checked() needs every field and no other; missing "
                            f"{sorted(missing)}, unknown {sorted(unknown)}")
        return cls._assemble(fields, key)

    @classmethod
    def from_fields(cls, fields: dict[str, Any], key: str | None = None) -> Payload:
        """:meth:`checked` for a caller that builds every field itself and whose tests check
        that it does (:func:`eventbus.dispatching.payloads.make_payload`, once per dispatched
        job): without the keyword arguments and the check of their names, a third of its cost.
        ``fields`` becomes the payload's own (the caller must not keep it)."""
        return cls._assemble(fields, key)

    def replace(self, *, key: str | None = None, **changes: Any) -> Payload:
        """This payload with ``changes``, signed again with ``key`` (without one: unsigned).

        The one way to change a payload. Its signature covers every field but the attempts, so
        a changed payload never keeps the old one: it gets a new one, or none. (``signature``
        among ``changes`` sets one as given, for a test that forges one.)
        """
        if not changes.keys() <= _FIELD_NAMES:
            raise TypeError(f"Payload has no field {sorted(changes.keys() - _FIELD_NAMES)[0]!r}")
        fields = {**self.__dict__, "signature": None, **changes}
        for name in _STEP_FIELDS.intersection(changes):
            if not isinstance(fields[name], tuple):
                fields[name] = tuple(fields[name])
        return type(self)._assemble(fields, key)

    def signed(self, key: str) -> Payload:
        """This payload signed with ``key`` (:meth:`replace` with no change)."""
        return self.replace(key=key)

    @classmethod
    def _assemble(cls, fields: dict[str, Any], key: str | None) -> Payload:
        """The payload of ``fields`` (every field, checked), signed with ``key`` when given.

        The one place a payload is filled without the frozen dataclass's ``__init__``, which
        sets each of the 20 fields through ``object.__setattr__``: a third of the cost of
        building one, on every dispatch (:meth:`checked`), every processed job
        (:meth:`from_dict`) and every change (:meth:`replace`).
        """
        payload = object.__new__(cls)
        payload.__dict__.update(fields)
        if key:
            payload.__dict__["signature"] = sign(payload.to_dict(), key)
        return payload

    @classmethod
    def from_json(cls, text: str | bytes) -> Payload:
        return cls.from_dict(parse_document(text))


_FIELD_NAMES = frozenset(field.name for field in dataclasses.fields(Payload))
#: The fields that hold sequences (chain steps, tags): tuples in a payload, whatever a caller passes.
_STEP_FIELDS = frozenset({"chained", "chain_catch", "chain_finally", "tags"})


def _signing_text(doc: dict[str, Any]) -> bytes:
    unsigned = {k: v for k, v in doc.items() if k not in ("signature", "attempts")}
    return json.dumps(unsigned, sort_keys=True, separators=(",", ":")).encode()


def sign(doc: dict[str, Any], key: str) -> str:
    """HMAC-SHA256 over the canonical JSON of the payload (without signature and attempts)."""
    return hmac.new(key.encode(), _signing_text(doc), hashlib.sha256).hexdigest()


def verify(doc: dict[str, Any], keys: str | Iterable[str]) -> bool:
    """Whether ``doc`` carries a valid signature made with ``keys`` (one key, or the current
    key and the previous ones of a rotation); reads nothing else of it first."""
    given = doc.get("signature")
    if not isinstance(given, str):
        return False
    try:
        text = _signing_text(doc)
    except (TypeError, ValueError, RecursionError):  # not canonical JSON: cannot be ours
        return False
    for key in (keys,) if isinstance(keys, str) else keys:
        if hmac.compare_digest(given, hmac.new(key.encode(), text, hashlib.sha256).hexdigest()):
            return True
    return False


def _document_or_none(raw: str) -> dict[str, Any] | None:
    """The body as a JSON object, leniently (NaN allowed), only to find its uuid or counts: a
    payload that will be refused later must still be stored and failed under its own uuid."""
    try:
        doc = json.loads(raw)
    except (ValueError, UnicodeError, RecursionError):
        return None
    return doc if isinstance(doc, dict) else None


MAX_UUID = 64


def without_surrogates(text: str) -> str:
    """``text`` as UTF-8 can encode it: bytes that were not UTF-8 (kept as lone surrogates by
    ``surrogateescape``) become ``\\xNN``, any other lone surrogate ``\\udNNN``."""
    if text.isascii():
        return text
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate no byte made (a JSON escape)
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def text_id(value: Any) -> str | None:
    """``value`` as an id every store can keep and every log can print (at most 64
    characters, :func:`without_surrogates`), or None."""
    if not isinstance(value, str) or not value:
        return None
    value = without_surrogates(value)
    return value if len(value) <= MAX_UUID else None


def uuid_of(raw: str) -> str | None:
    """The uuid a raw payload claims (see :func:`text_id`), or None when it is not a JSON object
    with a text uuid."""
    doc = _document_or_none(raw)
    return text_id(doc.get("uuid")) if doc is not None else None


def attempts_of(raw: str) -> int:
    """The attempt count a raw payload was pushed with (0 when it has no valid one)."""
    doc = _document_or_none(raw)
    value = doc.get("attempts", 0) if doc is not None else 0
    valid = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT
    return value if valid else 0


def pushed_at_of(raw: str) -> float | None:
    """When a raw payload says it was pushed (seconds since the epoch), if it says."""
    doc = _document_or_none(raw)
    value = doc.get("pushedAt") if doc is not None else None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < MAX_TIMESTAMP:
        return None
    return float(value)


def with_attempts(raw: str, attempts: int) -> str:
    """The same payload with ``attempts`` replaced (for retry); other bytes are re-encoded.

    Raises ValueError (a DeserializationError) when ``raw`` is not a JSON object.
    """
    try:
        doc = parse_document(raw)
    except DeserializationError as exc:
        raise ValueError(str(exc)) from exc
    doc["attempts"] = attempts
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
