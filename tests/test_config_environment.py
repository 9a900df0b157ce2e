"""The environment is read in one module, :mod:`eventbus.config`: the settings' variables by
``build_settings``, every other ``EVENTBUS_*`` variable through ``config.env(name)`` from the
:data:`~eventbus.config.VARIABLES` table, which the configuration page prints in full."""

from __future__ import annotations

import ast
import pathlib

import pytest

from eventbus import config

ROOT = pathlib.Path(__file__).resolve().parent.parent
#: Modules that read a variable of another library, under that library's name.
OTHER_LIBRARIES = {
    "eventbus/contrib/flask.py": "FLASK_APP, Flask's own",
    "eventbus/contrib/_flask_boot.py": "FLASK_APP, Flask's own",
    "eventbus/integrations/prometheus.py": "PROMETHEUS_MULTIPROC_DIR, prometheus_client's own",
}


def _reads_the_environment(tree: ast.AST) -> list[int]:
    """Lines that read a variable: ``os.environ.get``, ``os.getenv``, ``os.environ[...]`` (a
    copy of the whole environment for a child process is not a read of one variable)."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            target = ast.unparse(node.func)
            if target in ("os.environ.get", "os.getenv", "environ.get", "getenv"):
                lines.append(node.lineno)
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            if ast.unparse(node.value) in ("os.environ", "environ"):
                lines.append(node.lineno)
    return lines


def test_only_config_reads_the_environment() -> None:
    offenders = []
    for path in sorted((ROOT / "eventbus").rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        if name == "eventbus/config.py" or name in OTHER_LIBRARIES:
            continue
        offenders += [f"{name}:{line}" for line in _reads_the_environment(ast.parse(path.read_text()))]
    assert offenders == [], "read it with eventbus.config.env() and list it in config.VARIABLES"


def test_the_reader_sees_each_form_of_read() -> None:
    source = "import os\nos.environ.get('A')\nos.getenv('B')\nos.environ['C']\nenv = {**os.environ}\n"
    assert _reads_the_environment(ast.parse(source)) == [2, 3, 4]


def test_a_variable_outside_the_table_is_a_programming_error() -> None:
    with pytest.raises(KeyError, match="EVENTBUS_NOPE is not in eventbus.config.VARIABLES"):
        config.env("EVENTBUS_NOPE")


def test_env_reads_the_variable_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVENTBUS_TIMEOUT_GRACE", "7")
    assert config.env("EVENTBUS_TIMEOUT_GRACE") == "7"
    monkeypatch.delenv("EVENTBUS_TIMEOUT_GRACE")
    assert config.env("EVENTBUS_TIMEOUT_GRACE", "5") == "5"


def test_the_configuration_page_lists_every_variable() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text()
    settings_variables = ["EVENTBUS_CONNECTION", "EVENTBUS_KEY", "EVENTBUS_PREVIOUS_KEYS",
                          "EVENTBUS_FAILED_URL", "EVENTBUS_MAIL_URL", "EVENTBUS_SMS_URL", "EVENTBUS_MAIL_FROM"]
    missing = [name for name in [*settings_variables, *config.VARIABLES] if f"`{name}`" not in page]
    assert missing == []
