"""What a user installs works: the built wheel carries every file, runs from an empty directory,
and the README's editable install type-checks.

The rest of the suite runs the source tree; these tests build the distribution the way a
release does (``python -m build``: the sdist, then the wheel from the sdist), install it, not
editable, into a fresh virtual environment, and from an empty directory run the README's tour
(mail included), ``examples/shop``, and one queued mail, database and SMS notification. Then
they install the tree with the README's own command and run ``mypy --strict`` on an app.
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys
import tomllib
import venv
import zipfile
from collections.abc import Iterator

import pytest
from helpers import ROOT

pytestmark = pytest.mark.integration

PACKAGES = ("eventbus", "listeners", "notifications")
#: What is never part of a distribution: caches, build output, local databases and mail.
NOT_SHIPPED = shutil.ignore_patterns(".git", "__pycache__", "*.pyc", "build", "dist", "*.egg-info",
                                     ".mypy_cache", ".pytest_cache", ".hypothesis", "storage",
                                     "*.sqlite3*", "node_modules")


def run(*args: str | pathlib.Path, cwd: pathlib.Path, env: dict[str, str] | None = None,
        timeout: float = 600) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, f"{args} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """A copy of the tree as a clone would have it (building writes into the source directory)."""
    copy = tmp_path_factory.mktemp("source") / "eventbus"
    shutil.copytree(ROOT, copy, ignore=NOT_SHIPPED)
    return copy


@pytest.fixture(scope="module")
def wheel(source: pathlib.Path, tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    out = tmp_path_factory.mktemp("dist")
    run(sys.executable, "-m", "build", "--outdir", out, source, cwd=source)
    [found] = out.glob("eventbus-*.whl")
    return found


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[pathlib.Path]:
    """A virtual environment with nothing of eventbus in it, only its dependencies."""
    home = tmp_path_factory.mktemp("venv") / "env"
    venv.create(home, with_pip=True)
    requirements = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    run(home / "bin" / "python", "-m", "pip", "install", "-q", *requirements, cwd=home)
    yield home


def user_env(venv_home: pathlib.Path) -> dict[str, str]:
    """A user's shell in that environment: its bin first on PATH, nothing of the tree importable."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("EVENTBUS_", "PYTHON", "VIRTUAL_ENV")) and k not in ("DJANGO_SETTINGS_MODULE",
                                                                                     "FLASK_APP")}
    env.update({"PATH": os.pathsep.join([str(venv_home / "bin"), env.get("PATH", "")]),
                "VIRTUAL_ENV": str(venv_home), "PYTHONUNBUFFERED": "1"})
    return env


def tree_files() -> set[str]:
    """Every file of the packages in the tree, as a wheel names it."""
    return {p.relative_to(ROOT).as_posix() for package in PACKAGES for p in (ROOT / package).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}


def test_the_wheel_ships_every_file_of_the_packages(wheel: pathlib.Path) -> None:
    """A new template, script or static file cannot be forgotten: the package data must reach it."""
    shipped = set(zipfile.ZipFile(wheel).namelist())
    missing = sorted(tree_files() - shipped)
    assert not missing, f"files of the packages missing from {wheel.name}: {missing}"
    assert any(name.endswith("licenses/LICENSE") for name in shipped)


def readme_tour() -> list[tuple[str, str]]:
    """The README's tour: its blocks from the first ``# file: shop.py`` to the first ``ls``."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## A tour", 1)[1].split("\n## ", 1)[0]
    return [(m.group(1), m.group(2)) for m in re.finditer(r"^```(\w+)\n(.*?)^```", section, re.MULTILINE | re.DOTALL)]


def test_the_installed_wheel_runs_the_tour_the_shop_and_every_notification_channel(
        wheel: pathlib.Path, fresh_venv: pathlib.Path, tmp_path: pathlib.Path) -> None:
    python = fresh_venv / "bin" / "python"
    run(python, "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", wheel, cwd=tmp_path)
    env = user_env(fresh_venv)
    located = run(python, "-c", "import eventbus, notifications; print(eventbus.__file__)", cwd=tmp_path, env=env)
    assert str(fresh_venv) in located.stdout and str(ROOT) not in located.stdout

    tour = tmp_path / "tour"
    tour.mkdir()
    worker_output = ""
    for language, code in readme_tour():
        if language == "python" and code.startswith("# file: "):
            (tour / code.split("\n", 1)[0].removeprefix("# file: ")).write_text(code)
        elif language == "python":
            run(python, "-c", code, cwd=tour, env=env)
        else:
            done = run("bash", "-euo", "pipefail", "-c", code, cwd=tour, env=env)
            worker_output += done.stdout + done.stderr
    # The queued mail, SMS and database notification of the tour, each delivered by the worker.
    [mail] = list((tour / "storage" / "mail").glob("*.eml"))
    assert "Order #7 has shipped" in mail.read_text() and "Track it" in mail.read_text()
    assert "sms to +15550100" in worker_output
    stored = run(python, "-c", "from shop import Customer\n"
                 "print([n.data for n in Customer(1, 'Ada', 'a@example.com', '+1').notifications])",
                 cwd=tour, env=env)
    assert stored.stdout.strip() == "[{'order_id': 7}]"

    shop = tmp_path / "shop"
    shutil.copytree(ROOT / "examples" / "shop", shop, ignore=NOT_SHIPPED)
    done = run(python, "run.py", cwd=shop, env=env)
    assert "mail written to" in done.stdout and "database notification: {'order_id': 7" in done.stdout
    assert "0 job(s) left; failed jobs: 0" in done.stdout


def readme_install_command() -> str:
    """The first line of the README's first block: how a reader installs the tree."""
    block = (ROOT / "README.md").read_text(encoding="utf-8").split("```bash\n", 1)[1]
    return block.splitlines()[0].split(" && ")[0]


TYPED_APP = '''
from dataclasses import dataclass

import eventbus
from eventbus import Event, Job
from listeners import listener
from notifications import MailMessage, Notifiable, Notification


@eventbus.serializable
@dataclass
class Customer(Notifiable):
    id: int
    email: str


@dataclass
class OrderShipped(Event):
    order_id: int
    customer: Customer


class Shipped(Notification):
    queued = True

    def via(self, notifiable: Customer) -> list[str]:
        return ["mail", "database"]

    def to_mail(self, notifiable: Customer) -> MailMessage:
        return MailMessage(subject="Shipped").line("On its way.")


@listener(queued=True, tries=3)
def notify_customer(event: OrderShipped) -> None:
    event.customer.notify(Shipped())


class Invoice(Job):
    tries = 3

    def handle(self) -> None:
        print(self.attempts)


uuid: str | None = Invoice().dispatch()
results: list[object] = eventbus.emit(OrderShipped(7, Customer(1, "a@example.com")))
'''


def test_the_readmes_editable_install_type_checks_an_app(
        source: pathlib.Path, fresh_venv: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """``mypy --strict`` follows an editable install only when its packages are on a path
    (setuptools' default editable mode hides them behind an import hook mypy cannot run)."""
    command = readme_install_command()
    assert "editable_mode=strict" in command, command
    run("bash", "-euo", "pipefail", "-c", command, cwd=source, env=user_env(fresh_venv))
    (tmp_path / "typed_app.py").write_text(TYPED_APP)
    done = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--python-executable",
                           str(fresh_venv / "bin" / "python"), "--cache-dir", str(tmp_path / "cache"),
                           "--no-incremental", "typed_app.py"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=600, env={k: v for k, v in os.environ.items() if not k.startswith("MYPY")})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success: no issues found in 1 source file" in done.stdout


def test_configuring_loads_only_the_drivers_the_app_uses(tmp_path: pathlib.Path) -> None:
    """An app on Redis never imports SQLAlchemy for the built-in ``database`` template (nor one
    on SQLite redis-py for ``redis``) until it names that connection: a worker starts sooner."""
    code = ("import sys, eventbus\n"
            "eventbus.configure(default={default!r})\n"
            "eventbus.runtime.settings().connection_config()\n"
            "loaded = [m for m in ('sqlalchemy', 'redis') if m in sys.modules]\n"
            "eventbus.runtime.settings().connection_config({other!r})\n"
            "print(loaded, [m for m in ('sqlalchemy', 'redis') if m in sys.modules])")
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVENTBUS_")}
    env["PYTHONPATH"] = str(ROOT)
    redis_app = run(sys.executable, "-c", code.format(default="redis", other="database"), cwd=tmp_path, env=env)
    assert redis_app.stdout.strip() == "['redis'] ['sqlalchemy', 'redis']"
    sql_app = run(sys.executable, "-c", code.format(default="database", other="redis"), cwd=tmp_path, env=env)
    assert sql_app.stdout.strip() == "['sqlalchemy'] ['sqlalchemy', 'redis']"


def test_import_eventbus_loads_no_optional_library(tmp_path: pathlib.Path) -> None:
    """``import eventbus`` stays cheap (``benchmarks/import_time.py`` times it): SQLAlchemy,
    redis-py, Jinja2, httpx, the worker and the scheduler are imported when first used, and so is
    asyncio (about a seventh of the import), which only the async verbs and async jobs need."""
    heavy = ["sqlalchemy", "redis", "redis.asyncio", "jinja2", "httpx", "aiosmtplib", "click", "zoneinfo",
             "importlib.metadata", "asyncio", "eventbus.worker.loop", "eventbus.scheduling", "eventbus.queue.redis",
             "eventbus.queue.database", "eventbus.sql"]
    code = f"import sys, eventbus\nprint([m for m in {heavy!r} if m in sys.modules])"
    env = {k: v for k, v in os.environ.items() if not k.startswith("EVENTBUS_")}
    env["PYTHONPATH"] = str(ROOT)
    done = run(sys.executable, "-c", code, cwd=tmp_path, env=env)
    assert done.stdout.strip() == "[]"
    lazy = run(sys.executable, "-c", "import eventbus\nprint(eventbus.Worker.__name__, type(eventbus.schedule).__name__)",
               cwd=tmp_path, env=env)
    assert lazy.stdout.split() == ["Worker", "Schedule"]
