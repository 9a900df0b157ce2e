"""Every error eventbus raises on purpose derives from :class:`EventBusError`.

::

    EventBusError
    ├── ConfigurationError          bad or unknown connection, driver, URL or setting (CLI exit 2)
    │   └── MissingDependencyError  a driver needs an extra that is not installed
    ├── ConnectionUnavailableError  a server (Redis, database, SMTP) cannot be reached (CLI exit 1)
    │   └── NotReplicatedError      a push reached the master but not enough replicas in time
    ├── SerializationError          a value cannot be written as tagged JSON (names the field)
    ├── DeserializationError        a payload cannot be read back
    │   └── UnsafePayloadError      a payload names a class or handler that is not allowed
    ├── ModelNotFoundError          a model stored by identifier no longer exists
    ├── JobTimeoutError             an attempt ran past its timeout
    ├── MaxAttemptsExceededError    a job was attempted too many times (or past retry_until)
    ├── ManuallyFailedError         a job called ``self.fail()`` without an exception
    ├── FailedJobError              a job's failure as another process sees it (a batch's ``catch``)
    └── WorkerConfigurationError    a worker whose options would run jobs twice
        (subclass of ConfigurationError)

Errors carry context as attributes (``job_uuid``, ``queue``, ``connection``) where they have it.
"""

from __future__ import annotations


class EventBusError(Exception):
    """Root of every error eventbus raises on purpose."""

    def __init__(
        self,
        message: str,
        *,
        job_uuid: str | None = None,
        queue: str | None = None,
        connection: str | None = None,
    ) -> None:
        super().__init__(message)
        self.job_uuid = job_uuid
        self.queue = queue
        self.connection = connection


class ConfigurationError(EventBusError):
    """The configuration names something unknown or malformed. The message names the key."""


class MissingDependencyError(ConfigurationError):
    """A driver needs an optional dependency; the message says which extra to install."""


class WorkerConfigurationError(ConfigurationError):
    """The worker's options would let a job run twice (e.g. timeout not below retry_after)."""


class ConnectionUnavailableError(EventBusError):
    """A server could not be reached. The message names it, without any password."""


class NotReplicatedError(ConnectionUnavailableError):
    """A push reached the Redis master, but fewer replicas than the connection's ``wait_replicas``
    acknowledged it within ``wait_timeout``: the job is queued, and a failover now could lose it.
    ``job_uuid`` names it; pushing it again is safe (it is queued once) but proves nothing more."""


class SerializationError(EventBusError):
    """A value cannot be encoded as tagged JSON. ``path`` names the field, e.g. ``order.items[2]``."""

    def __init__(self, message: str, *, path: str = "", **context: str | None) -> None:
        super().__init__(message, **context)
        self.path = path


class DeserializationError(EventBusError):
    """A payload cannot be decoded: not JSON, a missing field, a bad tag."""


class UnsafePayloadError(DeserializationError):
    """A payload names a class, function or handler outside the registry and trusted modules."""


class ModelNotFoundError(EventBusError):
    """A model stored in a payload by identifier could not be loaded any more."""


class JobTimeoutError(EventBusError):
    """An attempt ran longer than its timeout and was interrupted."""


class MaxAttemptsExceededError(EventBusError):
    """A job has been attempted too many times, or its retry_until moment has passed."""


class ManuallyFailedError(EventBusError):
    """Raised into ``failed()`` when a job called ``self.fail()`` with no exception of its own."""


class FailedJobError(EventBusError):
    """A job's failure as another process sees it: the exception itself stayed in the worker
    that ran the job, its ``Type: message`` line travelled. A batch's ``catch`` (and
    ``allow_failures``/``progress``) function callbacks receive one. ``type_name`` is the
    original's type as the failed store writes it (``ValueError``, ``shop.errors.Declined``),
    ``str(exc)`` its message, ``description`` all that travelled.
    """

    def __init__(self, description: str, *, job_uuid: str | None = None) -> None:
        line = description.split("\n", 1)[0]
        head, sep, message = line.partition(": ")
        self.type_name = head if sep else line
        super().__init__(message if sep else "", job_uuid=job_uuid)
        self.description = description


__all__ = [
    "ConfigurationError",
    "ConnectionUnavailableError",
    "DeserializationError",
    "EventBusError",
    "FailedJobError",
    "JobTimeoutError",
    "ManuallyFailedError",
    "MaxAttemptsExceededError",
    "MissingDependencyError",
    "ModelNotFoundError",
    "NotReplicatedError",
    "SerializationError",
    "UnsafePayloadError",
    "WorkerConfigurationError",
]
