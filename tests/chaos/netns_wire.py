"""The wire between the hosts of :mod:`chaos.netns`: a process that moves IP packets between TUN
devices, and delays, drops or loses them per direction on command.

The kernels of the hosts (network namespaces) see a real link: their TCP stacks send, time out,
retransmit and back off as over any network; only the link is played here. It does what
``tc netem`` would (delay, random loss) plus cuts, per direction, which this process can change
at once for every packet. It exists because ``tc netem`` needs the kernel's ``sch_netem``, which
is not everywhere (not on the kernel this suite was written on); a cut could be made with routes,
but delay and loss could not.

    python -m chaos.netns_wire NAME...     one TUN device per NAME, in this (the root) namespace

It prints ``ready`` once the devices exist (the caller then moves them into their namespaces and
gives them addresses); then it reads commands, one a line, and answers ``ok``:

    address NAME ADDRESS            packets for ADDRESS go to device NAME
    link SRC DST DROP DELAY LOSS    packets from address SRC to address DST: all dropped (DROP 1),
                                    else each delayed DELAY seconds and lost with probability LOSS
    stats                           answers ``ok moved=N dropped=N``
    quit

Packets that are not IPv4, or whose destination no device claims, are dropped.
"""

from __future__ import annotations

import fcntl
import heapq
import itertools
import os
import random
import selectors
import struct
import sys
import time

TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000


def open_tun(name: str) -> int:
    fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    return fd


class Wire:
    def __init__(self, names: list[str]) -> None:
        self.fds = {open_tun(name): name for name in names}
        self.by_address: dict[bytes, int] = {}
        self.rules: dict[tuple[bytes, bytes], tuple[bool, float, float]] = {}
        self.queue: list[tuple[float, int, int, bytes]] = []
        self.seq = itertools.count()
        self.moved = self.dropped = 0
        self.selector = selectors.DefaultSelector()
        for fd in self.fds:
            self.selector.register(fd, selectors.EVENT_READ)
        self.selector.register(sys.stdin, selectors.EVENT_READ)

    def run(self) -> None:
        print("ready", flush=True)
        while True:
            timeout = max(self.queue[0][0] - time.monotonic(), 0) if self.queue else None
            for key, _ in self.selector.select(timeout):
                if key.fileobj is sys.stdin:
                    if not self.command(sys.stdin.readline()):
                        return
                else:
                    self.receive(int(key.fd))  # type: ignore[arg-type]
            self.deliver()

    def receive(self, fd: int) -> None:
        for _ in range(64):  # what is there now, without starving the other devices
            try:
                packet = os.read(fd, 65536)
            except BlockingIOError:
                return
            except OSError:  # the device went away with its namespace
                self.selector.unregister(fd)
                return
            if len(packet) < 20 or packet[0] >> 4 != 4:
                self.dropped += 1
                continue
            source, target = packet[12:16], packet[16:20]
            out = self.by_address.get(target)
            drop, delay, loss = self.rules.get((source, target), (False, 0.0, 0.0))
            if out is None or drop or (loss and random.random() < loss):
                self.dropped += 1
                continue
            heapq.heappush(self.queue, (time.monotonic() + delay, next(self.seq), out, packet))

    def deliver(self) -> None:
        now = time.monotonic()
        while self.queue and self.queue[0][0] <= now:
            _, _, out, packet = heapq.heappop(self.queue)
            try:
                os.write(out, packet)
                self.moved += 1
            except OSError:  # the device is down (its namespace is going away)
                self.dropped += 1

    def command(self, line: str) -> bool:
        words = line.split()
        if not words or words[0] == "quit":
            return False
        if words[0] == "address":
            fd = next(fd for fd, name in self.fds.items() if name == words[1])
            self.by_address[bytes(int(x) for x in words[2].split("."))] = fd
            print("ok", flush=True)
        elif words[0] == "link":
            source, target = (bytes(int(x) for x in a.split(".")) for a in words[1:3])
            self.rules[(source, target)] = (words[3] == "1", float(words[4]), float(words[5]))
            print("ok", flush=True)
        elif words[0] == "stats":
            print(f"ok moved={self.moved} dropped={self.dropped}", flush=True)
        else:
            print(f"error unknown command {words[0]!r}", flush=True)
        return True


if __name__ == "__main__":
    Wire(sys.argv[1:]).run()
