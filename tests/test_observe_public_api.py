"""The public surface of the observability packages: sorted ``__all__``, all importable, and the
optional integrations import no third-party package until used."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys

import pytest

from helpers import ROOT, TESTS


@pytest.mark.parametrize("name", ["eventbus.state", "eventbus.monitoring", "eventbus.dashboard"])
def test_all_is_sorted_and_importable(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__all__ == sorted(module.__all__)
    for attr in module.__all__:
        assert hasattr(module, attr), f"{name}.{attr}"


def test_the_core_and_the_cli_load_without_the_optional_packages(tmp_path: object) -> None:
    """``import eventbus`` and ``eventbus --help`` never import starlette, uvicorn or prometheus_client."""
    script = ("import json, sys\n"
              "from click.testing import CliRunner\n"
              "import eventbus\n"
              "from eventbus.cli import main\n"
              "assert CliRunner().invoke(main, ['--help']).exit_code == 0\n"
              "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & "
              "{'starlette', 'uvicorn', 'prometheus_client', 'playwright'})))\n")
    env = {**os.environ, "PYTHONPATH": f"{TESTS}{os.pathsep}{ROOT}"}
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                          timeout=60, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []
