"""The chaos tier: the ``chaos`` marker, and each scenario run once per session however many
tests judge it."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from chaos.catalogue import BY_NAME
from chaos.scenarios import Unavailable
from chaos.scene import Result

_results: dict[str, Result | Unavailable] = {}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "chaos: fault injection against real servers and worker processes (tests/chaos, quick tier)")


def run_scenario(name: str) -> Result:
    """The quick-tier result of scenario ``name`` (run on first use); skips when it needs a server
    that does not answer."""
    if name not in _results:
        try:
            _results[name] = BY_NAME[name].run(True)
        except Unavailable as exc:
            _results[name] = exc
    found = _results[name]
    if isinstance(found, Unavailable):
        pytest.skip(str(found))
    return found


def assert_checks(result: Result, *names: str) -> None:
    """Every named check (all of them when none is named) held; the message tells the numbers."""
    failures = result.failures(names or None)
    assert not failures, "\n".join([result.summary(), *failures])


@pytest.fixture
def scenario() -> Callable[[str], Result]:
    return run_scenario
