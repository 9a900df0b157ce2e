"""Parsing mail addresses: every entry of every address field is exactly one valid address.

A route or an address with a comma in it (``victim@x.test, attacker@y.test``) would otherwise
reach every address it lists, because the SMTP envelope is read back from the headers. So each
entry is parsed on its own with the same header grammar the message is written with, and refused
unless it is one ``local@domain`` address, with no group and nothing left over.

Most entries are a bare ``local@domain`` of letters, digits and the few symbols an atom allows;
those match :data:`_BARE` and are split at the ``@`` without running the header parser (a
tenth of its cost), which would have found the same two parts. Everything else is parsed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from email.headerregistry import Address, AddressHeader, HeaderRegistry
from typing import Any, cast

from notifications.errors import InvalidAddressError

_headers = HeaderRegistry()
_DOMAIN = re.compile(r"^(?:[^\s.\[\]@]+(?:\.[^\s.\[\]@]+)*|\[[0-9A-Fa-f:.]+\])$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# RFC 5322 dot-atom local part @ a dot-separated host name: what the parser reads as exactly
# that addr-spec. "=?" (an encoded word to the parser) is left to the parser.
_ATOM = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
_BARE = re.compile(rf"(?!.*=\?)({_ATOM}(?:\.{_ATOM})*)@([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*)")

Pair = tuple[str, "str | None"]


ONE_ADDRESS = "each entry must be exactly one address, such as ada@example.com"


def _invalid(field: str, value: object, hint: str = ONE_ADDRESS) -> InvalidAddressError:
    return InvalidAddressError(f"invalid mail address in {field}: {value!r} ({hint})", field=field)


def is_bare(entry: str) -> bool:
    """Is ``entry`` a bare ``local@domain`` that the header parser reads as exactly that addr-spec?"""
    return _BARE.fullmatch(entry) is not None


def parse_address(entry: str, field: str, name: str | None = None) -> Address:
    """One address from ``entry`` (``ada@x.test`` or ``Ada <ada@x.test>``); ``name`` overrides its name."""
    if not isinstance(entry, str) or _CONTROL.search(entry):
        raise _invalid(field, entry)
    if name is not None and _CONTROL.search(str(name)):
        raise _invalid(field, name, "a display name cannot contain line breaks or control characters")
    bare = _BARE.fullmatch(entry)
    if bare:
        return Address(display_name=str(name) if name is not None else "", username=bare[1], domain=bare[2])
    return parse_with_grammar(entry, field, name)


def parse_with_grammar(entry: str, field: str, name: str | None = None) -> Address:
    """:func:`parse_address` by the header parser alone (it takes this way for all but bare addresses)."""
    try:
        header = _headers("to", entry)
        groups, defects = cast(AddressHeader, header).groups, header.defects
    except Exception as exc:  # the parser fails on some malformed input (``someone@``)
        raise _invalid(field, entry) from exc
    if len(groups) != 1 or groups[0].display_name is not None or len(groups[0].addresses) != 1 or defects:
        raise _invalid(field, entry)
    found = groups[0].addresses[0]
    if not found.username or not _DOMAIN.match(found.domain):
        raise _invalid(field, entry)
    try:
        return Address(display_name=str(name) if name is not None else found.display_name,
                       username=found.username, domain=found.domain)
    except (ValueError, IndexError) as exc:
        raise _invalid(field, entry) from exc


def parse_pairs(pairs: Iterable[Pair], field: str) -> list[Address]:
    """The addresses of a builder field (``cc``, ``bcc``, ``reply_to``): ``(address, name)`` pairs."""
    return [parse_address(address, field, name) for address, name in pairs]


def parse_route(route: Any, field: str = "to") -> list[Address]:
    """The recipients a mail route stands for: an address, a list of them, or ``{address: name}``."""
    if isinstance(route, dict):
        entries: list[Pair] = [(address, name) for address, name in route.items()]
    elif isinstance(route, (list, tuple)):
        entries = [(address, None) for address in route]
    else:
        entries = [(route, None)]
    if not entries:
        raise _invalid(field, route, "no recipient")
    return parse_pairs(entries, field)
