"""How a job's body is kept in Redis: its payload's values without the envelope's keys.

A waiting job's body is most of the memory it takes in Redis, and most of a body is the
envelope: its key names, the ``null`` options, the handler's name, the class name written
twice. Stored as JSON, a job of no data took 516 bytes of the server's memory; packed, about 240.

A packed body is ``\\x00`` ``1`` and the envelope's values as JSON texts, in the order of
:meth:`eventbus.payload.Payload.to_dict`, joined by ``\\x1f``: a value equal to its field's
default (``null``, ``false``, ``0``, the one handler, the display name for ``commandName``) is
left empty, and so are the optional fields a payload does not have; empty values at the end
are dropped. Neither control character can occur in JSON text (the encoder escapes them), so
splitting is exact, and :func:`unpack` rebuilds the very text :meth:`Payload.to_json` writes, byte
for byte: a signature checks, a failed record keeps the payload, and the handler sees the same
text as on any other driver. Nothing inside Lua reads a body, so the scripts do not change.

Any other stored text is a body as it was given: ``push_raw`` of text that packing would not
give back byte for byte, plain JSON from an earlier version or from a connection with
``compact_bodies`` off. Text that itself begins with ``\\x00`` (and is not a packed body) is
stored behind ``\\x00`` ``0``, so that it comes back as it went in. A packed body that does not
split into the fields is returned as stored: the worker then records it as a payload it cannot
read, as it does any non-JSON body, rather than dropping it.
"""

from __future__ import annotations

import json
import math
from typing import Any

from eventbus.errors import DeserializationError
from eventbus.payload import FORMAT_VERSION, HANDLER_NAME, Payload, encode_json, parse_document

MARK = "\x00"
PACKED = MARK + "1"
ESCAPED = MARK + "0"
SEPARATOR = "\x1f"

_string = json.encoder.encode_basestring  # what the payload's encoder writes for a str

#: What comes before each value in the text, in the order of ``Payload.to_dict``.
_PREFIXES = ('{"uuid":', ',"displayName":', ',"job":', ',"maxTries":', ',"maxExceptions":',
             ',"backoff":', ',"timeout":', ',"retryUntil":', ',"failOnTimeout":',
             ',"data":{"commandName":', ',"command":', ',"chained":', '},"attempts":',
             ',"pushedAt":', ',"version":', ',"unique":', ',"batchId":', ',"chainCatch":',
             ',"chainFinally":', ',"headers":', ',"tags":', ',"signature":')
FIELDS = len(_PREFIXES)
_PUSHED_AT, _OPTIONAL_FROM = 13, 15
_CHAINED_PREFIX = _PREFIXES[11]
_HANDLER = _string(HANDLER_NAME)
_VERSION = "" if FORMAT_VERSION == 1 else str(FORMAT_VERSION)


def _json(value: Any) -> str:
    """The payload encoder's text for one value, the common types without a call into it."""
    kind = type(value)
    if value is None:
        return "null"
    if kind is str:
        return _string(value)
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return int.__repr__(value)
    if kind is float and math.isfinite(value):
        return float.__repr__(value)
    return encode_json(value)  # containers, subclasses, and NaN (which it refuses)


def pack(payload: Payload) -> str:
    """The body to store for ``payload``: :func:`unpack` gives back ``payload.to_json()``.

    A payload that cannot be encoded raises what ``to_json`` raises."""
    try:
        return _pack(payload)
    except (ValueError, TypeError, RecursionError):
        return payload.to_json()  # raises the error that names the job (if it does not: JSON)


def _pack(p: Payload) -> str:
    # None, the one handler, False and 0 are the defaults; written as "" without encoding them
    display = _string(p.display_name)
    command_name = _string(p.command_name)
    values = [
        _json(p.uuid), display,
        "" if type(p.job) is str and p.job == HANDLER_NAME else _json(p.job),
        "" if p.max_tries is None else _json(p.max_tries),
        "" if p.max_exceptions is None else _json(p.max_exceptions),
        "" if p.backoff is None else _json(p.backoff),
        "" if p.timeout is None else _json(p.timeout),
        "" if p.retry_until is None else _json(p.retry_until),
        "" if p.fail_on_timeout is False else _json(p.fail_on_timeout),
        "" if command_name == display else command_name,
        encode_json(p.command),
        encode_json(list(p.chained)) if p.chained else "",
        "" if type(p.attempts) is int and p.attempts == 0 else _json(p.attempts),
        _json(p.pushed_at),
        _VERSION,
        "" if p.unique is None else encode_json(p.unique),
        "" if p.batch_id is None else _json(p.batch_id),
        encode_json(list(p.chain_catch)) if p.chain_catch else "",
        encode_json(list(p.chain_finally)) if p.chain_finally else "",
        encode_json(dict(p.headers)) if p.headers else "",
        encode_json(list(p.tags)) if p.tags else "",
        "" if p.signature is None else _json(p.signature),
    ]
    return PACKED + SEPARATOR.join(values).rstrip(SEPARATOR)


def store_raw(text: str, *, compact: bool = True) -> str:
    """The body to store for text given as is (``push_raw``: ``eventbus retry``, tools).

    A payload's JSON is packed (``compact``) when the packed form gives back the very same text;
    any other text is stored as given. A packed body given as text (one that unpacks to a JSON object) is
    stored as one, or as its JSON when not ``compact``: a worker of an earlier release could not
    read it and kept it as a failed record, whose retry must run it."""
    if text.startswith(MARK):
        payload_text = unpack(text)
        if text.startswith(PACKED) and _is_document(payload_text):
            return text if compact else payload_text
        return ESCAPED + text
    if compact and text.startswith("{"):
        packed = _packed_text(text)
        if packed is not None:
            return packed
    return text


def _packed_text(text: str) -> str | None:
    """``text`` packed, if it is a payload whose text packing gives back byte for byte."""
    try:
        packed = _pack(Payload.from_json(text))
    except Exception:  # noqa: BLE001 - not a payload this version reads: stored as given
        return None
    return packed if unpack(packed) == text else None


def _is_document(text: str) -> bool:
    try:
        parse_document(text)
    except DeserializationError:
        return False
    return True


def unpack(stored: str) -> str:
    """The payload text a stored body holds (see the module's docstring)."""
    if not stored.startswith(MARK):
        return stored
    if stored.startswith(ESCAPED):
        return stored[2:]
    values = stored[2:].split(SEPARATOR)
    count = len(values)
    # pushedAt (the 14th) is never empty, so a packed body has 14 values at least
    if not stored.startswith(PACKED) or not _PUSHED_AT < count <= FIELDS:
        return stored
    values += ("",) * (FIELDS - count)
    (uuid, display, job, max_tries, max_exceptions, backoff, timeout, retry_until, fail_on_timeout,
     command_name, command, chained, attempts, pushed_at, version) = values[:_OPTIONAL_FROM]
    if not (uuid and display and command and pushed_at):
        return stored
    text = (f'{{"uuid":{uuid},"displayName":{display},"job":{job or _HANDLER},'
            f'"maxTries":{max_tries or "null"},"maxExceptions":{max_exceptions or "null"},'
            f'"backoff":{backoff or "null"},"timeout":{timeout or "null"},'
            f'"retryUntil":{retry_until or "null"},"failOnTimeout":{fail_on_timeout or "false"},'
            f'"data":{{"commandName":{command_name or display},"command":{command}'
            f'{_CHAINED_PREFIX + chained if chained else ""}}},"attempts":{attempts or "0"},'
            f'"pushedAt":{pushed_at},"version":{version or "1"}')
    for at in range(_OPTIONAL_FROM, count):
        if values[at]:
            text += _PREFIXES[at] + values[at]
    return text + "}"
