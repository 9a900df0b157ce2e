"""Batch scenarios (issue 27, defect 1): a batch must finish, and each of its callbacks be
pushed exactly once, whatever crashes between the writes that record its jobs' outcomes.

The crash sweeps are deterministic: crash point ``N`` is "right after the worker's N-th write to
batch state was answered" (counted below the library, :mod:`chaos.apps.batch_faults`). Each point
gets its own batch on its own queue and its own worker, armed for that point; every point runs
at once, then an unarmed worker finishes whatever the crashes left. Before the fix the points
fell between the separate writes of one outcome (``add ok`` / ``incr pending``), between claiming
``then``/``finally`` and pushing them, and after ``fail_job`` had deleted the job but before its
batch heard of it; after it they fall around one atomic step per outcome and the marks that
follow the callbacks' pushes.

What is judged, per batch, from the ledger and the batch itself (``eventbus.find_batch``):

- ``batches-finished``: every batch is finished;
- ``callbacks-ran``: each callback the outcome calls for (``then`` + ``finally`` when every job
  succeeded, ``catch`` + ``finally`` when one failed) ran, and no other did;
- ``callbacks-once``: no callback was pushed twice (a callback started twice as attempt 1; a
  second attempt after its own worker was killed is the at-least-once of any job, not a push).
"""

from __future__ import annotations

import collections
import dataclasses
import os
import random
import signal
import time
from collections.abc import Iterable, Sequence

import eventbus
from chaos import ledger as ledger_mod
from chaos.apps.batch_jobs import Callback, Member
from chaos.scenarios import Fault, Scenario, account, make_target
from chaos.scene import Result, Scene, Worker, wait_until
from chaos.target import Target

WORKER_ARGS = ("--sleep", "0.1", "--timeout", "1", "--quiet")
SUCCEEDED = frozenset({"then", "finally"})
FAILED = frozenset({"catch", "finally"})


@dataclasses.dataclass(frozen=True)
class Watched:
    """One batch of a scenario: where it lives, its number in the ledger, the callbacks it calls for."""

    target: Target
    ref: str
    number: str
    wanted: frozenset[str]


def dispatch_batch(target: Target, number: str, members: Sequence[Member], *, queue: str | None = None,
                   allow_failures: bool = False) -> eventbus.Batch:
    """A batch with a ``then``, a ``catch`` and a ``finally_`` callback, each a ledger job."""
    target.configure()
    pending = (eventbus.batch(list(members)).then(Callback(f"{number}:then"))
               .catch(Callback(f"{number}:catch")).finally_(Callback(f"{number}:finally"))
               .allow_failures(allow_failures))
    if queue:
        pending.on_queue(queue)
    return pending.dispatch()


def finished(watched: Watched) -> bool:
    watched.target.configure()
    try:
        found = eventbus.find_batch(watched.ref)
    except eventbus.EventBusError:
        return False  # its server is down for the moment
    return found is not None and found.finished


def callback_runs(entries: Iterable[ledger_mod.Entry]) -> dict[tuple[str, str], list[ledger_mod.Entry]]:
    """(batch number, kind) -> the callback's ledger entries."""
    found: dict[tuple[str, str], list[ledger_mod.Entry]] = collections.defaultdict(list)
    for e in entries:
        if ":" in e.n:
            number, kind = e.n.split(":", 1)
            found[number, kind].append(e)
    return found


def complete(scene: Scene, watched: Sequence[Watched]) -> bool:
    """Every batch finished and every callback it calls for done."""
    runs = callback_runs(scene.ledger.entries())
    if any(not any(e.kind == "done" for e in runs.get((w.number, kind), [])) for w in watched for kind in w.wanted):
        return False
    return all(finished(w) for w in watched)


def judge(scene: Scene, result: Result, watched: Sequence[Watched]) -> None:
    """The three batch checks (see the module docstring)."""
    runs = callback_runs(scene.ledger.entries())
    unfinished = [w.number for w in watched if not finished(w)]
    missing = [f"{w.number}:{k}" for w in watched for k in sorted(w.wanted)
               if not any(e.kind == "done" for e in runs.get((w.number, k), []))]
    numbers = {w.number: w for w in watched}
    unwanted = sorted(f"{n}:{k}" for (n, k) in runs if n in numbers and k not in numbers[n].wanted)
    twice = sorted(f"{n}:{k}" for (n, k), entries in runs.items()
                   if sum(1 for e in entries if e.kind == "start" and e.attempt == 1) > 1)
    result.check("batches-finished", not unfinished,
                 f"{len(unfinished)} of {len(watched)} batches never finished: {unfinished[:8]}")
    result.check("callbacks-ran", not missing and not unwanted,
                 f"{len(missing)} callbacks never ran {missing[:8]}; {len(unwanted)} ran unasked {unwanted[:8]}")
    result.check("callbacks-once", not twice, f"{len(twice)} callbacks pushed twice: {twice[:8]}")
    result.note(f"{len(watched) - len(unfinished)} of {len(watched)} batches finished, "
                f"{len(missing)} callbacks missing, {len(twice)} pushed twice")


def wait_for_batches(scene: Scene, watched: Sequence[Watched], result: Result, timeout: float) -> None:
    started = time.monotonic()
    ok = wait_until(lambda: complete(scene, watched), timeout, 0.2)
    took = time.monotonic() - started
    result.note(f"settled in {took:.1f}s" if ok else f"not settled after {timeout:.0f}s")


# -- the sweeps -----------------------------------------------------------------------------------

#: Enough crash points to pass every write the unfixed code made for one outcome (7 for a
#: success that finishes its batch, 8 for a failure); the last points crash nowhere and show
#: the scenario passes when nothing happens.
POINTS = range(1, 11)


def kill_sweep(path: str, driver: str, quick: bool = True) -> Result:
    """The worker recording the outcome of a one-job batch is SIGKILLed after its N-th batch
    write, for every N; an unarmed worker then finishes what is left (``retry_after`` 3 s)."""
    result = Result(f"batch-kill-{path}-{driver}")
    failing = path == "failure"
    with Scene(result.scenario) as scene:
        target = make_target(scene, driver, retry_after=3.0)
        watched = []
        for n in POINTS:
            batch = dispatch_batch(target, str(n), [Member(f"{n}.0", fail=failing, tries=1 if failing else 20)],
                                   queue=f"q{n}")
            watched.append(Watched(target, batch.ref, str(n), FAILED if failing else SUCCEEDED))
        armed = [scene.worker(target, "--queue", f"q{n}", "--stop-when-empty", *WORKER_ARGS,
                              env={"CHAOS_BATCH_FAULT": f"kill-worker@{n}"}, name=f"armed{n}") for n in POINTS]
        wait_until(lambda: not any(w.alive() for w in armed), 90, 0.1)
        killed = [w for w in armed if w.proc.returncode == -9]
        scene.worker(target, "--queue", ",".join(f"q{n}" for n in POINTS), *WORKER_ARGS, name="finisher")
        wait_for_batches(scene, watched, result, timeout=40)
        judge(scene, result, watched)
        result.check("crashes", len(killed) >= 3, f"only {len(killed)} crash points were reached")
        result.note(f"{len(killed)} of {len(POINTS)} crash points reached "
                    f"({', '.join(w.name for w in killed)})")
    return result


def redis_down_sweep(quick: bool = True) -> Result:
    """Redis (AOF, ``appendfsync always``) is killed -9 right after the worker's N-th batch
    write, for every N, and restarted a second later; the worker rides it out. One Redis and
    one worker per crash point, a success and a failure batch each."""
    result = Result("batch-redis-down")
    points = list(POINTS)[:8] if quick else list(POINTS)
    with Scene(result.scenario) as scene:
        watched: list[Watched] = []
        pairs = []
        for n in points:
            server = scene.redis(aof=True, name=f"redis{n}")
            target = Target("redis", server.url(), 3.0)
            ok = dispatch_batch(target, f"{n}ok", [Member(f"{n}ok.0")])
            bad = dispatch_batch(target, f"{n}bad", [Member(f"{n}bad.0", fail=True, tries=1)])
            watched += [Watched(target, ok.ref, f"{n}ok", SUCCEEDED), Watched(target, bad.ref, f"{n}bad", FAILED)]
            worker = scene.worker(target, *WORKER_ARGS, name=f"armed{n}",
                                  env={"CHAOS_BATCH_FAULT": f"kill-redis@{n}", "CHAOS_REDIS_PID": str(server.pid)})
            pairs.append((server, worker))
        deadline = time.monotonic() + 30
        restarts = 0
        while time.monotonic() < deadline and not complete_or_down(scene, watched, pairs):
            for server, _ in pairs:
                if server.proc is not None and server.proc.poll() is not None:
                    time.sleep(1.0)
                    server.start()
                    restarts += 1
            time.sleep(0.1)
        wait_for_batches(scene, watched, result, timeout=30)
        judge(scene, result, watched)
        exits = [w.name for _, w in pairs if not w.alive()]
        result.check("crashes", restarts >= 3, f"only {restarts} crash points were reached")
        result.check("workers-alive", not exits, f"workers exited: {exits}")
        result.note(f"{restarts} of {len(points)} Redis servers killed at their crash point")
    return result


def complete_or_down(scene: Scene, watched: Sequence[Watched], pairs: Sequence[tuple[object, Worker]]) -> bool:
    """Done waiting for crashes: every server answers and the batches are complete."""
    if any(s.proc is not None and s.proc.poll() is not None for s, _ in pairs):  # type: ignore[attr-defined]
        return False
    return complete(scene, watched)


def failed_hook_kill(driver: str, quick: bool = True) -> Result:
    """A batch job fails for good and its ``failed()`` hook takes 3 s; the worker is SIGKILLed
    in the middle of it. Another worker goes on with the batch's other job."""
    result = Result(f"batch-kill-failed-hook-{driver}")
    with Scene(result.scenario) as scene:
        target = make_target(scene, driver, retry_after=3.0)
        batch = dispatch_batch(target, "1", [Member("1.0", fail=True, tries=1, hook_seconds=3.0), Member("1.1")])
        watched = [Watched(target, batch.ref, "1", FAILED)]
        first = scene.worker(target, *WORKER_ARGS, "--prefetch", "1", name="hooked")
        in_hook = wait_until(lambda: any(e.kind == "hook" for e in scene.ledger.entries()), 30, 0.02)
        time.sleep(0.5)
        first.kill()
        scene.worker(target, *WORKER_ARGS, name="finisher")
        wait_for_batches(scene, watched, result, timeout=20)
        judge(scene, result, watched)
        result.check("killed-in-hook", in_hook and not any(e.kind == "hooked" for e in scene.ledger.entries()),
                     "the worker was not killed inside the failed() hook")
        failed = scene.failed(target)
        result.check("failure-recorded", len(failed) == 1, f"{len(failed)} failed records (wanted the one job)")
    return result


# -- the storm --------------------------------------------------------------------------------------

def storm(quick: bool = True) -> Result:
    """Many batches drain through ``--processes 4`` while random children are SIGKILLed and the
    Redis server (AOF) is killed -9 and restarted. Every fifth batch has a job that fails for good
    (its batch allows failures). Wanted: every batch finished, every callback once, and the
    standard checks for the jobs."""
    result = Result("batch-storm")
    batches, size, kills, redis_kills = (30, 4, 6, 1) if quick else (400, 5, 30, 3)
    rng = random.Random(27)
    with Scene(result.scenario) as scene:
        target = make_target(scene, "redis", retry_after=3.0, aof=True)
        server = scene.redis_server
        watched, boom_numbers = [], []
        for b in range(batches):
            fails = b % 5 == 4
            members = [Member(f"{b}.{i}", seconds=0.05, tries=1 if fails and i == 0 else 100, fail=fails and i == 0)
                       for i in range(size)]
            batch = dispatch_batch(target, str(b), members, allow_failures=True)
            watched.append(Watched(target, batch.ref, str(b), FAILED if fails else SUCCEEDED))
            if fails:
                boom_numbers.append(f"{b}.0")
        pool = scene.worker(target, "--processes", "4", *WORKER_ARGS)
        wait_until(lambda: len(scene.ledger.started()) >= 4, 30)
        faults: list[Fault] = []
        redis_at = sorted(rng.sample(range(kills), redis_kills))
        for k in range(kills):
            time.sleep(rng.uniform(0.3, 0.8))
            at = time.monotonic()
            if k in redis_at:
                server.kill()
                faults.append((at, ledger_mod.in_flight(scene.ledger.entries(), at)))
                time.sleep(1.0)
                server.start()
                continue
            children = pool.children()
            if children:
                victim = rng.choice(children)
                try:
                    os.kill(victim, signal.SIGKILL)
                except ProcessLookupError:
                    continue
                faults.append((at, ledger_mod.in_flight(scene.ledger.entries(), at, [victim])))
        wait_for_batches(scene, watched, result, timeout=90 if quick else 400)
        pool.stop()
        judge(scene, result, watched)
        entries = scene.ledger.entries()
        members = {e.uuid for e in entries if "." in e.n and ":" not in e.n}
        booms = {e.uuid for e in entries if e.n in boom_numbers}
        account(scene, target, result, sorted(members), faults, may_fail=booms)
        # a job that fails for good on purpose never starts again: not a wait for recovery
        result.recovery = ledger_mod.recovery(entries, [(at, caught - booms) for at, caught in faults])
        result.note(f"{len(faults)} faults ({redis_kills} Redis kill -9) over {batches} batches of {size}")
    return result


#: Added to the chaos catalogue (``chaos.scenarios.CATALOGUE``).
BATCH_SCENARIOS = [
    Scenario("batch-kill-success-redis", lambda q: kill_sweep("success", "redis", q)),
    Scenario("batch-kill-success-sqlite", lambda q: kill_sweep("success", "sqlite", q)),
    Scenario("batch-kill-failure-redis", lambda q: kill_sweep("failure", "redis", q)),
    Scenario("batch-kill-failure-sqlite", lambda q: kill_sweep("failure", "sqlite", q)),
    Scenario("batch-kill-failed-hook-redis", lambda q: failed_hook_kill("redis", q)),
    Scenario("batch-kill-failed-hook-sqlite", lambda q: failed_hook_kill("sqlite", q)),
    Scenario("batch-redis-down", redis_down_sweep),
    Scenario("batch-storm", storm),
]
