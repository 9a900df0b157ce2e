"""``eventbus work --processes N``: run and supervise N worker processes.

Each child runs the worker with the same options and the name ``NAME-i`` (``default-1`` ..
``default-N``). Where the system can fork, the supervisor imports the app once, closes what
eventbus connected meanwhile, and forks each child from itself, which then runs the worker at once
(no second interpreter, no second import). Otherwise (``--spawn``, ``EVENTBUS_WORKER_START=spawn``,
``--metrics-port``, whose server is a thread of the supervisor, or no ``os.fork``) each child is a
fresh ``python -m eventbus work``. After ``eventbus restart`` (a deploy) a forked child would run
the code the supervisor imported before it, so from then on the children are started afresh.

A child that exits is started again (a crash, the memory limit,
``--max-jobs``/``--max-time``, ``eventbus restart``), unless it was told to stop when empty or
after one job. A child that keeps dying soon after it started (a broken deploy, a server that
refuses it) is restarted with exponential backoff, 0.5 s doubling up to 60 s, so it neither spins
nor floods the logs; one that ran for a while is restarted at once. SIGTERM/SIGINT are forwarded
to every child; the supervisor waits for them to finish their current job and exits 0. A child
whose supervisor is killed outright notices and exits after its current job.

``eventbus supervise`` (:mod:`eventbus.supervising`) runs one :class:`Supervisor` per pool of
workers in its own loop (:meth:`~Supervisor.start`, :meth:`~Supervisor.tend`) and changes their
number with :meth:`~Supervisor.scale`.
"""

from __future__ import annotations

import atexit
import dataclasses
import logging
import os
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from types import FrameType
from typing import Protocol

log = logging.getLogger(__name__)

SUPERVISOR_PID_ENV = "EVENTBUS_SUPERVISOR_PID"
#: A child that exits sooner than this after its start counts as dying at start.
QUICK_EXIT_S = 10.0
FIRST_BACKOFF_S = 0.5
MAX_BACKOFF_S = 60.0
#: How a forked child tells its supervisor that it stopped for ``eventbus restart`` (never seen
#: outside: the supervisor counts it as a clean exit).
RESTART_EXIT = 75

_STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}

#: Runs the worker named by its argument in a forked child; returns the exit status.
Work = Callable[[str], int]


class Child(Protocol):
    """What the supervisor needs of a child: a started process (``subprocess.Popen``) or a fork."""

    pid: int

    def poll(self) -> int | None: ...

    def send_signal(self, signal: int) -> None: ...


class ForkedChild:
    """A child forked from the supervisor, with ``Popen``'s ``poll``/``send_signal``."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def send_signal(self, signal: int) -> None:
        if self.returncode is None:
            os.kill(self.pid, signal)


@dataclasses.dataclass
class Slot:
    """One of the N places a child runs in, with its restart history."""

    name: str
    child: Child | None = None
    started_at: float = 0.0
    quick_failures: int = 0
    start_after: float = 0.0
    #: Told to stop for good (:meth:`Supervisor.scale`): its slot goes once its child exited.
    retiring: bool = False

    def backoff(self) -> float:
        return min(FIRST_BACKOFF_S * 2.0 ** (self.quick_failures - 1), MAX_BACKOFF_S)


class Supervisor:
    def __init__(self, argv: Sequence[str], processes: int, *, restart: bool = True,
                 name: str = "default", env: Mapping[str, str] | None = None,
                 on_exit: Callable[[int], None] | None = None, work: Work | None = None) -> None:
        """``argv`` is the ``eventbus`` command a child runs when it is started afresh; with
        ``work`` each child is forked from this process instead and runs ``work(name)``.
        ``env`` is added to each child's environment; ``on_exit(pid)`` is told of each child
        that exited (the metrics exporter forgets its live gauges)."""
        self.argv = [sys.executable, "-m", "eventbus", *argv]
        self.work = work
        self.name = name
        self.slots = [Slot(f"{name}-{i}") for i in range(1, processes + 1)]
        self.restart = restart
        self.stopping = False
        self.env = dict(env or {})
        self.on_exit = on_exit

    @property
    def children(self) -> list[Child]:
        return [slot.child for slot in self.slots if slot.child is not None]

    @property
    def processes(self) -> int:
        """The children it keeps running (those told to stop for :meth:`scale` not counted)."""
        return sum(1 for slot in self.slots if not slot.retiring)

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self._on_stop)
        signal.signal(signal.SIGINT, self._on_stop)
        self.start()
        while self.busy():
            time.sleep(0.2)
            self.tend()
        return 0

    def start(self) -> None:
        """Start every child (:meth:`run` does; a caller that runs its own loop calls it once)."""
        for slot in self.slots:
            self._start(slot)

    def busy(self) -> bool:
        """Whether a child still runs or waits for its restart."""
        return any(slot.child is not None or slot.start_after for slot in self.slots)

    def tend(self) -> None:
        """One look at every child: notice those that exited, start the next ones that are due."""
        for slot in list(self.slots):
            self._tend(slot)

    def stop(self) -> None:
        """Tell every child to finish its current job and exit (SIGTERM); none is restarted."""
        self.stopping = True
        for child in self.children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)

    def scale(self, processes: int) -> None:
        """Keep ``processes`` children: start new ones, or tell the newest to finish their
        current job and exit (SIGTERM: a job in hand is never lost); they are not restarted."""
        if self.stopping:
            return
        kept = [slot for slot in self.slots if not slot.retiring]
        for slot in reversed(kept[processes:]):
            self._retire(slot)
        used = {slot.name for slot in self.slots}
        for _ in range(processes - len(kept)):
            number = next(i for i in range(1, len(used) + 2) if f"{self.name}-{i}" not in used)
            slot = Slot(f"{self.name}-{number}")
            used.add(slot.name)
            self.slots.append(slot)
            self._start(slot)

    def _retire(self, slot: Slot) -> None:
        slot.retiring = True
        if slot.child is None:  # waiting for its restart: nothing to stop
            self.slots.remove(slot)
        elif slot.child.poll() is None:
            slot.child.send_signal(signal.SIGTERM)

    def _tend(self, slot: Slot) -> None:
        """Notice an exited child; start the slot's next child once its backoff has passed."""
        if slot.child is None:
            if slot.start_after and not self.stopping and time.monotonic() >= slot.start_after:
                self._start(slot)
            elif self.stopping:
                slot.start_after = 0.0
            return
        code = slot.child.poll()
        if code is None:
            return
        pid, slot.child = slot.child.pid, None
        if self.on_exit is not None:
            self.on_exit(pid)
        if code == RESTART_EXIT:
            self._stop_forking()
            code = 0
        if slot.retiring:
            self.slots.remove(slot)
            return
        if self.stopping or (not self.restart and code == 0):
            return
        lived = time.monotonic() - slot.started_at
        slot.quick_failures = slot.quick_failures + 1 if code != 0 and lived < QUICK_EXIT_S else 0
        delay = slot.backoff() if slot.quick_failures else 0.0
        log.warning("worker %s (pid %s) exited with %s after %.1fs; restarting in %.1fs", slot.name,
                    pid, code, lived, delay)
        slot.start_after = time.monotonic() + delay

    def _stop_forking(self) -> None:
        """A child stopped for ``eventbus restart``: new code was deployed, which the app this
        process imported is not; every child from now on is started afresh."""
        if self.work is not None:
            log.info("restart signal: worker processes start afresh from now on (new code)")
            self.work = None

    def _start(self, slot: Slot) -> None:
        if self.work is not None:
            slot.child = self._fork(slot.name, self.work)
        else:  # the pid: a child whose supervisor was killed outright (SIGKILL, OOM) notices, exits
            env = {**os.environ, **self.env, SUPERVISOR_PID_ENV: str(os.getpid())}
            slot.child = subprocess.Popen([*self.argv, "--name", slot.name], env=env)
        slot.started_at = time.monotonic()
        slot.start_after = 0.0

    def _fork(self, name: str, work: Work) -> ForkedChild:
        """Fork a child that runs ``work(name)`` and exits with its status; never returns in it."""
        supervisor = os.getpid()
        for stream in (sys.stdout, sys.stderr):  # what is buffered would be written twice
            stream.flush()
        # Held until the child has its own handlers: the supervisor's must never run in it.
        signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
        try:
            pid = os.fork()
        except BaseException:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
            raise
        if pid:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
            return ForkedChild(pid)
        status = 1
        try:
            _become_child(supervisor, self.env)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
            status = work(name)
        except BaseException:  # noqa: BLE001 - the child must never return into the supervisor
            traceback.print_exc()
        finally:
            _exit_handlers()
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except (OSError, ValueError):
                    pass
            os._exit(status)

    def _on_stop(self, signum: int, frame: FrameType | None) -> None:
        self.stop()


def _become_child(supervisor: int, env: Mapping[str, str]) -> None:
    """Undo what the supervisor set up for itself: its signal handlers (the worker installs its
    own, as a worker started afresh does), and give the child the environment a child started
    afresh gets. ``random`` reseeds itself in a forked child, and the SQL pools and Redis
    connections drop what they inherited (``os.register_at_fork`` hooks)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.environ.update(env)
    os.environ[SUPERVISOR_PID_ENV] = str(supervisor)


def _exit_handlers() -> None:
    """Run the atexit handlers as an interpreter that exits does (a worker started afresh ran
    them): the app registered them at import, in the supervisor (an OpenTelemetry exporter's
    last flush). ``os._exit`` then skips them, and the rest of the supervisor's unwinding."""
    try:
        atexit._run_exitfuncs()
    except BaseException:  # noqa: BLE001 - the status stands whatever a handler does
        traceback.print_exc()
