"""How many processes each queue of a supervisor gets: pure arithmetic, no I/O.

``auto`` follows Horizon's auto-scaler. Each queue's *time to clear* is its backlog (ready jobs)
times its average runtime (a queue whose runtime is not known yet is counted at the average of
the others, or 1 s); a queue wants its share of the total time to clear times
``max_processes``, rounded up, and at least ``min_processes``; with nothing to clear every queue
wants ``min_processes``. The counts then move toward what is wanted by at most ``max_shift`` per
queue and change, the queues that want fewest first (so that what they give back is there for
the others), and never past ``max_processes`` in all. ``min_processes`` is kept by every queue,
even where that makes more than ``max_processes``.

``simple`` splits ``max_processes`` evenly over the queues (the first ones get what does not
divide), each queue at least one process.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

#: The runtime assumed for a queue while no queue's average runtime is known.
UNKNOWN_RUNTIME_S = 1.0


@dataclasses.dataclass(frozen=True)
class QueueLoad:
    """What the balancer knows of one queue: its ready jobs and their average runtime."""

    queue: str
    backlog: int
    avg_runtime_s: float | None = None


def times_to_clear(loads: Sequence[QueueLoad]) -> dict[str, float]:
    """Seconds each queue would take to clear with one process: backlog × average runtime."""
    known = [load.avg_runtime_s for load in loads if load.avg_runtime_s]
    assumed = sum(known) / len(known) if known else UNKNOWN_RUNTIME_S
    return {load.queue: max(load.backlog, 0) * (load.avg_runtime_s or assumed) for load in loads}


def wanted_processes(loads: Sequence[QueueLoad], *, min_processes: int, max_processes: int) -> dict[str, int]:
    """What each queue would have without the shift limit: its share of the time to clear."""
    clear = times_to_clear(loads)
    total = sum(clear.values())
    if total <= 0:
        return {queue: min_processes for queue in clear}
    return {queue: max(min_processes, math.ceil(seconds / total * max_processes))
            for queue, seconds in clear.items()}


def auto_counts(loads: Sequence[QueueLoad], current: Mapping[str, int], *, min_processes: int,
                max_processes: int, max_shift: int) -> dict[str, int]:
    """The process count of each queue after one ``auto`` balancing step (see the module)."""
    wanted = wanted_processes(loads, min_processes=min_processes, max_processes=max_processes)
    counts = {queue: current.get(queue, 0) for queue in wanted}
    for queue in sorted(wanted, key=lambda q: wanted[q]):
        have, want = counts[queue], wanted[queue]
        if want > have:
            room = max(max_processes - sum(counts.values()), 0)
            counts[queue] = min(have + min(room, max_shift), want)
        elif want < have:
            counts[queue] = max(have - max_shift, want)
        counts[queue] = max(counts[queue], min_processes)
    return counts


def simple_counts(queues: Sequence[str], max_processes: int) -> dict[str, int]:
    """``max_processes`` split evenly over ``queues``, the first ones taking the remainder."""
    share, extra = divmod(max_processes, len(queues))
    return {queue: max(share + (1 if i < extra else 0), 1) for i, queue in enumerate(queues)}
