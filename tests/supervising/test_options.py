"""Supervisors as declared: configure(supervisors=...) and ``--config`` TOML files, each mistake
one clear error; the pools each balance starts with."""

from __future__ import annotations

import pathlib

import pytest
from click.testing import CliRunner

import eventbus
from eventbus.cli import main
from eventbus.supervising import SupervisorOptions
from eventbus.supervising.commands import declared
from eventbus.supervising.master import planned_pools


def test_a_supervisor_gets_the_defaults_and_the_default_connection() -> None:
    settings = eventbus.configure(default="redis", supervisors={"web": {"queues": "high, default"}})
    assert settings.supervisors == {"web": SupervisorOptions(name="web", connection="redis",
                                                             queues=("high", "default"))}
    assert "redis" in settings.in_use
    assert eventbus.configure(supervisors={"web": {}}).supervisors["web"].queues == ("default",)


@pytest.mark.parametrize(("table", "message"), [
    ({"max_procesess": 3}, "supervisor 'web': unknown key 'max_procesess' (did you mean 'max_processes'?)"),
    ({"min_processes": 5, "max_processes": 2}, "supervisor 'web': min_processes (5) is more than max_processes (2)"),
    ({"balance": "fast"}, "supervisor 'web': unknown balance 'fast'; use \"auto\", \"simple\" or false"),
    ({"balance": True}, "supervisor 'web': unknown balance True"),
    ({"connection": "redsi"}, "supervisor 'web': unknown connection 'redsi'"),
    ({"max_processes": 0}, "supervisor 'web': 'max_processes' must be a whole number of at least 1, not 0"),
    ({"timeout": "60"}, "supervisor 'web': 'timeout' must be a number"),
    ({"queues": []}, "supervisor 'web': 'queues' names no queue"),
])
def test_a_mistake_is_one_error_naming_the_supervisor_and_the_key(table: dict[str, object], message: str) -> None:
    with pytest.raises(eventbus.ConfigurationError) as caught:
        eventbus.configure(supervisors={"web": table})
    assert str(caught.value).startswith(message)


def test_supervisors_is_a_known_setting() -> None:
    with pytest.raises(eventbus.ConfigurationError, match="did you mean 'supervisors'"):
        eventbus.configure(supervisor={"web": {}})


def test_a_toml_file_declares_supervisors_that_win_by_name(tmp_path: pathlib.Path) -> None:
    eventbus.configure(supervisors={"web": {"max_processes": 2}, "mail": {"queues": ["mail"]}})
    path = tmp_path / "supervisors.toml"
    path.write_text('[supervisors.web]\nqueues = ["high", "default"]\nbalance = false\nmax_processes = 3\n')
    found = declared(str(path))
    assert sorted(found) == ["mail", "web"]
    assert (found["web"].balance, found["web"].max_processes, found["web"].queues) == (False, 3, ("high", "default"))


@pytest.mark.parametrize(("text", "message"), [
    ("[supervisors.web]\nmax_procs = 3\n", "unknown key 'max_procs' (did you mean 'max_processes'?)"),
    ("[workers.web]\n", "unknown table 'workers'"),
    ("[supervisors.web\n", "is not valid TOML"),
    ("", "declares no supervisor"),
])
def test_a_bad_config_file_is_one_line_and_exit_2(tmp_path: pathlib.Path, text: str, message: str) -> None:
    path = tmp_path / "supervisors.toml"
    path.write_text(text)
    result = CliRunner().invoke(main, ["supervise", "--config", str(path)])
    assert result.exit_code == 2
    assert result.output.startswith("eventbus: error: ") and message in result.output
    assert result.output.count("\n") == 1


def test_supervise_without_supervisors_says_how_to_declare_them() -> None:
    result = CliRunner().invoke(main, ["supervise"])
    assert result.exit_code == 2
    assert "configure(supervisors=" in result.output and "--config" in result.output


def test_pausing_an_unknown_supervisor_names_the_known_ones() -> None:
    eventbus.configure(connections={"database": {"driver": "null"}}, default="database",
                       supervisors={"web": {}})
    result = CliRunner().invoke(main, ["supervise", "pause", "wbe"])
    assert result.exit_code == 2
    assert "no supervisor named 'wbe' (declared or running: web)" in result.output


@pytest.mark.parametrize(("balance", "pools"), [
    ("auto", [("a", ("a",), 1), ("b", ("b",), 1), ("c", ("c",), 1)]),
    ("simple", [("a", ("a",), 2), ("b", ("b",), 2), ("c", ("c",), 1)]),
    (False, [("a,b,c", ("a", "b", "c"), 5)]),  # one pool of workers that take every queue in order
])
def test_the_pools_each_balance_starts_with(balance: str | bool, pools: list[object]) -> None:
    options = SupervisorOptions(name="web", connection="redis", queues=("a", "b", "c"), balance=balance,
                                min_processes=1, max_processes=5)
    assert planned_pools(options) == pools
