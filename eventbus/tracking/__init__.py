"""The recent-jobs store: finished jobs kept for a while, by status and by tag (Horizon's
completed jobs, recent failures and monitored tags).

Workers record what they finished (:mod:`eventbus.monitoring.monitor`, in its own thread);
``eventbus jobs``, ``eventbus tags`` and the dashboard read it through :func:`repository`.
"""

from __future__ import annotations

from eventbus.tracking.records import COMPLETED, FAILED, JobRecord
from eventbus.tracking.repository import JobRepository, MemoryJobRepository
from eventbus.tracking.stores import register_repository, repository

__all__ = ["COMPLETED", "FAILED", "JobRecord", "JobRepository", "MemoryJobRepository",
           "register_repository", "repository"]
