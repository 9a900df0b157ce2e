"""An app whose supervised worker processes die at start (the supervisor itself imports it fine).

Each child appends the time it started to the file named by CRASH_LOG, then fails its import.
"""

from __future__ import annotations

import os
import sys
import time

if os.environ.get("EVENTBUS_SUPERVISOR_PID"):
    with open(os.environ["CRASH_LOG"], "a") as log:
        log.write(f"{sys.argv[sys.argv.index('--name') + 1]} {time.time()}\n")
    raise RuntimeError("this child cannot start")
