"""The packages type-check under mypy --strict (configured in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from helpers import ROOT


def test_mypy_strict() -> None:
    pytest.importorskip("mypy")
    proc = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
