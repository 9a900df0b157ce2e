"""The chaos scenarios. Each is a function ``(quick: bool) -> Result``: it builds its own servers,
workers and ledger, injects its fault, and judges the outcome in named checks.

Conventions every scenario keeps, so that each also holds once the known faults are fixed:
worker ``--timeout`` + ``EVENTBUS_TIMEOUT_GRACE`` stays below the connection's ``retry_after``,
and jobs carry no timeout of their own (except where that is the fault under test).
"""

from __future__ import annotations

import dataclasses
import random
import signal
import time
from collections.abc import Callable, Iterable, Sequence

import eventbus
from chaos import ledger as ledger_mod
from chaos import scheduler_scenarios, servers
from chaos.apps.jobs import Work
from chaos.scene import Result, Scene, wait_until
from chaos.target import Target
from helpers import PG_URL, database_reason

Fault = tuple[float, set[str]]  # when, and the jobs it caught in flight


class Unavailable(Exception):
    """A server the scenario needs does not answer (the tests skip with this reason)."""


def pg_base() -> str:
    reason = database_reason(PG_URL)
    if reason:
        raise Unavailable(reason)
    return str(PG_URL)


def make_target(scene: Scene, driver: str, retry_after: float = 3.0, *, aof: bool = False) -> Target:
    """``redis`` (its own server), ``sqlite`` (a file) or ``postgres`` (a fresh database)."""
    if driver == "redis":
        return Target("redis", scene.redis(aof=aof).url(), retry_after)
    if driver == "sqlite":
        return Target("database", scene.sqlite(), retry_after)
    if driver == "postgres":
        return Target("database", scene.postgres(pg_base()), retry_after)
    raise ValueError(driver)


def settled(scene: Scene, target: Target, must_finish: Iterable[str]) -> Callable[[], bool]:
    """True once every job in ``must_finish`` is done and the queue is empty."""
    wanted = set(must_finish)

    def check() -> bool:
        if not wanted <= scene.ledger.done():
            return False
        try:
            return bool(scene.size(target) == 0)
        except eventbus.EventBusError:
            return False

    return check


def account(scene: Scene, target: Target, result: Result, uuids: Sequence[str], faults: Sequence[Fault], *,
            may_fail: Iterable[str] = ()) -> dict[str, str]:
    """Fill the row from the ledger, the failed store and the queue; add the standard checks:
    nothing lost, no duplicate beyond the jobs in flight at each fault, nothing stranded, and no
    job in the failed store unless it was meant to fail. Returns the failed records."""
    entries = scene.ledger.entries()
    failed: dict[str, str] = scene.failed(target)
    stranded = scene.size(target)
    t = ledger_mod.tally(uuids, entries, failed, stranded)
    allowed = sum(len(caught) for _, caught in faults)
    result.enqueued, result.executed_once = t.enqueued, t.executed_once
    result.lost, result.duplicated, result.stranded = t.lost, t.extra_runs, t.stranded
    result.check("lost", t.lost == 0, f"{t.lost} of {t.enqueued} jobs neither ran, nor failed, nor are queued")
    result.check("duplicates", t.extra_runs <= allowed,
                 f"{t.extra_runs} extra runs ({t.duplicated} jobs) with {allowed} jobs in flight at the faults")
    result.check("stranded", t.stranded == 0, f"{t.stranded} jobs still in the queue at the end")
    unexpected = {u: s for u, s in failed.items() if u in set(uuids) - set(may_fail)}
    result.check("no-failures", not unexpected,
                 f"{len(unexpected)} jobs in the failed store: {sorted(set(unexpected.values()))[:3]}")
    return failed


def drained(scene: Scene, target: Target, uuids: Sequence[str], result: Result, timeout: float,
            must_finish: Iterable[str] | None = None) -> float | None:
    """Wait until the jobs are done and the queue is empty; note how long that took."""
    started = time.monotonic()
    ok = wait_until(settled(scene, target, uuids if must_finish is None else must_finish), timeout, 0.1)
    took = time.monotonic() - started
    result.note(f"drained in {took:.1f}s" if ok else f"not drained after {timeout:.0f}s")
    return took if ok else None


# -- SIGKILL storm --------------------------------------------------------------------------------

def sigkill_storm(driver: str, quick: bool = True) -> Result:
    """``--processes 4`` under a storm of SIGKILLs to random children while a backlog drains."""
    result = Result(f"sigkill-storm-{driver}")
    jobs, kills, seconds = (120, 6, 0.1) if quick else (600, 30, 0.1)
    with Scene(result.scenario) as scene:
        target = make_target(scene, driver, retry_after=3.0)
        uuids = scene.dispatch(target, [Work(n, seconds=seconds, tries=100) for n in range(jobs)])
        pool = scene.worker(target, "--processes", "4", "--sleep", "0.1", "--timeout", "1", "--quiet")
        wait_until(lambda: len(scene.ledger.started()) >= 4, 30)
        rng = random.Random(9)
        kills_at: list[tuple[float, int]] = []
        for _ in range(kills):
            time.sleep(rng.uniform(0.3, 0.8))
            children = pool.children()
            if not children:
                continue
            victim = rng.choice(children)
            at = time.monotonic()
            try:
                signal_kill(victim)
            except ProcessLookupError:
                continue
            kills_at.append((at, victim))
        drained(scene, target, uuids, result, timeout=60 if quick else 180)
        pool.stop()
        entries = scene.ledger.entries()
        caught = [(at, ledger_mod.in_flight(entries, at, [pid])) for at, pid in kills_at]
        account(scene, target, result, uuids, caught)
        result.recovery = ledger_mod.recovery(entries, caught)
        result.note(f"{len(kills_at)} kills caught {sum(len(c) for _, c in caught)} jobs in flight")
    return result


def signal_kill(pid: int) -> None:
    import os

    os.kill(pid, signal.SIGKILL)


# -- Redis killed and restarted with AOF ------------------------------------------------------------

def redis_kill9_aof(quick: bool = True) -> Result:
    """``kill -9`` the Redis server mid-drain, restart it on its append-only file."""
    result = Result("redis-kill9-aof")
    jobs, down, rounds = (80, 1.0, 1) if quick else (400, 3.0, 3)
    with Scene(result.scenario) as scene:
        target = make_target(scene, "redis", aof=True)
        server: servers.RedisServer = scene.redis_server
        uuids = scene.dispatch(target, [Work(n, seconds=0.05, tries=100) for n in range(jobs)])
        pool = scene.worker(target, "--processes", "2", "--sleep", "0.1", "--timeout", "1", "--quiet")
        faults: list[Fault] = []
        resumes = []
        for r in range(rounds):
            wait_until(lambda: len(scene.ledger.done()) >= (r + 1) * jobs // (rounds + 2), 30)
            at = time.monotonic()
            server.kill()
            faults.append((at, ledger_mod.in_flight(scene.ledger.entries(), at)))
            time.sleep(down)
            server.start()
            up = time.monotonic()
            wait_until(lambda: any(e.kind == "start" and e.t > up for e in scene.ledger.entries()), 30)
            resumes.append(_first_start_after(scene, up) - up)
        drained(scene, target, uuids, result, timeout=60)
        pool.stop()
        account(scene, target, result, uuids, faults)
        result.recovery = ledger_mod.recovery(scene.ledger.entries(), faults)
        result.note(f"resumed {max(resumes):.1f}s after the server answered")
    return result


def _first_start_after(scene: Scene, at: float, pid: int | None = None) -> float:
    times = [e.t for e in scene.ledger.entries() if e.kind == "start" and e.t > at and (pid is None or e.pid == pid)]
    return min(times) if times else float("inf")


# -- Redis outage -----------------------------------------------------------------------------------

def redis_outage(quick: bool = True) -> Result:
    """Redis down for 8 s (quick) or 20 s (full) under two idle workers; then every worker must
    take jobs again within 2 s of the server answering (fault 5)."""
    result = Result("redis-outage")
    outage = 8.0 if quick else 20.0
    with Scene(result.scenario) as scene:
        target = make_target(scene, "redis", retry_after=5.0, aof=True)
        server: servers.RedisServer = scene.redis_server
        workers = [scene.worker(target, "--sleep", "0.1", "--timeout", "2.5", "--quiet") for _ in range(2)]
        before = scene.dispatch(target, [Work(n, seconds=0.05) for n in range(10)])
        wait_until(settled(scene, target, before), 30)
        server.stop()
        time.sleep(outage)
        server.start()
        up = time.monotonic()
        # one 1.9s probe per worker: a worker that is back within 2s finds one still waiting
        after = scene.dispatch(target, [Work(100 + n, seconds=1.9) for n in range(len(workers))]
                               + [Work(200 + n, seconds=0.1) for n in range(10)])
        uuids = before + after
        drained(scene, target, uuids, result, timeout=outage + 20)
        resumes = {w.pid: _first_start_after(scene, up, w.pid) - up for w in workers}
        alive = [w.alive() for w in workers]
        for w in workers:
            w.stop()
        account(scene, target, result, uuids, [])
        worst = max(resumes.values())
        result.recovery = worst
        result.check("workers-alive", all(alive), f"workers alive after the outage: {alive}")
        result.check("resume", worst <= 2.0, "every worker takes jobs within 2s of the server answering; "
                     f"they took {', '.join(f'{r:.1f}s' for r in resumes.values())}")
        result.note(f"outage {outage:.0f}s; resume per worker {', '.join(f'{r:.1f}s' for r in resumes.values())}")
    return result


# -- connection resets and a black hole through the proxy ------------------------------------------

def connection_resets(quick: bool = True) -> Result:
    """The proxy between the workers and Redis resets every connection every 0.4 s."""
    result = Result("connection-resets")
    jobs, resets = (200, 10) if quick else (1000, 60)
    with Scene(result.scenario) as scene:
        target = make_target(scene, "redis")
        proxy = scene.proxy(scene.redis_server.port)
        via_proxy = dataclasses.replace(target, url=proxy.url())
        uuids = scene.dispatch(target, [Work(n, seconds=0.04, tries=100) for n in range(jobs)])
        pool = scene.worker(via_proxy, "--processes", "2", "--sleep", "0.1", "--timeout", "1", "--quiet")
        wait_until(lambda: scene.ledger.started(), 30)
        faults: list[Fault] = []
        cut = 0
        for _ in range(resets):
            time.sleep(0.4)
            at = time.monotonic()
            cut += proxy.reset()
            faults.append((at, ledger_mod.in_flight(scene.ledger.entries(), at)))
        drained(scene, target, uuids, result, timeout=60)
        exits = pool.stderr().count("exited with")
        pool.stop()
        account(scene, target, result, uuids, faults)
        result.recovery = ledger_mod.recovery(scene.ledger.entries(), faults)
        result.check("connections-cut", cut >= resets, f"{cut} connections reset in {resets} resets")
        result.note(f"{resets} resets cut {cut} connections; {exits} worker exits")
    return result


def blackhole(quick: bool = True) -> Result:
    """The proxy black-holes all traffic between the workers and Redis for 3 s (full: 10 s)."""
    result = Result("blackhole")
    hole = 3.0 if quick else 10.0
    with Scene(result.scenario) as scene:
        target = make_target(scene, "redis")
        proxy = scene.proxy(scene.redis_server.port)
        via_proxy = dataclasses.replace(target, url=proxy.url())
        uuids = scene.dispatch(target, [Work(n, seconds=0.05, tries=100) for n in range(80)])
        pool = scene.worker(via_proxy, "--processes", "2", "--sleep", "0.1", "--timeout", "1", "--quiet")
        wait_until(lambda: len(scene.ledger.done()) >= 10, 30)
        at = time.monotonic()
        proxy.blackhole()
        faults: list[Fault] = [(at, ledger_mod.in_flight(scene.ledger.entries(), at))]
        time.sleep(hole)
        proxy.restore()
        up = time.monotonic()
        drained(scene, target, uuids, result, timeout=60)
        exits = pool.stderr().count("exited with")
        pool.stop()
        account(scene, target, result, uuids, faults)
        result.recovery = ledger_mod.recovery(scene.ledger.entries(), faults)
        resume = _first_start_after(scene, up) - up
        result.note(f"black hole {hole:.0f}s; resumed {resume:.1f}s after it lifted; {exits} worker exits")
    return result


def server_sigstop(quick: bool = True) -> Result:
    """The Redis server is frozen (SIGSTOP) for 3 s (full: 10 s) while workers drain a backlog."""
    result = Result("redis-sigstop")
    frozen = 3.0 if quick else 10.0
    with Scene(result.scenario) as scene:
        target = make_target(scene, "redis")
        server: servers.RedisServer = scene.redis_server
        uuids = scene.dispatch(target, [Work(n, seconds=0.05, tries=100) for n in range(80)])
        pool = scene.worker(target, "--processes", "2", "--sleep", "0.1", "--timeout", "1", "--quiet")
        wait_until(lambda: len(scene.ledger.done()) >= 10, 30)
        at = time.monotonic()
        server.freeze()
        faults: list[Fault] = [(at, ledger_mod.in_flight(scene.ledger.entries(), at))]
        time.sleep(frozen)
        server.thaw()
        up = time.monotonic()
        drained(scene, target, uuids, result, timeout=60)
        exits = pool.stderr().count("exited with")
        pool.stop()
        account(scene, target, result, uuids, faults)
        result.recovery = ledger_mod.recovery(scene.ledger.entries(), faults)
        resume = _first_start_after(scene, up) - up
        result.note(f"frozen {frozen:.0f}s; resumed {resume:.1f}s after; {exits} worker exits")
    return result


# -- PostgreSQL backends terminated ----------------------------------------------------------------

def pg_backend_termination(quick: bool = True) -> Result:
    """Every client backend of the queue's database is terminated once a second."""
    result = Result("pg-backend-termination")
    jobs, rounds = (200, 4) if quick else (1000, 20)
    with Scene(result.scenario) as scene:
        target = make_target(scene, "postgres")
        uuids = scene.dispatch(target, [Work(n, seconds=0.05, tries=100) for n in range(jobs)])
        pool = scene.worker(target, "--processes", "2", "--sleep", "0.1", "--timeout", "1", "--quiet")
        wait_until(lambda: scene.ledger.started(), 30)
        faults: list[Fault] = []
        terminated = 0
        for _ in range(rounds):
            time.sleep(1.0)
            at = time.monotonic()
            terminated += servers.terminate_pg_backends(target.url)
            faults.append((at, ledger_mod.in_flight(scene.ledger.entries(), at)))
        drained(scene, target, uuids, result, timeout=60)
        exits = pool.stderr().count("exited with")
        pool.stop()
        account(scene, target, result, uuids, faults)
        result.recovery = ledger_mod.recovery(scene.ledger.entries(), faults)
        result.check("backends-terminated", terminated >= rounds, f"{terminated} backends terminated")
        result.note(f"{terminated} backends terminated in {rounds} rounds; {exits} worker exits")
    return result


# -- helpers for the fault scenarios ---------------------------------------------------------------

def raw_payload(cls: type, command: dict[str, object], *, tries: int | None = None,
                timeout: float | None = None) -> tuple[str, str]:
    """A payload written by hand in the documented shape (uuid, raw JSON): it reaches the worker
    without passing any check ``dispatch`` may make. ``json.dumps`` writes NaN/Infinity as is."""
    import json
    import uuid as uuid_mod

    name = f"{cls.__module__}.{cls.__qualname__}"
    job_uuid = str(uuid_mod.uuid4())
    doc = {"uuid": job_uuid, "displayName": name, "job": "eventbus.CallQueuedHandler@call", "maxTries": tries,
           "maxExceptions": None, "backoff": None, "timeout": timeout, "retryUntil": None, "failOnTimeout": False,
           "data": {"commandName": name, "command": command}, "attempts": 0, "pushedAt": time.time()}
    return job_uuid, json.dumps(doc)


def push_raw(target: Target, raw: str) -> None:
    target.configure()
    eventbus.connection("chaos").push_raw(raw)


def overlapping_runs(entries: Sequence[ledger_mod.Entry], uuid: str, longest: float = float("inf")) -> int:
    """How many attempts of ``uuid`` started, on another worker, while an earlier attempt of it was
    still going: started and not yet ``done`` (an attempt without ``done`` is taken to have ended
    ``longest`` seconds after its start: when the watchdog ended its process)."""
    runs = []
    done = {(e.attempt, e.pid): e.t for e in entries if e.kind == "done" and e.uuid == uuid}
    for e in entries:
        if e.kind == "start" and e.uuid == uuid:
            runs.append((e.t, done.get((e.attempt, e.pid), e.t + longest), e.pid))
    return sum(1 for i, (s, _, pid) in enumerate(runs)
               if any(s0 < s < end0 and pid0 != pid for s0, end0, pid0 in runs[:i]))


def refused(worker_codes: Sequence[int | None], stderrs: Sequence[str]) -> bool:
    """Every worker refused to start (exit 2) with a sentence naming retry_after."""
    return all(c == 2 for c in worker_codes) and all("retry_after" in e for e in stderrs)


# -- fault 1: timeouts not checked against retry_after ----------------------------------------------

def job_timeout_over_retry_after(quick: bool = True) -> Result:
    """Fault 1: a job whose own ``timeout`` (4 s) is not below ``retry_after`` (2 s) and that runs
    2.6 s. Two workers with ``--timeout 0.5``. Wanted: refused at dispatch, or run exactly once."""
    result = Result("job-timeout-over-retry-after")
    with Scene(result.scenario) as scene:
        target = make_target(scene, "redis", retry_after=2.0)
        try:
            [uuid] = scene.dispatch(target, [Work(0, seconds=2.6, tries=3, timeout=4)])
        except eventbus.EventBusError as exc:
            result.check("refused-or-once", "retry_after" in str(exc), f"refused at dispatch: {exc}")
            result.note(f"refused at dispatch: {exc}")
            return result
        workers = [scene.worker(target, "--sleep", "0.1", "--timeout", "0.5", "--quiet") for _ in range(2)]
        wait_until(lambda: scene.ledger.done() and scene.size(target) == 0, 15)
        time.sleep(0.5)
        for w in workers:
            w.stop()
        _judge_once(scene, target, result, uuid)
    return result


def raw_timeout_over_retry_after(quick: bool = True) -> Result:
    """Fault 1, the check before running: the same job pushed as a raw payload (no dispatch-time
    check). Wanted: the worker refuses it (failed store, naming retry_after) or runs it once."""
    result = Result("raw-timeout-over-retry-after")
    with Scene(result.scenario) as scene:
        target = make_target(scene, "redis", retry_after=2.0)
        uuid, raw = raw_payload(Work, {"n": 0, "seconds": 2.6, "tries": 3}, tries=3, timeout=4.0)
        push_raw(target, raw)
        workers = [scene.worker(target, "--sleep", "0.1", "--timeout", "0.5", "--quiet") for _ in range(2)]
        wait_until(lambda: scene.size(target) == 0 and (scene.ledger.done() or not scene.ledger.started()), 15)
        time.sleep(0.5)
        for w in workers:
            w.stop()
        _judge_once(scene, target, result, uuid)
    return result


def _judge_once(scene: Scene, target: Target, result: Result, uuid: str) -> None:
    entries = scene.ledger.entries()
    failed = scene.failed(target)
    runs = sum(1 for e in entries if e.kind == "done" and e.uuid == uuid)
    overlap = overlapping_runs(entries, uuid)
    refused_by_worker = runs == 0 and "retry_after" in failed.get(uuid, "")
    account(scene, target, result, [uuid], [], may_fail=[uuid] if refused_by_worker else [])
    result.check("refused-or-once", refused_by_worker or (runs == 1 and uuid not in failed),
                 f"ran {runs} times ({overlap} at once on two workers); failed record: {failed.get(uuid)!r}")
    result.note(f"ran {runs}x, {overlap} overlapping; failed store: {failed.get(uuid, 'none')}")


def grace_over_retry_after(quick: bool = True) -> Result:
    """Fault 1, the watchdog grace: ``--timeout 1.5`` is below ``retry_after`` 2, but with the
    1 s grace a job that ignores its interrupt runs 2.5 s. Wanted: the workers refuse to start
    (timeout + grace must be below retry_after), or the job never runs on two workers at once."""
    result = Result("grace-over-retry-after")
    with Scene(result.scenario) as scene:
        target = make_target(scene, "redis", retry_after=2.0)
        from chaos.apps.jobs import Stubborn

        [uuid] = scene.dispatch(target, [Stubborn(0, seconds=2.4, tries=3)])
        workers = [scene.worker(target, "--sleep", "0.1", "--timeout", "1.5", "--quiet") for _ in range(2)]
        wait_until(lambda: not any(w.alive() for w in workers)
                   or (scene.ledger.done() and scene.size(target) == 0), 15)
        time.sleep(0.3)
        codes = [w.wait(0) if not w.alive() else None for w in workers]
        stderrs = [w.stderr() for w in workers]
        for w in workers:
            w.stop()
        if refused(codes, stderrs):
            result.check("refused-or-once", True, "workers refused to start")
            result.note("workers refused: " + stderrs[0].strip().splitlines()[-1])
            return result
        entries = scene.ledger.entries()
        runs = sum(1 for e in entries if e.kind == "done" and e.uuid == uuid)
        overlap = overlapping_runs(entries, uuid)
        result.enqueued, result.executed_once, result.duplicated = 1, int(runs == 1), max(runs - 1, 0)
        result.check("refused-or-once", overlap == 0,
                     f"workers started (exit codes {codes}); the job ran {runs} times, {overlap} at once")
        result.note(f"workers started; ran {runs}x, {overlap} overlapping")
    return result


# -- fault 2: a stale worker withdraws the failed record of the worker that took over ---------------

def stale_worker_failure(quick: bool = True) -> Result:
    """Fault 2: worker A runs the last attempt of a job that ignores its interrupt and is frozen
    (SIGSTOP) past retry_after; worker B takes the job over and fails it for good (recorded);
    then A resumes and its watchdog fails the job too. Wanted: the job stays in the failed store."""
    from chaos.apps.jobs import Stubborn

    result = Result("stale-worker-failure")
    with Scene(result.scenario) as scene:
        target = make_target(scene, "redis", retry_after=3.0)
        [uuid] = scene.dispatch(target, [Stubborn(0, seconds=30, tries=1)])
        a = scene.worker(target, "--sleep", "0.1", "--timeout", "1", "--quiet", name="A")
        wait_until(lambda: scene.ledger.started(), 30, 0.01)
        a.signal(signal.SIGSTOP)
        time.sleep(target.retry_after + 0.3)
        b = scene.worker(target, "--stop-when-empty", "--sleep", "0.1", "--timeout", "1", "--quiet", name="B")
        b_code = b.wait(30)
        b_recorded = scene.failed(target).get(uuid)
        a.signal(signal.SIGCONT)
        a_code = a.wait(5)
        a.stop()
        failed = account(scene, target, result, [uuid], [], may_fail=[uuid])
        result.check("b-recorded", b_recorded is not None, f"B (exit {b_code}) recorded: {b_recorded!r}")
        result.note(f"B recorded it; after A resumed (exit {a_code}) the failed store holds "
                    f"{failed.get(uuid, 'nothing')!r}, the queue {result.stranded} jobs")
    return result


# -- fault 3: the acknowledgement runs inside the job's alarm ----------------------------------------

def ack_stall(how: str, quick: bool = True) -> Result:
    """Fault 3: Redis stalls right after a job finished (``blackhole``: the proxy drops everything;
    ``sigstop``: the server is frozen) for 3 s, longer than the worker's 1 s timeout. Wanted: the
    finished job is acknowledged once the server answers: it runs once, is not failed as timed
    out, and the worker stays up."""
    from chaos.apps.jobs import BlackholeAfterDone, FreezeServerAfterDone

    result = Result(f"ack-stall-{how}")
    with Scene(result.scenario) as scene:
        target = make_target(scene, "redis", retry_after=3.0)
        server: servers.RedisServer = scene.redis_server
        env = {}
        if how == "blackhole":
            proxy = scene.proxy(server.port)
            worker_target = dataclasses.replace(target, url=proxy.url())
            env["CHAOS_PROXY_CONTROL"] = proxy.control_address
            job: Work = BlackholeAfterDone(0, seconds=0.1, tries=3)
            stalled: Callable[[], bool] = lambda: proxy.mode == "blackhole"  # noqa: E731
        else:
            worker_target = target
            env["CHAOS_REDIS_PID"] = str(server.pid)
            job = FreezeServerAfterDone(0, seconds=0.1, tries=1)
            stalled = lambda: _process_state(server.pid) == "T"  # noqa: E731
        [uuid] = scene.dispatch(target, [job])
        a = scene.worker(worker_target, "--sleep", "0.1", "--timeout", "1", env=env, name="A")
        wait_until(stalled, 30, 0.01)
        time.sleep(3.0)
        if how == "blackhole":
            proxy.restore()
        else:
            server.thaw()
        # a second worker, straight to Redis, takes the job if it came back
        b = scene.worker(target, "--sleep", "0.1", "--timeout", "1", "--quiet", name="B")
        wait_until(lambda: scene.size(target) == 0, target.retry_after + 5)
        time.sleep(1.0)
        a_alive = a.alive()
        a_err = a.stderr()
        for w in (a, b):
            w.stop()
        entries = scene.ledger.entries()
        failed = account(scene, target, result, [uuid], [], may_fail=[])
        runs = sum(1 for e in entries if e.kind == "done" and e.uuid == uuid)
        hooks = sum(1 for e in entries if e.kind == "hook")
        result.check("once", runs == 1 and hooks == 0 and uuid not in failed,
                     f"the finished job ran {runs} times, failed() ran {hooks} times, failed record "
                     f"{failed.get(uuid)!r}")
        result.check("worker-alive", a_alive, "worker A exited: " + (a_err.strip().splitlines() or [""])[-1])
        result.note(f"ran {runs}x, failed() {hooks}x, record {failed.get(uuid, 'none')}, worker A "
                    + ("alive" if a_alive else "exited"))
    return result


def _process_state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "?"


# -- fault 4: a killed worker's job waits behind the whole backlog ----------------------------------

def requeue_behind_backlog(quick: bool = True) -> Result:
    """Fault 4: a worker is killed mid-job while a backlog of 10 s waits; the job must run again
    within retry_after + 2 s, not after the backlog."""
    result = Result("redis-requeue-behind-backlog")
    with Scene(result.scenario) as scene:
        target = make_target(scene, "redis", retry_after=3.0)
        [uuid] = scene.dispatch(target, [Work(0, seconds=0.8, tries=5)])
        a = scene.worker(target, "--sleep", "0.1", "--timeout", "1", "--quiet", name="A")
        wait_until(lambda: scene.ledger.started(), 30, 0.01)
        backlog = scene.dispatch(target, [Work(n, seconds=0.05, tries=5) for n in range(1, 201)])
        killed = time.monotonic()
        a.kill()
        scene.worker(target, "--sleep", "0.1", "--timeout", "1", "--quiet", name="B")
        limit = target.retry_after + 2.0
        wait_until(lambda: _first_start_after(scene, killed) < float("inf")
                   and any(e.uuid == uuid and e.kind == "start" and e.t > killed for e in scene.ledger.entries()),
                   limit + 1.0 if quick else 60)
        again = ledger_mod.first_start_after(scene.ledger.entries(), uuid, killed)
        backlog_done = len(scene.ledger.done() & set(backlog))
        recovery = float("inf") if again is None else again - killed
        result.enqueued = 1 + len(backlog)
        result.recovery = recovery
        shown = f"{recovery:.1f}s" if again is not None else f"more than {limit + 1:.0f}s"
        result.check("recovery", recovery <= limit,
                     f"the killed job ran again {shown} after the kill (limit {limit:.0f}s); "
                     f"{backlog_done} of {len(backlog)} backlog jobs ran first")
        result.note(f"ran again after {shown}; {backlog_done} backlog jobs ran before it")
    return result


# -- fault 6: a poison row at the head of a PostgreSQL queue ----------------------------------------

def pg_poison_head(quick: bool = True) -> Result:
    """Fault 6: the oldest row of a PostgreSQL queue has ``attempts`` at the integer maximum, so
    reserving it overflows. Wanted: that row goes to the failed store, the 20 jobs behind it run,
    and the workers stay up."""
    import sqlalchemy as sa

    result = Result("pg-poison-head")
    run_for = 6.0 if quick else 30.0
    with Scene(result.scenario) as scene:
        target = make_target(scene, "postgres")
        uuids = scene.dispatch(target, [Work(n, seconds=0.02, tries=3) for n in range(21)])
        poison, behind = uuids[0], uuids[1:]
        engine = sa.create_engine(target.url)
        with engine.begin() as conn:  # the fault: the head row's live attempt count at the maximum
            conn.execute(sa.text("UPDATE jobs SET attempts = 2147483647 WHERE uuid = :u"), {"u": poison})
        engine.dispose()
        pool = scene.worker(target, "--processes", "2", "--sleep", "0.1", "--timeout", "1", "--quiet")
        wait_until(settled(scene, target, behind), run_for, 0.1)
        exits = pool.stderr().count("exited with")
        pool.stop()
        failed = account(scene, target, result, uuids, [], may_fail=[poison])
        ran = len(scene.ledger.done() & set(behind))
        result.check("behind-ran", ran == len(behind), f"{ran} of the {len(behind)} jobs behind the poison row ran")
        result.check("poison-failed", poison in failed, f"the poison row in the failed store: {failed.get(poison)!r}")
        result.check("workers-stay-up", exits == 0, f"worker processes exited {exits} times in {run_for:.0f}s")
        result.note(f"{exits} worker exits in {run_for:.0f}s; {ran} of {len(behind)} jobs behind it ran")
    return result


# -- fault 7: clock skew on the SQL driver ---------------------------------------------------------

def clock_skew(driver: str, quick: bool = True) -> Result:
    """Fault 7: one of two workers has a clock 30 s ahead (``CHAOS_CLOCK_SKEW``). Wanted: no job
    runs twice (reservations stamped with the database server's clock)."""
    result = Result(f"clock-skew-{driver}")
    jobs = 12 if quick else 40
    with Scene(result.scenario) as scene:
        target = make_target(scene, driver, retry_after=4.0)
        uuids = scene.dispatch(target, [Work(n, seconds=0.6, tries=5) for n in range(jobs)])
        workers = [scene.worker(target, "--sleep", "0.1", "--timeout", "1.5", "--quiet", name="honest"),
                   scene.worker(target, "--sleep", "0.1", "--timeout", "1.5", "--quiet", name="ahead",
                                env={"CHAOS_CLOCK_SKEW": "30"})]
        drained(scene, target, uuids, result, timeout=60)
        for w in workers:
            w.stop()
        account(scene, target, result, uuids, [])
        entries = scene.ledger.entries()
        overlaps = sum(overlapping_runs(entries, u) for u in uuids)
        result.note(f"{result.duplicated} extra runs, {overlaps} of them while the first run was going on")
    return result


# -- fault 8: the failed store is down ------------------------------------------------------------

def failed_store_outage(quick: bool = True) -> Result:
    """Fault 8: the failed store (a separate Redis) is down for 4 s while jobs fail for good.
    Wanted: the workers stay up and each failed job is recorded, once the store is back, with its
    own exception (not "attempted too many times")."""
    from chaos.apps.jobs import Boom

    result = Result("failed-store-outage")
    with Scene(result.scenario) as scene:
        store = scene.redis(name="failed-store")
        target = dataclasses.replace(make_target(scene, "redis"), failed_url=store.url())
        store.stop()
        booms = scene.dispatch(target, [Boom(n, tries=1) for n in range(4)])
        works = scene.dispatch(target, [Work(n, seconds=0.05, tries=5) for n in range(4, 24)])
        pool = scene.worker(target, "--processes", "2", "--sleep", "0.1", "--timeout", "1", "--quiet")
        wait_until(lambda: len({e.uuid for e in scene.ledger.entries() if e.uuid in booms}) == len(booms), 30)
        time.sleep(3.0)
        store.start()
        drained(scene, target, booms + works, result, timeout=20, must_finish=works)
        exits = pool.stderr().count("exited with")
        pool.stop()
        failed = account(scene, target, result, booms + works, [], may_fail=booms)
        real = [u for u in booms if failed.get(u, "").startswith("ValueError: boom")]
        result.check("real-exception", len(real) == len(booms),
                     f"{len(real)} of {len(booms)} failed jobs recorded with their own exception; the others: "
                     f"{sorted({failed.get(u, 'no record')[:60] for u in booms if u not in real})}")
        result.check("workers-stay-up", exits == 0, f"worker processes exited {exits} times")
        result.note(f"{exits} worker exits; {len(real)} of {len(booms)} recorded with their own exception")
    return result


# -- fault 9: NaN and Infinity in payloads --------------------------------------------------------

def nan_payloads(quick: bool = True) -> Result:
    """Fault 9: NaN and Infinity are not JSON. Wanted: ``dispatch`` refuses them, and a worker
    fails a raw payload holding them (failed store) instead of running it."""
    result = Result("nan-payloads")
    with Scene(result.scenario) as scene:
        target = make_target(scene, "redis")
        target.configure()
        refusals = []
        for value in (float("nan"), float("inf")):
            try:
                scene.dispatch(target, [Work(0, seconds=0, tries=1, value=value)])
                refusals.append(f"{value}: accepted")
            except eventbus.EventBusError as exc:
                refusals.append(f"{value}: refused")
                result.note(f"dispatch refused {value}: {exc}")
        target.configure()
        eventbus.connection("chaos").clear()
        raws = [raw_payload(Work, {"n": i, "seconds": 0, "tries": 1, "value": v}, tries=1)
                for i, v in enumerate((float("nan"), float("inf"), float("-inf")))]
        for _, raw in raws:
            push_raw(target, raw)
        uuids = [u for u, _ in raws]
        w = scene.worker(target, "--stop-when-empty", "--sleep", "0.1", "--timeout", "1", "--quiet")
        code = w.wait(30)
        failed = account(scene, target, result, uuids, [], may_fail=uuids)
        ran = len(scene.ledger.started() & set(uuids))
        result.check("dispatch-refuses", all(r.endswith("refused") for r in refusals), "; ".join(refusals))
        result.check("worker-refuses", ran == 0 and all(u in failed for u in uuids),
                     f"{ran} of {len(uuids)} raw NaN/Infinity payloads ran; {len(failed)} in the failed store")
        result.note(f"dispatch: {'; '.join(refusals)}; worker (exit {code}) ran {ran} of {len(uuids)} raw ones")
    return result


# -- the frozen worker, and fault 10 ----------------------------------------------------------------

def frozen_worker(quick: bool = True) -> Result:
    """A worker is frozen (SIGSTOP) mid-job past retry_after; another worker takes the job over;
    then the frozen one resumes (SIGCONT) with its alarm and watchdog overdue while jobs wait.
    Wanted: nothing lost, no job run more than once beyond the frozen one, nothing stranded."""
    result = Result("frozen-worker")
    rounds = 1 if quick else 6
    with Scene(result.scenario) as scene:
        target = make_target(scene, "redis", retry_after=3.0)
        b = scene.worker(target, "--sleep", "0.1", "--timeout", "1", "--quiet", name="B")
        uuids: list[str] = []
        faults: list[Fault] = []
        exits = 0
        for r in range(rounds):
            b.signal(signal.SIGSTOP)  # B waits until A is frozen
            a = scene.worker(target, "--sleep", "0.1", "--timeout", "1", "--quiet", name=f"A{r}")
            [head] = scene.dispatch(target, [Work(1000 * r, seconds=0.8, tries=3)])
            uuids.append(head)
            wait_until(lambda: head in scene.ledger.started(), 30, 0.01)
            a.signal(signal.SIGSTOP)
            faults.append((time.monotonic(), {head}))
            time.sleep(target.retry_after + 0.5)
            b.signal(signal.SIGCONT)  # B takes the frozen job over
            wait_until(lambda: scene.size(target) == 0, target.retry_after + 5, 0.02)
            b.signal(signal.SIGSTOP)
            backlog = scene.dispatch(target, [Work(1000 * r + n, seconds=0.1, tries=3) for n in range(1, 7)])
            uuids += backlog
            a.signal(signal.SIGCONT)
            time.sleep(0.3)
            b.signal(signal.SIGCONT)
            wait_until(settled(scene, target, backlog), 2 * target.retry_after + 5)
            a.wait(2)
            exits += 0 if a.alive() else 1
            a.stop()
        b.stop()
        account(scene, target, result, uuids, faults)
        result.recovery = ledger_mod.recovery(scene.ledger.entries(), faults)
        result.note(f"{rounds} freezes past retry_after; {exits} resumed workers exited")
    return result


def resumed_worker_exit(quick: bool = True) -> Result:
    """Fault 10: worker A is frozen (SIGSTOP) for 2.5 s in the last attempt of a job that ignores
    its interrupt: past its timeout and grace (2 s), not past retry_after (3 s). On SIGCONT the
    job comes to its end and the main loop pops the next waiting job, while the watchdog, overdue,
    fails the old one (its failed() hook takes 0.5 s) and exits the process. Wanted: the exiting
    worker releases what it holds first, so all twelve waiting jobs are done within 2 s of the
    resume (a job left reserved waits for retry_after)."""
    from chaos.apps.jobs import Stubborn

    result = Result("resumed-worker-exit")
    rounds = 1 if quick else 4
    with Scene(result.scenario) as scene:
        target = make_target(scene, "redis", retry_after=3.0)
        uuids: list[str] = []
        heads: list[str] = []
        late: list[float] = []
        held = 0
        for r in range(rounds):
            a = scene.worker(target, "--sleep", "0.1", "--timeout", "1", "--quiet", name=f"A{r}")
            [head] = scene.dispatch(target, [Stubborn(1000 * r, seconds=2.55, tries=1, hook_seconds=0.5)])
            wait_until(lambda: head in scene.ledger.started(), 30, 0.01)
            a.signal(signal.SIGSTOP)
            backlog = scene.dispatch(target, [Work(1000 * r + n, seconds=0.1, tries=3) for n in range(1, 13)])
            heads.append(head)
            uuids += [head] + backlog
            time.sleep(2.5)
            resumed = time.monotonic()
            a.signal(signal.SIGCONT)
            b = scene.worker(target, "--sleep", "0.1", "--timeout", "1", "--quiet", name=f"B{r}")
            wait_until(settled(scene, target, backlog), target.retry_after + 5)
            entries = scene.ledger.entries()
            finished = {(e.uuid, e.attempt, e.pid) for e in entries if e.kind == "done"}
            done_at = {e.uuid: e.t for e in entries if e.kind == "done" and e.t > resumed}
            late.append(max(done_at.get(u, float("inf")) - resumed for u in backlog))
            held += sum(1 for e in entries if e.kind == "start" and e.pid == a.pid and e.uuid in backlog
                        and (e.uuid, e.attempt, e.pid) not in finished)
            for w in (a, b):
                w.stop()
        account(scene, target, result, uuids, [], may_fail=heads)
        worst = max(late)
        result.recovery = worst
        result.check("released-before-exit", worst <= 2.0,
                     f"the last waiting job was done {worst:.1f}s after the resume (limit 2s); {held} waiting "
                     "jobs had been popped by the resumed worker when it exited")
        result.note(f"{held} jobs held by the exiting worker; last waiting job done "
                    f"{', '.join(f'{x:.1f}s' for x in late)} after resume")
    return result


# -- fault 11: no persistence, no warning ---------------------------------------------------------

def persistence_warning(quick: bool = True) -> Result:
    """Fault 11: ``eventbus work`` on a Redis without persistence must warn at start (and must
    not warn when the append-only file is on)."""
    import re

    result = Result("redis-persistence-warning")
    warns = re.compile(r"persist|appendonly|\bAOF\b", re.IGNORECASE)
    with Scene(result.scenario) as scene:
        seen = {}
        for aof in (False, True):
            server = scene.redis(aof=aof, name=f"redis-aof-{aof}")
            target = Target("redis", server.url())
            w = scene.worker(target, "--stop-when-empty", "--sleep", "0.1", "--timeout", "1", name=f"aof-{aof}")
            w.wait(30)
            seen[aof] = [line for line in w.stderr().splitlines() if warns.search(line)]
        result.check("warns-without-persistence", bool(seen[False]),
                     f"stderr lines about persistence without AOF: {seen[False]}")
        result.check("quiet-with-aof", not seen[True], f"stderr lines about persistence with AOF: {seen[True]}")
        result.note(f"without persistence: {seen[False] or 'no warning'}")
    return result


# -- jobs that ignore the timeout interrupt -------------------------------------------------------

def stubborn_timeouts(quick: bool = True) -> Result:
    """Jobs that swallow their timeout interrupt among ordinary jobs, ``--processes 2``: the
    watchdog records each attempt (released, then failed "timed out") and the worker exits and is
    replaced; nothing is lost, the ordinary jobs run once, a stubborn job never runs twice at once."""
    from chaos.apps.jobs import Stubborn

    result = Result("stubborn-timeouts")
    count = 2 if quick else 6
    with Scene(result.scenario) as scene:
        target = make_target(scene, "redis", retry_after=3.0)
        stubborn = scene.dispatch(target, [Stubborn(n, seconds=2.5, tries=2) for n in range(count)])
        works = scene.dispatch(target, [Work(n, seconds=0.05, tries=3) for n in range(100, 130)])
        pool = scene.worker(target, "--processes", "2", "--sleep", "0.1", "--timeout", "1", "--quiet")
        drained(scene, target, works + stubborn, result, timeout=60, must_finish=works)
        exits = pool.stderr().count("exited with")
        pool.stop()
        failed = account(scene, target, result, works + stubborn, [], may_fail=stubborn)
        entries = scene.ledger.entries()
        timed_out = [u for u in stubborn if "timed out" in failed.get(u, "")]
        overlaps = sum(overlapping_runs(entries, u, longest=2.0) for u in stubborn)  # timeout 1 + grace 1
        attempts = sum(1 for e in entries if e.kind == "start" and e.uuid in stubborn)
        result.check("timed-out-recorded", len(timed_out) == len(stubborn),
                     f"{len(timed_out)} of {len(stubborn)} stubborn jobs failed as timed out: "
                     f"{[failed.get(u) for u in stubborn]}")
        result.check("never-at-once", overlaps == 0, f"{overlaps} stubborn attempts overlapped")
        result.check("all-attempts", attempts == 2 * len(stubborn), f"{attempts} stubborn attempts (tries 2 each)")
        result.note(f"{attempts} stubborn attempts, {exits} worker exits, {len(timed_out)} failed as timed out")
    return result


# -- poison at the head of the queue (Redis, SQLite) --------------------------------------------------

def poison_head(driver: str, quick: bool = True) -> Result:
    """A payload that is not JSON and one naming ``os.system`` sit at the head of the queue, ordinary
    jobs behind them: the poison goes to the failed store and the worker goes on."""
    import json

    result = Result(f"poison-head-{driver}")
    with Scene(result.scenario) as scene:
        target = make_target(scene, driver)
        _, evil = raw_payload(Work, {"n": 0})
        evil_doc = json.loads(evil)
        evil_doc["data"]["commandName"] = "os.system"
        target.configure()
        queue = eventbus.connection("chaos")
        queue.push_raw("this is not json {")
        queue.push_raw(json.dumps(evil_doc))
        works = scene.dispatch(target, [Work(n, seconds=0.01, tries=3) for n in range(1, 21)])
        w = scene.worker(target, "--stop-when-empty", "--sleep", "0.1", "--timeout", "1", "--quiet")
        code = w.wait(30)
        failed = account(scene, target, result, works, [])
        ran = len(scene.ledger.done() & set(works))
        result.check("poison-failed", len(failed) == 2 and evil_doc["uuid"] in failed,
                     f"{len(failed)} failed records: {sorted(failed.values())}")
        result.check("worker-went-on", code == 0 and ran == len(works), f"exit {code}; {ran} of {len(works)} ran")
        result.note(f"{len(failed)} poison records; {ran} of {len(works)} jobs behind them ran")
    return result


# -- the catalogue ----------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Scenario:
    name: str
    run: Callable[[bool], Result]
    fault: int | str | None = None  # the fault this scenario reproduces, if any ("27.5": issue 27)
    postgres: bool = False


CATALOGUE: list[Scenario] = [
    Scenario("sigkill-storm-redis", lambda q: sigkill_storm("redis", q)),
    Scenario("sigkill-storm-sqlite", lambda q: sigkill_storm("sqlite", q)),
    Scenario("sigkill-storm-postgres", lambda q: sigkill_storm("postgres", q), postgres=True),
    Scenario("redis-kill9-aof", redis_kill9_aof),
    Scenario("redis-outage", redis_outage, fault=5),
    Scenario("connection-resets", connection_resets),
    Scenario("blackhole", blackhole),
    Scenario("redis-sigstop", server_sigstop),
    Scenario("pg-backend-termination", pg_backend_termination, postgres=True),
    Scenario("frozen-worker", frozen_worker),
    Scenario("stubborn-timeouts", stubborn_timeouts),
    Scenario("poison-head-redis", lambda q: poison_head("redis", q)),
    Scenario("poison-head-sqlite", lambda q: poison_head("sqlite", q)),
    Scenario("job-timeout-over-retry-after", job_timeout_over_retry_after, fault=1),
    Scenario("raw-timeout-over-retry-after", raw_timeout_over_retry_after, fault=1),
    Scenario("grace-over-retry-after", grace_over_retry_after, fault=1),
    Scenario("stale-worker-failure", stale_worker_failure, fault=2),
    Scenario("ack-stall-blackhole", lambda q: ack_stall("blackhole", q), fault=3),
    Scenario("ack-stall-sigstop", lambda q: ack_stall("sigstop", q), fault=3),
    Scenario("redis-requeue-behind-backlog", requeue_behind_backlog, fault=4),
    Scenario("pg-poison-head", pg_poison_head, fault=6, postgres=True),
    Scenario("clock-skew-sqlite", lambda q: clock_skew("sqlite", q), fault=7),
    Scenario("clock-skew-postgres", lambda q: clock_skew("postgres", q), fault=7, postgres=True),
    Scenario("failed-store-outage", failed_store_outage, fault=8),
    Scenario("nan-payloads", nan_payloads, fault=9),
    Scenario("resumed-worker-exit", resumed_worker_exit, fault=10),
    Scenario("redis-persistence-warning", persistence_warning, fault=11),
    *[Scenario(name, run) for name, run in scheduler_scenarios.SCENARIOS],
]


def _cluster_state(quick: bool) -> Result:
    from chaos.cluster_state import state_master_down  # imports this module: loaded on use

    return state_master_down(quick)


CATALOGUE.append(Scenario("cluster-state-master-down", _cluster_state))  # issue 27, defect 4

from chaos.batch_scenarios import BATCH_SCENARIOS  # noqa: E402 - they build on the helpers above

CATALOGUE += BATCH_SCENARIOS
BY_NAME = {s.name: s for s in CATALOGUE}
