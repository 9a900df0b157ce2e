"""Scheduler scenarios (issue 27, points 2 and 3): ``eventbus schedule work`` processes killed at
chosen points and a Redis outage under a running scheduler, each on its own redis-server.

- ``schedule-overlap-crash``: a ``without_overlapping()`` entry whose scheduler is SIGKILLed
  between taking the lock and pushing, twice: before it claimed the instant (its restart must
  fire that instant at once) and after (the lock must expire in minutes, a log line and
  ``schedule list`` must show it; the full tier waits for the runs to resume).
- ``schedule-work-outage``: Redis stopped across minute boundaries under ``schedule work``
  (2 s once; full tier 10 s three times): the scheduler stays up, logs, and fires every
  instant once when Redis is back.

The scheduler's ``--now`` clock starts just before a minute boundary so a scenario meets the
boundary within seconds; instants are what that clock says, the lock TTLs are Redis's own.
"""

from __future__ import annotations

import pathlib
import signal
import subprocess
import sys
import time
from collections.abc import Callable

from chaos.scene import Result, Scene, Worker, wait_until
from chaos.target import Target

SCHEDULED_APP = "chaos.apps.scheduled"
#: The longest a ``without_overlapping()`` lock may live by default: minutes, not a day.
MAX_DEFAULT_LOCK_S = 15 * 60


class SchedulerProcess(Worker):
    """``eventbus schedule work`` (or another ``schedule`` command) with its output in files."""

    def __init__(self, args: list[str], env: dict[str, str], directory: pathlib.Path, name: str) -> None:
        self.name = name
        self.out_path = directory / f"{name}.out"
        self.err_path = directory / f"{name}.err"
        with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen([sys.executable, "-m", "eventbus", "schedule", *args,
                                          "--app", SCHEDULED_APP], env=env, cwd=directory, stdout=out,
                                         stderr=err, start_new_session=True)
        self.started_at = time.monotonic()


def scheduler(scene: Scene, target: Target, case: str, now: str, *, kill_at: str = "",
              name: str = "") -> SchedulerProcess:
    env = scene.env(target, CHAOS_SCHEDULE=case, CHAOS_SCHEDULE_KILL_AT=kill_at,
                    CHAOS_SCHEDULE_KILL_FILE=str(scene.dir / f"kill-{case}"))
    if kill_at:
        (scene.dir / f"kill-{case}").touch()
    proc = SchedulerProcess(["work", "--now", now], env, scene.dir, name or f"scheduler{len(scene.workers)}")
    scene.workers.append(proc)
    return proc


def schedule_cli(scene: Scene, target: Target, case: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = scene.env(target, CHAOS_SCHEDULE=case)
    return subprocess.run([sys.executable, "-m", "eventbus", "schedule", *args, "--app", SCHEDULED_APP],
                          env=env, cwd=scene.dir, capture_output=True, text=True, timeout=60)


def runs_of(scene: Scene, n: int) -> list[str]:
    return [e.uuid for e in scene.ledger.entries() if e.kind == "done" and e.n == str(n)]


def overlap_locks(target: Target) -> dict[str, float]:
    """Each overlap lock key in Redis and its seconds to live."""
    import redis

    client = redis.Redis.from_url(target.url)
    try:
        keys = [k for k in client.scan_iter(match="*schedule-overlap:*") if not k.endswith(b":taken")]
        return {k.decode(): client.pttl(k) / 1000 for k in keys}
    finally:
        client.close()


def overlap_crash(quick: bool = True) -> Result:
    """A ``without_overlapping()`` entry's scheduler SIGKILLed between taking the lock and pushing."""
    result = Result("schedule-overlap-crash")
    with Scene(result.scenario) as scene:
        target = Target("redis", scene.redis(aof=True).url(), 3.0)
        scene.worker(target, "--sleep", "0.1", "--timeout", "1", "--quiet")
        # a: killed after taking the lock, before claiming the instant
        first = scheduler(scene, target, "overlap-a", "2026-11-23T10:00:57", kill_at="claim")
        died = first.wait(20)
        a_locks = overlap_locks(target)
        scheduler(scene, target, "overlap-a", "2026-11-23T10:01:05")
        back = time.monotonic()
        wait_until(lambda: runs_of(scene, 1), 15)
        recovered = time.monotonic() - back if runs_of(scene, 1) else float("inf")
        result.recovery = recovered
        result.check("killed", died == -signal.SIGKILL, f"the first scheduler exited {died} (SIGKILL expected)")
        result.check("same-instant-recovered", recovered <= 10,
                     f"the restarted scheduler ran the instant its predecessor died in within "
                     f"{recovered:.1f}s (at most 10 s); runs: {len(runs_of(scene, 1))}")
        # b: killed after claiming the instant, before pushing
        second = scheduler(scene, target, "overlap-b", "2026-11-23T10:00:57", kill_at="push")
        died_b = second.wait(20)
        restarted = scheduler(scene, target, "overlap-b", "2026-11-23T10:01:05")
        wait_until(lambda: "lock" in restarted.stderr(), 15)
        b_locks = {k: v for k, v in overlap_locks(target).items() if k.endswith("overlap-b")}
        listed = schedule_cli(scene, target, "overlap-b", "list")
        ttls = list(a_locks.values()) + list(b_locks.values())
        result.check("killed-b", died_b == -signal.SIGKILL, f"the second scheduler exited {died_b}")
        result.check("lock-ttl", bool(b_locks) and all(0 < t <= MAX_DEFAULT_LOCK_S for t in ttls),
                     f"the orphaned locks live minutes, not a day: {', '.join(f'{t:.0f}s' for t in ttls) or 'none'}")
        result.check("log-line", "still holds its lock" in restarted.stderr(),
                     "the restarted scheduler logs that the previous run holds the lock: "
                     f"{restarted.stderr().strip().splitlines()[-1:] or 'nothing'}")
        result.check("list-shows-lock", "held by" in listed.stdout,
                     f"`schedule list` shows the held lock: {listed.stdout.strip() or listed.stderr.strip()}")
        note = (f"locks left by the kills: {', '.join(f'{t:.0f}s' for t in ttls)}; "
                f"same instant run {recovered:.1f}s after the restart")
        if not quick:
            expiry = max(b_locks.values(), default=0)
            waited = time.monotonic()
            resumed = wait_until(lambda: runs_of(scene, 2), expiry + 90, interval=1)
            result.check("resumes-after-expiry", resumed,
                         f"overlap-b ran again within {expiry + 90:.0f}s (its lock's life plus a minute)")
            note += f"; overlap-b ran again {time.monotonic() - waited:.0f}s later" if resumed else ""
        result.note(note)
    return result


def work_outage(quick: bool = True) -> Result:
    """Redis stopped across minute boundaries under ``schedule work``."""
    result = Result("schedule-work-outage")
    outage, rounds = (2.0, 1) if quick else (10.0, 3)
    with Scene(result.scenario) as scene:
        target = Target("redis", scene.redis(aof=True).url(), 3.0)
        server = scene.redis_server
        proc = scheduler(scene, target, "minutely", "2026-11-23T10:00:56")
        wait_until(lambda: "Scheduler running" in proc.stdout(), 30)  # printed as its clock starts
        boundary = time.monotonic() + 4  # when its clock reaches 10:01:00
        alive = []
        for n in range(rounds):
            at = boundary + 60 * n
            time.sleep(max(at - outage / 2 - time.monotonic(), 0))
            server.stop()
            time.sleep(outage)
            server.start()
            alive.append(proc.alive())
        instants = rounds + 1  # 10:00 (due when it started) and one per boundary
        delivered: Callable[[], bool] = lambda: _size(target) >= instants  # noqa: E731
        wait_until(delivered, 20)
        still = proc.alive()
        code = proc.stop()
        drain = scene.worker(target, "--stop-when-empty", "--sleep", "0.1", "--timeout", "1", "--quiet")
        drain.wait(60)
        runs = runs_of(scene, 3)
        err = proc.stderr()
        result.enqueued, result.executed_once = instants, len(set(runs))
        result.duplicated = len(runs) - len(set(runs))
        result.lost = max(instants - len(set(runs)), 0)
        result.check("alive", all(alive) and still, f"schedule work alive after each outage: {alive + [still]}")
        result.check("exit", code == 0, f"SIGTERM afterwards: exit {code}")
        result.check("logged", "tries again" in err, "a log line says the scheduler waits for Redis")
        result.check("no-traceback", "Traceback" not in err, err[-300:])
        result.check("instants", sorted(set(runs)) == sorted(runs) and len(runs) == instants,
                     f"{len(runs)} runs, {len(set(runs))} distinct, {instants} instants expected")
        result.note(f"{rounds} outage(s) of {outage:.0f}s across minute boundaries")
    return result


def _size(target: Target) -> int:
    import eventbus
    from chaos.target import CONNECTION

    target.configure()
    try:
        return int(eventbus.connection(CONNECTION).size())
    except eventbus.EventBusError:
        return 0


#: (name, scenario) pairs for the catalogue in :mod:`chaos.scenarios`.
SCENARIOS: list[tuple[str, Callable[[bool], Result]]] = [
    ("schedule-overlap-crash", overlap_crash),
    ("schedule-work-outage", work_outage),
]
