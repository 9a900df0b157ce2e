"""The ``Job`` class and what a running command may do to its own queue entry.

A job's state is its instance attributes, written as tagged JSON; its options are class attributes
(an instance attribute of the same name wins). Inside ``handle`` the job reaches its queue entry
through ``self.attempts``, ``self.release()``, ``self.delete()`` and ``self.fail()``.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from eventbus import registry
from eventbus.batches import Batch, find
from eventbus.dispatching import dispatch
from eventbus.errors import ConfigurationError, ManuallyFailedError
from eventbus.queue.base import Delay

if TYPE_CHECKING:
    from eventbus.queue.base import QueueJob


class InteractsWithQueue:
    """What a running command can do to its own queue entry (Laravel's InteractsWithQueue)."""

    _queue_job: QueueJob | None = None

    @property
    def attempts(self) -> int:
        """How many times this job has been attempted, this attempt included (1 when run inline)."""
        return self._queue_job.attempts if self._queue_job is not None else 1

    @property
    def job_uuid(self) -> str | None:
        return self._queue_job.uuid if self._queue_job is not None else None

    def release(self, delay: Delay | None = 0, *, counts_attempt: bool = True) -> None:
        """Put the job back on its queue, to run again after ``delay``.

        ``counts_attempt=False`` gives back this attempt (the job did not really run: a limit or
        a lock said "not now"), so it does not use up one of its tries.
        """
        if self._queue_job is not None:
            self._queue_job.release(delay, counts_attempt=counts_attempt)

    def touch(self) -> bool:
        """Ask for another ``retry_after`` before the reservation runs out (a long job's
        heartbeat, beanstalkd's ``touch``). False when run inline, when this worker no longer
        holds the reservation, or when the driver cannot extend one (Redis and the database
        drivers: there ``timeout`` + grace must stay below ``retry_after`` instead)."""
        return self._queue_job.touch() if self._queue_job is not None else False

    def delete(self) -> None:
        """Remove the job from its queue without running it again."""
        if self._queue_job is not None:
            self._queue_job.delete()

    def batch(self) -> Batch | None:
        """The batch this job belongs to, as it is now (None outside a batch; in a test, the
        fake one ``eventbus.testing.fake_batch(job)`` gave it)."""
        fake = getattr(self, "_fake_batch", None)
        if fake is not None:
            return fake  # type: ignore[no-any-return]
        ref = self._queue_job.payload().batch_id if self._queue_job is not None else None
        return find(ref) if ref else None

    def prepend_to_chain(self, job: Any) -> None:
        """Run ``job`` next, when this one has succeeded, before the rest of its chain (Laravel's
        ``prependToChain``); a job that was no chain becomes one. Outside a worker (``handle()``
        called directly) nothing can be pushed later, so this is an error rather than a job
        that silently never runs."""
        self._amend_chain(job, first=True)

    def append_to_chain(self, job: Any) -> None:
        """Run ``job`` at the end of this job's chain, after its last step (``appendToChain``)."""
        self._amend_chain(job, first=False)

    def _amend_chain(self, job: Any, *, first: bool) -> None:
        from eventbus.dispatching.chains import amend_chain

        queued = self._queue_job
        if queued is None:
            raise RuntimeError(f"{type(self).__name__} is not running on a queue: there is no "
                               "chain to add to (dispatch the job, or use eventbus.chain([...]))")
        queued.amend_payload(amend_chain(queued.payload(), job, queue=queued.queue_name,
                                         connection=queued.connection_name, first=first))

    def fail(self, exc: BaseException | str | None = None) -> None:
        """Fail the job now: no more attempts, ``failed()`` runs, and it goes to the failed store."""
        if isinstance(exc, str) or exc is None:
            exc = ManuallyFailedError(exc or "the job marked itself as failed")
        if self._queue_job is not None:
            self._queue_job.fail(exc)


def option_names(base: type) -> tuple[str, ...]:
    """The options a class takes: the public class attributes declared on ``base``."""
    return tuple(name for name in getattr(base, "__annotations__", {}) if not name.startswith("_"))


def refuse_misspelt_options(cls: type, options: Iterable[str], kind: str) -> None:
    """Refuse a class attribute that reads like a misspelt option (``tires = 3``).

    Such a typo would otherwise be a plain attribute nobody reads: the job runs with the
    default (one try) and nothing says why. Methods, private names and names not close to any
    option are the class's own business.
    """
    known = tuple(options)
    for name, value in vars(cls).items():
        if name.startswith("_") or name in known or callable(value) or isinstance(value, (property, classmethod, staticmethod)):
            continue
        hint = difflib.get_close_matches(name, known, n=1, cutoff=0.8)
        if hint:
            raise ConfigurationError(f"{cls.__qualname__}.{name} is not a {kind} option (did you mean "
                                     f"{hint[0]!r}?); {kind} options are {', '.join(sorted(known))}")


class Job(InteractsWithQueue):
    """Base class for queued jobs. Subclasses are registered for payloads automatically."""

    queue: ClassVar[str | None] = None
    connection: ClassVar[str | None] = None
    tries: ClassVar[int | None] = None
    max_exceptions: ClassVar[int | None] = None
    backoff: ClassVar[int | float | Sequence[int | float] | None] = None
    timeout: ClassVar[float | None] = None
    retry_until: ClassVar[Any] = None
    fail_on_timeout: ClassVar[bool] = False
    delay: ClassVar[Delay | None] = None
    delete_when_missing_models: ClassVar[bool] = False
    encrypted: ClassVar[bool] = False
    after_commit: ClassVar[bool] = False
    #: Laravel's ShouldBeUnique: drop a dispatch while a job with the same unique_id() waits or runs.
    unique: ClassVar[bool] = False
    unique_for: ClassVar[float | None] = None
    unique_via: ClassVar[str | None] = None
    unique_until_processing: ClassVar[bool] = False
    #: Debounced jobs: a dispatch within this many seconds replaces the one still waiting.
    debounce_for: ClassVar[float | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        refuse_misspelt_options(cls, JOB_OPTIONS, "job")
        registry.register(cls)

    def handle(self) -> Any:
        """Do the work. May be ``async def``."""
        raise NotImplementedError(f"{type(self).__qualname__} must define handle()")

    def failed(self, exc: BaseException) -> None:
        """Called once when the job has failed for good. Override to clean up or alert."""

    def dispatch(self, *, queue: str | None = None, delay: Delay | None = None,
                 connection: str | None = None, after_commit: bool | None = None) -> str | None:
        """Push this job; same as ``eventbus.dispatch(self, ...)``."""
        return dispatch(self, queue=queue, delay=delay, connection=connection,
                        after_commit=after_commit)


#: Every option a job class may set (the class attributes declared on :class:`Job`).
JOB_OPTIONS = option_names(Job)
