"""Hosts in network namespaces: a Redis "host" and worker "hosts" joined by links the test cuts,
slows down or makes lossy.

Each host is a network namespace of its own (``ip netns add``, named with this process's id so
parallel runs never meet) holding one TUN device with an address in a private /24; the test
process gets a device and an address too, in its own namespace. The devices are joined by the
wire (:mod:`chaos.netns_wire`), a process that moves each packet to the device of its
destination after the delay, loss or cut set for that direction. Processes run on a host with
``ip netns exec``. :meth:`Network.close` stops the wire and deletes every namespace it made,
whatever happened before.

Where namespaces cannot be made (not root, no ``ip``, no ``/dev/net/tun``), :func:`why_not`
says why, and the scenarios are skipped with that reason.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import shutil
import subprocess
import sys
import time

from chaos.servers import RedisServer

TESTS = pathlib.Path(__file__).resolve().parent.parent
IP = shutil.which("ip") or "/usr/sbin/ip"


def why_not() -> str | None:
    """None when this process can build namespaces and TUN links, else the reason."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if not shutil.which("ip"):
        return "the ip command (iproute2) is not installed"
    if not os.path.exists("/dev/net/tun"):
        return "/dev/net/tun is missing"
    probe = f"ebprobe{os.getpid()}"
    made = subprocess.run([IP, "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"ip netns add failed: {made.stderr.strip()}"
    subprocess.run([IP, "netns", "del", probe], capture_output=True)
    return None


def _ip(*args: str) -> None:
    done = subprocess.run([IP, *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")


class Host:
    """One namespace and its address on the wire."""

    def __init__(self, network: Network, name: str, address: str, device: str) -> None:
        self.network = network
        self.name = name
        self.address = address
        self.device = device
        self.netns = f"eb{os.getpid()}{name}"

    def command(self, *args: str) -> list[str]:
        """``args`` run inside this host."""
        return [IP, "netns", "exec", self.netns, *args]


class Network:
    """The test's own address plus one host per name, all on one wire (see the module docstring)."""

    def __init__(self, directory: pathlib.Path, names: list[str]) -> None:
        subnet = f"10.{97 + os.getpid() // 250 % 3}.{os.getpid() % 250}"
        self.directory = directory
        tag = f"ebw{os.getpid() % 100000}"
        self.test_address = f"{subnet}.1"
        self.test_device = f"{tag}t"
        self.hosts = {name: Host(self, name, f"{subnet}.{i + 2}", f"{tag}{i}") for i, name in enumerate(names)}
        self.wire: subprocess.Popen[str] | None = None
        self._made: list[str] = []

    def __enter__(self) -> Network:
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> Network:
        devices = [self.test_device, *(h.device for h in self.hosts.values())]
        self.wire = subprocess.Popen([sys.executable, "-m", "chaos.netns_wire", *devices], cwd=TESTS,
                                     env={**os.environ, "PYTHONPATH": str(TESTS)}, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)
        assert self.wire.stdout is not None
        if self.wire.stdout.readline().strip() != "ready":
            raise RuntimeError("the wire did not start")
        _ip("addr", "add", f"{self.test_address}/24", "dev", self.test_device)
        _ip("link", "set", self.test_device, "up")
        self._tell(f"address {self.test_device} {self.test_address}")
        for host in self.hosts.values():
            _ip("netns", "add", host.netns)
            self._made.append(host.netns)
            _ip("link", "set", host.device, "netns", host.netns)
            _ip("-n", host.netns, "link", "set", "lo", "up")
            _ip("-n", host.netns, "addr", "add", f"{host.address}/24", "dev", host.device)
            _ip("-n", host.netns, "link", "set", host.device, "up")
            self._tell(f"address {host.device} {host.address}")
        return self

    def close(self) -> None:
        """Kill what still runs on the hosts, stop the wire (its devices go with it), delete the
        namespaces."""
        for netns in self._made:
            pids = subprocess.run([IP, "netns", "pids", netns], capture_output=True, text=True).stdout.split()
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(pid), 9)
        if self.wire is not None and self.wire.poll() is None:
            with contextlib.suppress(OSError, ValueError):
                self._tell("quit", answer=False)
            try:
                self.wire.wait(5)
            except subprocess.TimeoutExpired:
                self.wire.kill()
                self.wire.wait()
        for netns in self._made:
            subprocess.run([IP, "netns", "del", netns], capture_output=True)
        self._made.clear()

    def _tell(self, line: str, answer: bool = True) -> str:
        assert self.wire is not None and self.wire.stdin is not None and self.wire.stdout is not None
        self.wire.stdin.write(line + "\n")
        self.wire.stdin.flush()
        if not answer:
            return ""
        reply = self.wire.stdout.readline().strip()
        if not reply.startswith("ok"):
            raise RuntimeError(f"the wire refused {line!r}: {reply}")
        return reply

    # -- faults ---------------------------------------------------------------------------------
    def link(self, a: str, b: str, *, drop: bool = False, delay_s: float = 0.0, loss: float = 0.0,
             both: bool = True) -> None:
        """Set the link from host ``a`` to host ``b`` (and back, unless ``both`` is False); the
        test's own address is ``"test"``."""
        pairs = [(a, b), (b, a)] if both else [(a, b)]
        for x, y in pairs:
            self._tell(f"link {self._address(x)} {self._address(y)} {int(drop)} {delay_s} {loss}")

    def _address(self, name: str) -> str:
        return self.test_address if name == "test" else self.hosts[name].address

    def cut(self, a: str, b: str, *, both: bool = True) -> None:
        self.link(a, b, drop=True, both=both)

    def heal(self, a: str, b: str) -> None:
        self.link(a, b)

    def stats(self) -> str:
        return self._tell("stats")


class NetnsRedis(RedisServer):
    """A Redis server on a host of the network, listening on the host's address."""

    def __init__(self, directory: pathlib.Path, host: Host, *, aof: bool = True) -> None:
        super().__init__(directory, aof=aof, port=6379)
        self.host = host
        self.listen_host = host.address

    def command(self) -> list[str]:
        return self.host.command(*super().command())


def wait_answers(server: NetnsRedis, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not server.answers():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
