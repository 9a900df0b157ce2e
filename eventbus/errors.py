"""Every error eventbus raises on purpose derives from :class:`EventBusError`.

::

    EventBusError
    ├── ConfigurationError          bad or unknown connection, driver, URL or setting (CLI exit 2)
    │   └── MissingDependencyError  a driver needs an extra that is not installed
    ├── ConnectionUnavailableError  a server (Redis, database, SMTP) cannot be reached (CLI exit 1)
    ├── SerializationError          a value cannot be written as tagged JSON (names the field)
    ├── DeserializationError        a payload cannot be read back
    │   └── UnsafePayloadError      a payload names a class or handler that is not allowed
    ├── ModelNotFoundError          a model stored by identifier no longer exists
    ├── JobTimeoutError             an attempt ran past its timeout
    ├── MaxAttemptsExceededError    a job was attempted too many times (or past retry_until)
    ├── ManuallyFailedError         a job called ``self.fail()`` without an exception
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


__all__ = [
    "ConfigurationError",
    "ConnectionUnavailableError",
    "DeserializationError",
    "EventBusError",
    "JobTimeoutError",
    "ManuallyFailedError",
    "MaxAttemptsExceededError",
    "MissingDependencyError",
    "ModelNotFoundError",
    "SerializationError",
    "UnsafePayloadError",
    "WorkerConfigurationError",
]
