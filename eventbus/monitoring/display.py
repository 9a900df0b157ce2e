"""Showing text that came from a payload (names, queues, messages, bodies) on a terminal.

Payload text is chosen by whoever pushed the job. Printed as is, an escape sequence in a display
name could rewrite the operator's terminal (move the cursor, hide lines, set the title) and a
bidirectional override could make one name read as another. :func:`printable` escapes every
control and format character, and bytes that were not UTF-8, so what is shown is what is there.
"""

from __future__ import annotations

import unicodedata

_ESCAPE_CATEGORIES = {"Cc", "Cf", "Cs", "Zl", "Zp"}


def printable(text: object, *, keep_newlines: bool = False) -> str:
    """``text`` with control characters shown as ``\\xNN``/``\\uNNNN`` escapes."""
    value = str(text)
    if value.isprintable():
        return value
    out = []
    for char in value:
        if keep_newlines and char in "\n\t":
            out.append(char)
        elif unicodedata.category(char) in _ESCAPE_CATEGORIES:
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(char)
    return "".join(out)
