"""The manual builds as a site and the README stays a front page.

``mkdocs build --strict`` turns every warning into an error: a page missing from the nav, a link
to a page or an anchor that does not exist. The README keeps the opening, the tour and a table of
contents linking each page of ``docs/``; the tour is repeated whole on the site's Getting started
page, and the two copies must not drift apart.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import re
import subprocess
import sys

import pytest

from helpers import ROOT

README = ROOT / "README.md"
DOCS = ROOT / "docs"
README_MAX_LINES = 350
#: An entry of the nav in mkdocs.yml: ``  - Title: page.md``.
NAV_ENTRY = re.compile(r"^\s+- [^:\n]+:\s*([\w/.-]+\.md)\s*$", re.MULTILINE)
#: A Markdown link or image whose target is a path in the tree, not a URL or an anchor.
RELATIVE_LINK = re.compile(r"!?\[[^\]]*\]\((?![a-z]+:|#)([^)\s#]+)(?:#[^)]*)?\)")
#: What building the site needs beyond the test extra (the ``docs`` extra installs them).
SITE_MODULES = ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python")


def nav_pages() -> list[str]:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    return NAV_ENTRY.findall(config.split("\nnav:\n", 1)[1])


def pages() -> list[str]:
    return sorted(p.name for p in DOCS.glob("*.md"))


def section(text: str, heading: str) -> str:
    """The text of one ``## `` section, its heading included, up to the next one."""
    return heading + text.split(heading, 1)[1].split("\n## ", 1)[0]


def missing_modules() -> list[str]:
    missing = []
    for name in SITE_MODULES:
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            missing.append(name)
    return missing


def test_the_readme_is_a_front_page() -> None:
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines < README_MAX_LINES, (f"README.md has {lines} lines: move a section to a page of docs/ "
                                      f"and link it from the README's table")


def test_every_page_is_in_the_nav_once() -> None:
    nav = nav_pages()
    assert sorted(nav) == pages(), f"docs/*.md and the nav of mkdocs.yml differ: {sorted(nav)} vs {pages()}"
    assert nav[0] == "index.md"


def test_the_readme_links_every_page_and_every_link_resolves() -> None:
    targets = RELATIVE_LINK.findall(README.read_text(encoding="utf-8"))
    broken = [t for t in targets if not (ROOT / t).exists()]
    assert not broken, f"README.md links to files that do not exist: {broken}"
    unlinked = sorted(set(pages()) - {pathlib.PurePosixPath(t).name for t in targets if t.startswith("docs/")})
    assert not unlinked, f"pages the README's table of contents does not link: {unlinked}"


def test_the_tour_is_the_same_in_the_readme_and_on_the_site() -> None:
    readme = section(README.read_text(encoding="utf-8"), "## A tour\n")
    site = section((DOCS / "getting-started.md").read_text(encoding="utf-8"), "## A tour\n")
    assert site == readme, "README.md's tour and docs/getting-started.md's differ: change both alike"


def test_mkdocs_builds_the_site_with_warnings_as_errors(tmp_path: pathlib.Path) -> None:
    missing = missing_modules()
    if missing:
        pytest.skip(f"the docs extra is not installed (no {', '.join(missing)}): pip install -e '.[docs]'")
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}   # Material's notice about MkDocs 2.0, not ours
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                           str(ROOT / "mkdocs.yml"), "--site-dir", str(site)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=110)
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"
    for page in pages():
        built = site / ("index.html" if page == "index.md" else f"{page.removesuffix('.md')}/index.html")
        assert built.is_file(), f"{page} was not built"
    reference = (site / "reference" / "index.html").read_text(encoding="utf-8")
    assert 'id="eventbus.Job"' in reference and 'id="notifications.testing.fake_mail"' in reference
