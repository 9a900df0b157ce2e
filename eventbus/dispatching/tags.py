"""The tags a job travels with: its own ``tags()``, then one ``Class:key`` per model it carries.

Tags let people find jobs (``eventbus jobs --tag``, the dashboard's filters) and watch them
(``eventbus tags watch``), as Laravel Horizon's do. A command's ``tags()`` method gives its own
(the add-ons' jobs give theirs: a queued listener its event's class, a queued notification
its notification's class and its notifiable); the models found in the command's encoded state
(stored by identifier, Laravel's SerializesModels) add ``module.Class:key`` each, as Horizon
tags Eloquent models. An encrypted job gets no model tags: its state is sealed, and its tags
travel in clear.

Tags are bounded (:data:`~eventbus.payload.MAX_TAGS` of at most
:data:`~eventbus.payload.MAX_TAG_LENGTH` characters): a longer tag is cut, tags past the count
are left out, and a ``tags()`` that returns anything but strings is a
:class:`~eventbus.SerializationError` at dispatch.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable
from typing import Any

from eventbus.errors import SerializationError
from eventbus.payload import MAX_TAG_LENGTH, MAX_TAGS
from eventbus.serializer import TAG

#: How many nodes of a command's encoded state are looked at for models, at most: a job that
#: carries a list of a million numbers costs its dispatch no more than this.
MAX_VISITS = 1000


def tags_for(command: Any, encoded: dict[str, Any], sealed: bool = False) -> tuple[str, ...]:
    """The tags of ``command`` whose state encoded as ``encoded``: its ``tags()`` first, then its
    models' (none when ``sealed``), each once, at most :data:`MAX_TAGS`.

    Every dispatch asks, so the common case is decided first and cheaply: a class without
    ``tags()`` (remembered per class) whose encoded state holds no container, where a model
    reference could be, has none."""
    cls = type(command)
    own = _OWN_TAGS.get(cls)
    if own is None:
        own = _OWN_TAGS[cls] = callable(getattr(cls, "tags", None))
    if not own:
        if sealed:
            return ()
        for value in encoded.values():
            if type(value) is dict or type(value) is list:
                break
        else:
            return ()
    found = dict.fromkeys(checked_tags(command.tags(), cls.__qualname__)) if own else {}
    if not sealed:
        for tag in model_tags(encoded.values()):
            if len(found) >= MAX_TAGS:
                break
            found.setdefault(tag)
    return tuple(found)


#: Whether each command class has a ``tags()`` method (classes are few: every one is registered).
_OWN_TAGS: dict[type, bool] = {}


def checked_tags(given: Any, owner: str) -> list[str]:
    """``given`` (what a ``tags()`` returned) as a list of tags: each text cut to
    :data:`MAX_TAG_LENGTH` characters (a tag made of user data, an email or a URL, must never
    make a dispatch fail), empty ones left out, the first :data:`MAX_TAGS` kept. Anything but
    a list of strings is a SerializationError: a mistake in the code, not in the data."""
    if isinstance(given, (str, bytes)) or not isinstance(given, Iterable):
        raise SerializationError(f"{owner}.tags() must return a list of strings, not {type(given).__name__}")
    tags = list(given)
    for tag in tags:
        if not isinstance(tag, str):
            raise SerializationError(f"{owner}.tags() must return strings, not {type(tag).__name__} "
                                     f"({tag!r:.40})")
    return list(dict.fromkeys(tag[:MAX_TAG_LENGTH] for tag in tags if tag))[:MAX_TAGS]


def model_tags(values: Iterable[Any]) -> list[str]:
    """``Class:key`` for each model reference in encoded ``values`` (breadth first, bounded)."""
    found: list[str] = []
    pending = collections.deque(v for v in values if isinstance(v, (dict, list)))
    if not pending:
        return found
    visits = 0
    while pending and visits < MAX_VISITS and len(found) < MAX_TAGS:
        node = pending.popleft()
        visits += 1
        children = node.values() if isinstance(node, dict) else node
        if isinstance(node, dict) and node.get(TAG) == "model":
            tag = _model_tag(node)
            if tag is not None and tag not in found:
                found.append(tag)
            continue
        pending.extend(v for v in children if isinstance(v, (dict, list)))
    return found


def _model_tag(node: dict[str, Any]) -> str | None:
    key = node.get("key")
    if isinstance(key, dict):  # a tagged key (a UUID, a tuple of columns): its value
        key = key.get("v")
    if isinstance(key, list):
        key = ",".join(str(part) for part in key)
    if isinstance(key, bool) or not isinstance(key, (str, int, float)):
        return None
    tag = f"{node.get('cls')}:{key}"
    return tag if len(tag) <= MAX_TAG_LENGTH else None
