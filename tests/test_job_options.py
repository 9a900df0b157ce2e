"""A misspelt job or notification option is refused when the class is created, with a hint:
``tires = 3`` would otherwise be an attribute nobody reads, and the job would run once."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

import eventbus
from helpers import ROOT
from notifications import Notification


@pytest.mark.parametrize(("typo", "meant"), [("tires", "tries"), ("timout", "timeout"), ("backof", "backoff"),
                                             ("max_exception", "max_exceptions"), ("retry_untill", "retry_until")])
def test_a_misspelt_job_option_is_refused_with_a_hint(typo: str, meant: str) -> None:
    with pytest.raises(eventbus.ConfigurationError) as info:
        type("Podcast", (eventbus.Job,), {typo: 3, "__module__": __name__})
    assert f"Podcast.{typo} is not a job option (did you mean {meant!r}?)" in str(info.value)


def test_a_misspelt_notification_option_is_refused_with_a_hint() -> None:
    with pytest.raises(eventbus.ConfigurationError, match=r"Shipped.queud is not a notification option "
                                                          r"\(did you mean 'queued'\?\)"):
        class Shipped(Notification):
            queud = True


def test_options_methods_and_unrelated_attributes_are_left_alone() -> None:
    class Podcast(eventbus.Job):
        tries = 3
        backoff = [1, 5]
        episode_limit = 10          # nowhere near an option
        _tires = "private"

        def timeouts(self) -> int:  # a method: the class's own business
            return 1

    assert Podcast.tries == 3


def test_the_worker_says_it_in_one_line(tmp_path: pathlib.Path) -> None:
    (tmp_path / "typo_app.py").write_text("import eventbus\n\nclass Send(eventbus.Job):\n    tires = 3\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVENTBUS_")}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(ROOT)])
    done = subprocess.run([sys.executable, "-m", "eventbus", "work", "--app", "typo_app", "--stop-when-empty"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "eventbus: error: Send.tires is not a job option (did you mean 'tries'?); job options are "
        "after_commit, backoff, connection, debounce_for, delay, delete_when_missing_models, encrypted, fail_on_timeout, "
        "max_exceptions, queue, retry_until, timeout, tries, unique, unique_for, unique_until_processing, "
        "unique_via"]
