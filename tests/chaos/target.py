"""The connection under test, as the test process and the workers' ``--app`` both configure it."""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

import eventbus

CONNECTION = "chaos"


@dataclasses.dataclass(frozen=True)
class Target:
    """A queue connection (``redis`` or ``database``) and the failed store beside it.

    Workers may reach the server through a proxy (``dataclasses.replace(target, url=...)``)
    while the test process talks to it directly.
    """

    driver: str
    url: str
    retry_after: float = 3.0
    failed_url: str = ""
    block_for: float = 1.0
    #: More connection options, as a JSON object (``{"cluster": true}``, ``{"wait_replicas": 1}``).
    options: str = ""

    def connection_config(self) -> dict[str, Any]:
        config: dict[str, Any] = {"driver": self.driver, "url": self.url, "retry_after": self.retry_after}
        if self.driver == "redis":
            config["block_for"] = self.block_for
        config.update(json.loads(self.options or "{}"))
        return config

    def configure(self) -> None:
        """Make this the default connection of the current process."""
        eventbus.configure(default=CONNECTION, connections={CONNECTION: self.connection_config()},
                           failed=self.failed_url or self.url)

    def env(self) -> dict[str, str]:
        return {"CHAOS_DRIVER": self.driver, "CHAOS_URL": self.url, "CHAOS_RETRY_AFTER": repr(self.retry_after),
                "CHAOS_BLOCK_FOR": repr(self.block_for), "EVENTBUS_FAILED_URL": self.failed_url or self.url,
                "CHAOS_OPTIONS": self.options}

    @classmethod
    def from_env(cls) -> Target:
        e = os.environ
        return cls(driver=e["CHAOS_DRIVER"], url=e["CHAOS_URL"], retry_after=float(e["CHAOS_RETRY_AFTER"]),
                   failed_url=e.get("EVENTBUS_FAILED_URL", ""), block_for=float(e.get("CHAOS_BLOCK_FOR", "1")),
                   options=e.get("CHAOS_OPTIONS", ""))
