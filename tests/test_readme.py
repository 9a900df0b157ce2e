"""Every code block of the README and of the manual's pages (``docs/*.md``) runs, in order, as a
newcomer would run it.

The blocks of one document share one fresh directory, the way a reader follows them in one
project: a ``python`` block whose first line is ``# file: NAME.py`` is saved as that module
(and imported once, so a broken one fails here); any other ``python`` block runs as a script;
a ``bash`` block runs under ``bash -euo pipefail`` with ``eventbus`` on the PATH. Redis blocks
reach the test server through ``EVENTBUS_REDIS_URL``; everything else uses the embedded
SQLite default.

One block is not run here, on purpose: the README's first, the two install commands. It installs
the project, which this test runs inside; CI runs its second command (``.ci/run``, checked
below) and ``tests/test_example.py`` runs the first one's example.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import re
import subprocess
import sys

import pytest
import redis

from helpers import REDIS_URL, ROOT

DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
FILE_MARK = re.compile(r"^# file: ([\w/]+\.py)\n")
RUNNABLE = {"python", "bash"}
#: Blocks of other languages are output or listings, never commands (``text``).
NOT_CODE = {"text"}


@dataclasses.dataclass
class Block:
    document: pathlib.Path
    line: int
    language: str
    code: str

    def __str__(self) -> str:
        return f"{self.document.name}:{self.line} ({self.language})"


def blocks_of(document: pathlib.Path) -> list[Block]:
    text = document.read_text(encoding="utf-8")
    return [Block(document, text.count("\n", 0, m.start()) + 1, m.group(1), m.group(2))
            for m in FENCE.finditer(text)]


def install_block() -> Block:
    return blocks_of(ROOT / "README.md")[0]


def test_every_block_is_python_bash_or_text() -> None:
    odd = [str(b) for d in DOCUMENTS for b in blocks_of(d) if b.language not in RUNNABLE | NOT_CODE]
    assert not odd, f"blocks that are neither run nor marked as text: {odd}"


def test_the_first_block_is_the_two_commands_and_ci_runs_the_second() -> None:
    block = install_block()
    lines = block.code.strip().splitlines()
    assert block.language == "bash" and len(lines) == 2, block.code
    assert lines[0] == "pip install -e . --config-settings editable_mode=strict && python examples/shop/run.py"
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    assert ci[-1] == lines[1], "the CI script must run exactly the README's test command"


def environment(directory: pathlib.Path) -> dict[str, str]:
    # A reader's shell: no eventbus settings, nor the framework apps other tests set up here.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("EVENTBUS_") and k not in ("DJANGO_SETTINGS_MODULE", "FLASK_APP")}
    env.update({"PYTHONPATH": os.pathsep.join([str(directory), str(ROOT)]), "EVENTBUS_REDIS_URL": REDIS_URL,
                "PATH": os.pathsep.join([str(pathlib.Path(sys.executable).parent), env.get("PATH", "")]),
                "PYTHONWARNINGS": "error::DeprecationWarning:eventbus", "PYTHONUNBUFFERED": "1"})
    return env


def run(block: Block, directory: pathlib.Path) -> subprocess.CompletedProcess[str]:
    env = environment(directory)
    if block.language == "bash":
        command = ["bash", "-euo", "pipefail", "-c", block.code]
    else:
        named = FILE_MARK.match(block.code)
        if named:
            path = directory / named.group(1)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(block.code, encoding="utf-8")
            module = named.group(1).removesuffix(".py").replace("/", ".")
            command = [sys.executable, "-c", f"import {module}"]
        else:
            command = [sys.executable, "-c", block.code]
    return subprocess.run(command, cwd=directory, env=env, capture_output=True, text=True, timeout=120)


def has_runnable_blocks(document: pathlib.Path) -> bool:
    return any(b.language in RUNNABLE for b in blocks_of(document))


#: The pages with code to run (a page of links, such as ``docs/index.md``, has none).
RUNNABLE_DOCUMENTS = [d for d in DOCUMENTS if has_runnable_blocks(d)]


def test_the_readme_and_the_code_pages_have_blocks_to_run() -> None:
    names = {d.name for d in RUNNABLE_DOCUMENTS}
    assert {"README.md", "getting-started.md", "jobs.md", "frameworks.md"} <= names, names


@pytest.mark.integration
@pytest.mark.parametrize("document", RUNNABLE_DOCUMENTS, ids=lambda d: d.name)
def test_every_block_runs_in_order(document: pathlib.Path, tmp_path: pathlib.Path,
                                   redis_client: redis.Redis) -> None:
    skip = install_block() if document.name == "README.md" else None
    ran = 0
    redis_client.flushdb()
    for block in blocks_of(document):
        if block.language not in RUNNABLE or block == skip:
            continue
        result = run(block, tmp_path)
        assert result.returncode == 0, (f"{block} failed (exit {result.returncode}):\n{block.code}\n"
                                        f"--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}")
        ran += 1
    assert ran > 0
