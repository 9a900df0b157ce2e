"""Jobs for the toolbox tests: rate limits, overlap locks, exception throttling, unique jobs.

The worker (and the test process) configure the connection under test from the environment:
TOOLBOX_DRIVER (redis/database) and TOOLBOX_URL. Each job records what happened in a log file
(TOOLBOX_LOG), one line per event, so two worker processes write to one place.
"""

from __future__ import annotations

import os
import time
from typing import Any

import eventbus
from eventbus import Limit, RateLimited, ThrottlesExceptions, WithoutOverlapping

if os.environ.get("TOOLBOX_URL"):
    driver = os.environ["TOOLBOX_DRIVER"]
    conn: dict[str, Any] = {"driver": driver, "url": os.environ["TOOLBOX_URL"], "retry_after": 30}
    if driver == "redis":
        conn["block_for"] = 0.5
    eventbus.configure(default="toolbox", connections={"toolbox": conn},
                       failed=os.environ.get("TOOLBOX_FAILED_URL"))

eventbus.rate_limit("toolbox-per-second", per_second=2)


def record(*fields: object) -> None:
    with open(os.environ["TOOLBOX_LOG"], "a") as log:
        log.write(" ".join(str(f) for f in (*fields, os.getpid(), time.time())) + "\n")


class Limited(eventbus.Job):
    tries = 1  # a release by the limit must not use it up

    def __init__(self, n: int) -> None:
        self.n = n

    def middleware(self) -> list[Any]:
        return [RateLimited("toolbox-per-second")]

    def handle(self) -> None:
        record("limited", self.n, self.attempts)


class Exclusive(eventbus.Job):
    tries = 1

    def __init__(self, n: int, key: str) -> None:
        self.n = n
        self.key = key

    def middleware(self) -> list[Any]:
        return [WithoutOverlapping(self.key, release_after=0.1, expire_after=20)]

    def handle(self) -> None:
        record("start", self.n)
        time.sleep(0.4)
        record("end", self.n)


class Contended(eventbus.Job):
    """One try, one lock for all: every release by the lock must give its attempt back."""

    tries = 1

    def __init__(self, n: int) -> None:
        self.n = n

    def middleware(self) -> list[Any]:
        return [WithoutOverlapping("k")]

    def handle(self) -> None:
        record("contended", self.n, self.attempts)
        time.sleep(0.05)


class Unstable(eventbus.Job):
    tries = 20

    def __init__(self, n: int) -> None:
        self.n = n

    def middleware(self) -> list[Any]:
        return [ThrottlesExceptions(max_attempts=3, decay_s=2, by="unstable")]

    def handle(self) -> None:
        record("unstable", self.n, self.attempts)
        if os.path.exists(os.environ["TOOLBOX_LOG"] + ".broken"):
            raise ConnectionError("the service is down")


class Reindex(eventbus.Job):
    unique = True
    unique_for = 60

    def __init__(self, shop: int, seconds: float = 0.0) -> None:
        self.shop = shop
        self.seconds = seconds

    def unique_id(self) -> str:
        return str(self.shop)

    def handle(self) -> None:
        record("reindex-start", self.shop)
        time.sleep(self.seconds)
        record("reindex-end", self.shop)


class ReindexUntilProcessing(Reindex):
    unique_until_processing = True


class Shop:
    """A model kept as a file beside the log: deleting the file deletes the shop."""

    def __init__(self, id: int) -> None:
        self.id = id

    @staticmethod
    def path(id: int) -> str:
        return f"{os.environ['TOOLBOX_LOG']}.shop-{id}"

    @classmethod
    def create(cls, id: int) -> Shop:
        open(cls.path(id), "w").close()
        return cls(id)

    @classmethod
    def find(cls, id: int) -> Shop | None:
        return cls(id) if os.path.exists(cls.path(id)) else None


eventbus.register_model(Shop, key=lambda shop: shop.id, load=lambda cls, key: cls.find(key))


class ReindexShop(eventbus.Job):
    """Unique per shop, and quietly deleted when its shop is gone."""

    unique = True
    delete_when_missing_models = True

    def __init__(self, shop: Shop) -> None:
        self.shop = shop

    def unique_id(self) -> str:
        return str(self.shop.id)

    def handle(self) -> None:
        record("reindex-shop", self.shop.id)


class HoldWhileGated:
    """Releases the job (a try given back) while the gate file exists."""

    def handle(self, job: Any, next: Any) -> Any:
        if os.path.exists(os.environ["TOOLBOX_LOG"] + ".gate"):
            record("held-back", job.n)
            job.release(0.2, counts_attempt=False)
            return None
        return next(job)


class GatedReindex(eventbus.Job):
    """Unique until processing, behind a middleware that may hold it back."""

    unique = True
    unique_until_processing = True

    def __init__(self, n: int, seconds: float = 0.0) -> None:
        self.n = n
        self.seconds = seconds

    def middleware(self) -> list[Any]:
        return [HoldWhileGated()]

    def handle(self) -> None:
        record("gated-start", self.n)
        time.sleep(self.seconds)


class Keyed(eventbus.Job):
    """Unique by, and locked against overlapping by, a key that is user data."""

    unique = True

    def __init__(self, key: str) -> None:
        self.key = key

    def unique_id(self) -> str:
        return self.key

    def middleware(self) -> list[Any]:
        return [WithoutOverlapping(self.key)]

    def handle(self) -> None:
        record("keyed", len(self.key))


class CardExpired(Exception):
    pass


class Fraud(Exception):
    pass


class GatewayDown(Exception):
    pass


class Charge(eventbus.Job):
    """ThrottlesExceptions sorting what a payment gateway raises: delete, fail, or back off."""

    tries = 5

    def __init__(self, n: int, error: str) -> None:
        self.n = n
        self.error = error

    def middleware(self) -> list[Any]:
        return [ThrottlesExceptions(max_attempts=50, decay_s=60).by("payments")
                .delete_when(CardExpired)
                .fail_when(lambda exc: isinstance(exc, Fraud))
                .report(lambda exc: isinstance(exc, GatewayDown))
                .backoff(lambda exc: 1.0 if isinstance(exc, GatewayDown) else 600.0)]

    def handle(self) -> None:
        record("charge", self.n, self.error, self.attempts)
        if self.error == "expired":
            raise CardExpired(f"card of charge {self.n} expired")
        if self.error == "fraud":
            raise Fraud(f"charge {self.n} looks like fraud")
        if self.error == "down" and self.attempts < 3:
            raise GatewayDown(f"gateway down for charge {self.n}")


class CallService(eventbus.Job):
    """One exception opens the circuit of its service for 3 seconds, whatever the job class."""

    tries = 1

    def __init__(self, service: str, fails: bool) -> None:
        self.service = service
        self.fails = fails

    def middleware(self) -> list[Any]:
        return [ThrottlesExceptions(max_attempts=1, decay_s=3).by(self.service)]

    def handle(self) -> None:
        record("call", self.service, int(self.fails))
        if self.fails:
            raise ConnectionError(f"{self.service} is down")


class PingService(CallService):
    """Another class sharing the circuit of its service."""


class Export(eventbus.Job):
    """Exports and imports of one account never overlap: one lock shared by both classes."""

    def __init__(self, account: str) -> None:
        self.account = account

    def middleware(self) -> list[Any]:
        return [WithoutOverlapping(self.account, release_after=0.1).shared()]

    def handle(self) -> None:
        record("start", type(self).__name__)
        time.sleep(0.3)
        record("end", type(self).__name__)


class Import(Export):
    pass


class TenantTask(eventbus.Job):
    """Its overlap lock lives under the tenant's own prefix."""

    def __init__(self, account: str) -> None:
        self.account = account

    def middleware(self) -> list[Any]:
        return [WithoutOverlapping(self.account, release_after=0.2).with_prefix("tenant-a:")]

    def handle(self) -> None:
        record("tenant-task", self.account)


def plan_limits(job: Any) -> Any:
    """VIP accounts run without a limit; the others one job a day each, and 100 a day in all."""
    if job.vip:
        return Limit.none()
    return [Limit.per_day(1).by(job.account), Limit.per_day(100)]


eventbus.rate_limit("plans", plan_limits)


class PlanJob(eventbus.Job):
    tries = 1

    def __init__(self, account: str, n: int, vip: bool = False) -> None:
        self.account = account
        self.n = n
        self.vip = vip

    def middleware(self) -> list[Any]:
        return [RateLimited("plans")]

    def handle(self) -> None:
        record("plan", self.account, self.n)


class SyncSearch(eventbus.Job):
    """Debounced per product: of a burst of updates, only the last one runs."""

    debounce_for = 1.0

    def __init__(self, product: int, version: int) -> None:
        self.product = product
        self.version = version

    def debounce_id(self) -> str:
        return str(self.product)

    def handle(self) -> None:
        record("sync", self.product, self.version)


class Step(eventbus.Job):
    """Records that it ran; fails when told to (tries=1, so that is final)."""

    tries = 1

    def __init__(self, name: str, fail: bool = False, seconds: float = 0.0) -> None:
        self.name = name
        self.fail_it = fail
        self.seconds = seconds

    def handle(self) -> None:
        time.sleep(self.seconds)
        current = self.batch()
        if current is not None and current.cancelled:
            record("skipped", self.name)
            return
        record("ran", self.name)
        if self.fail_it:
            raise RuntimeError(f"{self.name} failed")


class Grow(Step):
    """Adds two more steps to its own batch, then runs."""

    def handle(self) -> None:
        current = self.batch()
        assert current is not None
        current.add([Step(f"{self.name}-child-1"), Step(f"{self.name}-child-2")])
        super().handle()


class Report(eventbus.Job):
    """A callback: records its name and what the batch looked like."""

    def __init__(self, name: str) -> None:
        self.name = name

    def handle(self) -> None:
        current = self.batch()
        state = f"{current.total}/{current.pending}/{current.failed}" if current else "-"
        record("callback", self.name, state)


def report_listener(batch: Any) -> None:
    record("callback", "listener", f"{batch.total}/{batch.pending}/{batch.failed}")


from listeners import listener  # noqa: E402  (a function the batch calls back)

listener(eventbus.JobProcessed, on=eventbus.EventBus())(report_listener)
