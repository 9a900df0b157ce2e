"""BullMQ for Node on Redis, driven from Python: ``bullmq_node.js`` beside this file holds the job
and the worker; two ``node bullmq_node.js worker`` processes at BullMQ's default concurrency of 1.

The harness talks to one long-lived ``node bullmq_node.js client`` process over a pipe (a JSON
line per command), so node's start is not in the dispatch figures and each phase's call is one
line each way; the latency phase takes the moment node made its ``queue.add()``, not the pipe's.
bullmq is installed with npm into this peer's throwaway environment (``node/node_modules``),
never as a project dependency; it keeps completed jobs (``removeOnComplete`` defaults to false).
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

from peer_jobs._redis import RedisPeer

SCRIPT = pathlib.Path(__file__).with_suffix(".js")
NODE_MODULES = pathlib.Path(sys.prefix) / "node" / "node_modules"
os.environ["NODE_PATH"] = str(NODE_MODULES)  # for the client and the workers alike


def node() -> str:
    found = shutil.which("node")
    if found is None:
        raise RuntimeError("needs Node.js (node) on the PATH")
    return found


class Peer(RedisPeer):
    burst = False  # a BullMQ worker runs until closed
    bulk_api = "queue.addBulk(jobs)"
    workers = "2 x node Worker"
    default_setting = "concurrency 1"
    settings = {"concurrency 10": ("10",), "concurrency 50": ("50",)}

    def __init__(self) -> None:
        super().__init__()
        self.client = subprocess.Popen([node(), str(SCRIPT), "client"], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, text=True)

    def version(self) -> str:
        package = json.loads((NODE_MODULES / "bullmq" / "package.json").read_text())
        return f"{package['version']} (Node {subprocess.check_output([node(), '--version'], text=True).strip()})"

    def call(self, **command: Any) -> dict[str, Any]:
        assert self.client.stdin is not None and self.client.stdout is not None
        self.client.stdin.write(json.dumps(command) + "\n")
        self.client.stdin.flush()
        answer = self.client.stdout.readline()
        if not answer:
            raise RuntimeError(f"the node client exited ({self.client.wait()})")
        return dict(json.loads(answer))

    def dispatch(self, n: int) -> None:
        self.call(op="dispatch", n=n)

    def bulk(self, n: int) -> None:
        self.call(op="bulk", n=n)

    def enqueue_stamp(self) -> float:
        return float(self.call(op="stamp")["sent"])

    def worker_commands(self, processes: int, *, burst: bool,
                        setting: Sequence[str] | None = None) -> list[list[str]]:
        return [[node(), str(SCRIPT), "worker", *(setting or ())]] * processes

    def close(self) -> None:
        if self.client.stdin is not None:
            self.client.stdin.close()
        self.client.wait(timeout=30)
        super().close()
