"""Options in the query of a mail or SMS URL.

Values are percent-decoded without form decoding: ``from=+15550100`` keeps its ``+`` (form
decoding would turn it into a space). An unknown option or a malformed value is one
ConfigurationError naming the URL (password hidden) and the option.
"""

from __future__ import annotations

from collections.abc import Collection
from urllib.parse import unquote, urlsplit

from notifications._core import ConfigurationError, redact_url

_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def parse_query(query: str) -> dict[str, str]:
    """``a=1&b=x+y`` -> ``{"a": "1", "b": "x+y"}``; the last of repeated options wins."""
    options: dict[str, str] = {}
    for part in query.split("&"):
        if part:
            key, _, value = part.partition("=")
            options[unquote(key)] = unquote(value)
    return options


class UrlOptions:
    """The query options of ``url``, checked against ``known``; ``kind`` names it in errors."""

    def __init__(self, url: str, kind: str, known: Collection[str]) -> None:
        self.url, self.kind = url, kind
        self.values = parse_query(urlsplit(url).query)
        unknown = sorted(set(self.values) - set(known))
        if unknown:
            raise self.error(f"unknown option {unknown[0]!r} (known: {', '.join(sorted(known))})")

    def error(self, problem: str) -> ConfigurationError:
        return ConfigurationError(f"bad {self.kind} URL {redact_url(self.url)!r}: {problem}")

    def text(self, name: str, default: str | None = None) -> str | None:
        return self.values.get(name, default)

    def flag(self, name: str, default: bool) -> bool:
        value = self.values.get(name)
        if value is None:
            return default
        if value.lower() not in _TRUE + _FALSE:
            raise self.error(f"{name} must be 1 or 0, not {value!r}")
        return value.lower() in _TRUE

    def seconds(self, name: str, default: float) -> float:
        value = self.values.get(name)
        if value is None:
            return default
        try:
            seconds = float(value)
        except ValueError:
            seconds = -1.0
        if not seconds > 0:
            raise self.error(f"{name} must be a number of seconds above 0, not {value!r}")
        return seconds

    def whole_number(self, name: str, default: int, *, low: int, high: int) -> int:
        """An integer option from ``low`` to ``high``; anything else (``0``, ``2.5``, ``ten``) is the error."""
        value = self.values.get(name)
        if value is None:
            return default
        # ASCII digits only: no sign, space, "1_0", "²" or other characters int() might take or choke on
        number = int(value) if value.isascii() and value.isdigit() else low - 1
        if not low <= number <= high:
            raise self.error(f"{name} must be a whole number from {low} to {high}, not {value!r}")
        return number

    def choice(self, name: str, choices: tuple[str, ...]) -> str:
        value = self.values.get(name, choices[0])
        if value not in choices:
            raise self.error(f"{name} must be one of {', '.join(choices)}, not {value!r}")
        return value
