"""An encrypted job for the key rotation tests (loaded lazily: the ``apps`` package is trusted)."""

from __future__ import annotations

from apps.jobs import Record


class SealedRecord(Record):
    """``Record`` with its state sealed under the key (``encrypted = True``)."""

    encrypted = True
