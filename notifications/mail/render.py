"""Rendering a :class:`MailMessage` to HTML and text with Jinja2.

The default layout ships in ``notifications/templates/mail``; your templates are looked up first
in the directories given to :func:`set_template_dirs` (default: ``templates`` in the working
directory), so you can also override ``mail/layout.html``.

Every template is autoescaped except plain-text ones (``.txt``): ``.html``, ``.j2``, ``.jinja``
and anything else. A template ``x.html`` (or ``x.html.j2``) takes its text part from ``x.txt``
when there is one, else from its own HTML.
"""

from __future__ import annotations

import html
import pathlib
import re
from typing import Any

import jinja2

from notifications.mail.message import MailMessage

_template_dirs: list[str] = ["templates"]
_env: jinja2.Environment | None = None


def set_template_dirs(*dirs: str | pathlib.Path) -> None:
    """Where ``template=`` names are looked up (before the package's own templates)."""
    global _env
    _template_dirs[:] = [str(d) for d in dirs]
    _env = None


def _autoescape(name: str | None) -> bool:
    return not (name or "").endswith(".txt")


def text_sibling(template: str) -> str | None:
    """The plain-text template beside an HTML one (``a.html``, ``a.html.j2`` -> ``a.txt``)."""
    base = re.sub(r"\.(j2|jinja2?)$", "", template)
    return re.sub(r"\.html?$", ".txt", base) if re.search(r"\.html?$", base) else None


def environment() -> jinja2.Environment:
    global _env
    if _env is None:
        loader = jinja2.ChoiceLoader([jinja2.FileSystemLoader(_template_dirs),
                                      jinja2.PackageLoader("notifications", "templates")])
        _env = jinja2.Environment(loader=loader,
                                  autoescape=_autoescape,
                                  undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return _env


def render(message: MailMessage, extra: dict[str, Any] | None = None) -> tuple[str, str]:
    """(html, text) for ``message``."""
    c = message.content
    context = {"message": c, "subject": c.subject, **c.context, **(extra or {})}
    env = environment()
    if c.template:
        html_part = env.get_template(c.template).render(context)
        text_name = text_sibling(c.template)
        try:
            text_part = env.get_template(text_name).render(context) if text_name else None
        except jinja2.TemplateNotFound:
            text_part = None
        return html_part, text_part or html_to_text(html_part)
    return env.get_template("mail/layout.html").render(context), env.get_template("mail/layout.txt").render(context)


def html_to_text(markup: str) -> str:
    """A readable plain-text fallback for an HTML template without a .txt sibling."""
    markup = re.sub(r"(?is)<(script|style|head).*?</\1>", "", markup)
    markup = re.sub(r"(?i)<br\s*/?>|</p>|</h[1-6]>|</tr>|</div>", "\n", markup)
    markup = re.sub(r"""(?is)<a [^>]*href=["']([^"']+)["'][^>]*>(.*?)</a>""", r"\2 (\1)", markup)
    text = html.unescape(re.sub(r"<[^>]+>", "", markup))
    return re.sub(r"\n\s*\n+", "\n\n", "\n".join(line.strip() for line in text.splitlines())).strip() + "\n"
