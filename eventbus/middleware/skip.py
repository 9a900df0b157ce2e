"""``Skip.when(...)`` / ``Skip.unless(...)``: do not run the job, and count it as done."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any

from eventbus.middleware.pipeline import Next

Condition = bool | Callable[[], Any] | Callable[[Any], Any]


@dataclasses.dataclass(frozen=True)
class Skip:
    """Skips the job (deleted as if it succeeded; its chain goes on) when the condition holds.

    The condition is a bool or a callable, evaluated when the job is about to run (a callable
    may take the job as its one argument).
    """

    condition: Condition
    negate: bool = False

    @classmethod
    def when(cls, condition: Condition) -> Skip:
        return cls(condition)

    @classmethod
    def unless(cls, condition: Condition) -> Skip:
        return cls(condition, negate=True)

    def applies(self, job: Any) -> bool:
        value: Any = self.condition
        if callable(value):
            takes_job = len(inspect.signature(value).parameters) > 0
            value = value(job) if takes_job else value()
        return bool(value) != self.negate

    def handle(self, job: Any, next: Next) -> Any:
        if self.applies(job):
            return None
        return next(job)
