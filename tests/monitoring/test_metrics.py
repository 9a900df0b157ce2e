"""Metrics: tallied in the worker's memory, flushed as counters, read back per minute."""

from __future__ import annotations

import time

import pytest

from eventbus.errors import ConnectionUnavailableError
from eventbus.monitoring import keys
from eventbus.monitoring.metrics import BUCKET_S, MetricsRecorder, per_minute, read_samples, totals_by
from eventbus.state import MemoryStateStore


class CountingStore(MemoryStateStore):
    """A real memory store that counts round trips (and can be made to fail)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []
        self.down = False
        self._batch = False

    def _check(self, name: str) -> None:
        if self._batch:
            return  # one step of a batch: the batch is the round trip
        self.calls.append(name)
        if self.down:
            raise ConnectionUnavailableError("the store is down")

    def _batched(self, name: str, run: object) -> None:
        self._check(name)
        self._batch = True
        try:
            run()  # type: ignore[operator]
        finally:
            self._batch = False

    def _incr_many(self, amounts: dict[str, float], ttl_s: float | None) -> None:
        self._batched("incr_many", lambda: super(CountingStore, self)._incr_many(amounts, ttl_s))

    def _put_many(self, items: dict[str, str], ttl_s: float | None) -> None:
        self._batched("put_many", lambda: super(CountingStore, self)._put_many(items, ttl_s))

    def _incr(self, key: str, amount: float, ttl_s: float | None) -> float:
        self._check("incr")
        return super()._incr(key, amount, ttl_s)

    def _put(self, key: str, value: str, ttl_s: float | None) -> None:
        self._check("put")
        super()._put(key, value, ttl_s)

    def _add(self, key: str, value: str, ttl_s: float | None) -> bool:
        self._check("add")
        return super()._add(key, value, ttl_s)

    def _get(self, key: str) -> str | None:
        self._check("get")
        return super()._get(key)

    def _scan(self, prefix: str) -> dict[str, str]:
        self._check("scan")
        return super()._scan(prefix)


def test_a_thousand_jobs_cost_no_round_trip_until_the_flush_which_costs_two() -> None:
    store, recorder = CountingStore(), MetricsRecorder("redis")
    for n in range(1000):
        recorder.record("default", "shop.SendMail", "done", 0.01, wait_s=0.5)
    recorder.record("default", "shop.SendMail", "failed", 0.03)
    recorder.record("mail", "shop.SendMail", "released", 0.02)
    assert store.calls == []
    assert recorder.flush(store) >= 2
    assert store.calls == ["incr_many", "put_many"]  # counters, then the queues seen
    assert recorder.flush(store) == 0 and store.calls == ["incr_many", "put_many"]
    store.calls.clear()
    totals = totals_by(read_samples(store, "redis"))
    mail = totals[("default", "shop.SendMail")]
    assert (mail.done, mail.failed, mail.released, mail.processed) == (1000, 1, 0, 1001)
    assert mail.avg_runtime_s == pytest.approx((1000 * 0.01 + 0.03) / 1001)
    assert mail.avg_wait_s == pytest.approx(0.5) and mail.waited == 1000
    assert totals[("mail", "shop.SendMail")].released == 1


def test_counters_of_several_workers_add_up() -> None:
    store = MemoryStateStore()
    for _ in range(3):
        recorder = MetricsRecorder("db")
        recorder.record("default", "Job", "done", 1.0)
        recorder.flush(store)
    [(key, tally)] = totals_by(read_samples(store, "db"), queue=False).items()
    assert key == ("", "Job") and tally.done == 3 and tally.runtime == 3.0


def test_a_store_outage_keeps_the_tallies_for_the_next_flush() -> None:
    store, recorder = CountingStore(), MetricsRecorder("redis")
    recorder.record("default", "Job", "done", 0.1)
    store.down = True
    with pytest.raises(ConnectionUnavailableError):
        recorder.flush(store)
    recorder.record("default", "Job", "done", 0.1)
    store.down = False
    recorder.flush(store)
    assert totals_by(read_samples(store, "redis"))[("default", "Job")].done == 2


def test_per_minute_series_has_every_minute_and_buckets_are_minutes() -> None:
    store, recorder = MemoryStateStore(), MetricsRecorder("redis")
    now = time.time()
    recorder.record("default", "Job", "done", 0.1, at=now - 180)
    recorder.record("default", "Job", "done", 0.1, at=now)
    recorder.record("default", "Job", "failed", 0.1, at=now)
    recorder.flush(store)
    series = per_minute(read_samples(store, "redis", since=now - 300), since=now - 300)
    assert len(series) in (6, 7)
    assert [t.processed for _, t in series][-4] + [t.processed for _, t in series][-1] == 3
    assert all(b - a == BUCKET_S for (a, _), (b, _) in zip(series, series[1:]))
    assert read_samples(store, "redis", since=now - 60)[-1].tally.processed == 2
    assert read_samples(store, "other-connection") == []


@pytest.mark.parametrize("name", ["plain.Job", "with:colons", "100% sure", "ünï ✓", "x" * 400])
def test_names_survive_the_key_and_long_ones_fit(name: str) -> None:
    key = keys.metric("redis", 1_700_000_000, "q:1", name, "done")
    assert len(key) <= 255
    minute, queue, job, field = keys.parse_metric("redis", key)  # type: ignore[misc]
    assert (minute, queue, field) == (1_700_000_000, "q:1", "done")
    assert job == name or (len(name) == 400 and job.startswith("x" * 100) and "~" in job)


def test_unknown_status_is_refused() -> None:
    with pytest.raises(ValueError):
        MetricsRecorder("redis").record("default", "Job", "weird", 0.1)
