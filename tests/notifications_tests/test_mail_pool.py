"""The SMTP transport's connection pool, against a real SMTP server (aiosmtpd) that counts connections.

Concurrent sends on one event loop use up to ``pool`` connections; every message arrives once;
a connection the server dropped is replaced; a broken one is never reused; event loops never
share a connection, and a loop's connections close when it ends.
"""

from __future__ import annotations

import asyncio
import collections
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

import eventbus
from helpers import wait_for
from notifications import DeliveryError, MailMessage
from notifications.mail import SmtpTransport, transport_from_url
from notifications.mail.mime import build_email
from notifications.mail.smtp import DEFAULT_POOL, SmtpSettings


def smtp(port: int, options: str = "") -> SmtpTransport:
    transport = transport_from_url(f"smtp://127.0.0.1:{port}{options}")
    assert isinstance(transport, SmtpTransport)
    return transport


def mail(n: int, to: str = "ada@example.com", loop_name: str = "main") -> Any:
    return build_email(MailMessage(subject=f"message {n}").header("X-Loop", loop_name), to, "shop@example.com")


def subjects(inbox: Any) -> list[str]:
    return sorted((m["Subject"] for m in inbox.messages), key=lambda s: int(s.split()[1]))


def run(main: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(main())  # type: ignore[arg-type]


def test_concurrent_sends_on_one_loop_use_up_to_pool_connections(smtp_server: tuple) -> None:
    inbox, port = smtp_server
    transport = smtp(port, "?pool=4")
    inbox.data_delay_s = 0.02  # each send takes a while, so they overlap

    async def main() -> None:
        await asyncio.gather(*(transport.send(mail(i)) for i in range(20)))

    run(main)
    assert subjects(inbox) == [f"message {i}" for i in range(20)]  # every one, once
    assert len(inbox.connections) == 4 and inbox.most_open == 4 and transport.connections_opened == 4
    assert len(set(inbox.session_of)) == 4  # and all four carried messages


def test_one_send_at_a_time_uses_one_connection(smtp_server: tuple) -> None:
    inbox, port = smtp_server
    transport = smtp(port)
    assert transport.settings.pool == DEFAULT_POOL

    async def main() -> None:
        for i in range(5):
            await transport.send(mail(i))

    run(main)
    assert len(inbox.envelopes) == 5 and len(inbox.connections) == 1


def test_pool_1_sends_one_message_at_a_time(smtp_server: tuple) -> None:
    inbox, port = smtp_server
    transport = smtp(port, "?pool=1")
    inbox.data_delay_s = 0.01

    async def main() -> None:
        await asyncio.gather(*(transport.send(mail(i)) for i in range(6)))

    run(main)
    assert len(inbox.envelopes) == 6 and len(inbox.connections) == 1


@pytest.mark.parametrize("saying", [b"", b"421 4.4.2 Idle timeout, closing\r\n"], ids=["silently", "with 421"])
def test_connections_the_server_dropped_are_replaced(smtp_server: tuple, saying: bytes) -> None:
    inbox, port = smtp_server
    transport = smtp(port, "?pool=3")
    inbox.data_delay_s = 0.01

    async def main() -> None:
        await asyncio.gather(*(transport.send(mail(i)) for i in range(6)))
        inbox.drop_connections(saying)  # blocks this loop: its pool does not see the drop coming
        await asyncio.gather(*(transport.send(mail(i)) for i in range(6, 12)))

    run(main)
    assert subjects(inbox) == [f"message {i}" for i in range(12)]
    assert len(inbox.connections) == 6 and transport.connections_opened == 6
    assert len(set(inbox.session_of[:6]) & set(inbox.session_of[6:])) == 0


def test_a_refused_message_keeps_the_connection(smtp_server: tuple) -> None:
    inbox, port = smtp_server
    inbox.refused.add("nobody@example.com")
    transport = smtp(port)

    async def main() -> None:
        with pytest.raises(DeliveryError, match="550") as info:
            await transport.send(mail(0, to="nobody@example.com"))
        assert info.value.status == 550 and info.value.permanent  # 5xx: the same mail is refused again
        await transport.send(mail(1))

    run(main)
    assert subjects(inbox) == ["message 1"] and len(inbox.connections) == 1


def test_a_send_cancelled_mid_way_drops_its_connection(smtp_server: tuple) -> None:
    inbox, port = smtp_server
    transport = smtp(port, "?pool=1")

    async def main() -> None:
        inbox.data_delay_s = 5.0
        slow = asyncio.create_task(transport.send(mail(0)))
        await asyncio.sleep(0.3)  # the server is sitting on the data
        slow.cancel()
        with pytest.raises(asyncio.CancelledError):
            await slow
        inbox.data_delay_s = 0.0
        await transport.send(mail(1))  # not on the connection left mid-transaction

    run(main)
    assert transport.connections_opened == 2 and "message 1" in subjects(inbox)
    assert inbox.session_of[-1] == id(inbox.connections[1].session)


def test_event_loops_never_share_a_connection(smtp_server: tuple) -> None:
    inbox, port = smtp_server
    transport = smtp(port, "?pool=2")
    inbox.data_delay_s = 0.01
    start = threading.Barrier(3)

    def loop_thread(name: str) -> None:
        async def main() -> None:
            start.wait()
            await asyncio.gather(*(transport.send(mail(i, loop_name=name)) for i in range(6)))

        asyncio.run(main())

    threads = [threading.Thread(target=loop_thread, args=(name,)) for name in ("a", "b", "c")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    loops_of_session: dict[int, set[str]] = collections.defaultdict(set)
    for session, message in zip(inbox.session_of, inbox.messages, strict=True):
        loops_of_session[session].add(message["X-Loop"])
    assert len(inbox.envelopes) == 18
    assert all(len(loops) == 1 for loops in loops_of_session.values())
    assert len(loops_of_session) == len(inbox.connections) <= 6  # at most 2 for each of the 3 loops


def test_a_loop_closes_its_connections_when_it_ends(smtp_server: tuple) -> None:
    # In a fresh interpreter: this one holds other tests' garbage, whose ResourceWarnings a
    # gc.collect() here would report as ours.
    inbox, port = smtp_server
    script = f"""
import asyncio, gc
from notifications import MailMessage
from notifications.mail import transport_from_url
from notifications.mail.mime import build_email

transport = transport_from_url("smtp://127.0.0.1:{port}?pool=3")

async def main():
    await asyncio.gather(*(
        transport.send(build_email(MailMessage(subject=f"message {{i}}"), "ada@example.com", "shop@example.com"))
        for i in range(3)
    ))

asyncio.run(main())
gc.collect()
print("sent", transport.connections_opened)
"""
    done = subprocess.run(
        [sys.executable, "-X", "dev", "-W", "always::ResourceWarning", "-c", script],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["sent", "3"]
    assert "ResourceWarning" not in done.stderr and "unclosed" not in done.stderr, done.stderr
    wait_for(lambda: inbox.open_connections == 0, timeout=5)
    assert inbox.quits == 3  # each connection said QUIT: closed by the loop, not by the exit
    assert len(inbox.connections) == 3 and len(inbox.envelopes) == 3
    transport = smtp(port, "?pool=3")

    async def main() -> None:
        await asyncio.gather(*(transport.send(mail(i)) for i in range(3)))

    run(main)
    run(main)  # a new loop, new connections
    assert len(inbox.connections) == 3 + 2 * 3 and len(inbox.envelopes) == 9


def test_aclose_closes_this_loops_connections_and_the_next_send_reopens(smtp_server: tuple) -> None:
    inbox, port = smtp_server
    transport = smtp(port)

    async def main() -> None:
        await transport.send(mail(0))
        await transport.aclose()
        await transport.send(mail(1))

    run(main)
    assert len(inbox.connections) == 2 and len(inbox.envelopes) == 2


def test_sync_sends_reuse_the_threads_loop_and_its_connection(smtp_server: tuple) -> None:
    from notifications_tests.test_mail import User, Welcome

    inbox, port = smtp_server
    eventbus.configure(mail=f"smtp://127.0.0.1:{port}", mail_from="shop@example.com")
    for _ in range(3):
        User(1, "ada@example.com").notify_now(Welcome("Ada"))
    assert len(inbox.envelopes) == 3 and len(inbox.connections) == 1


@pytest.mark.parametrize("value", ["0", "-1", "1.5", "ten", "", " 2", "101", "²"])
def test_a_bad_pool_size_is_one_clear_error(value: str) -> None:
    with pytest.raises(eventbus.ConfigurationError) as info:
        SmtpSettings.from_url(f"smtp://user:s3cret@127.0.0.1:25?pool={value}")
    assert str(info.value) == (f"bad mail URL 'smtp://user:***@127.0.0.1:25?pool={value}': pool must be a "
                               f"whole number from 1 to 100, not {value!r}")
    with pytest.raises(eventbus.ConfigurationError, match="pool must be a whole number"):
        eventbus.configure(mail=f"smtp://127.0.0.1:25?pool={value}")


@pytest.mark.parametrize("value, size", [("1", 1), ("100", 100), ("07", 7)])
def test_good_pool_sizes(value: str, size: int) -> None:
    assert SmtpSettings.from_url(f"smtp://127.0.0.1:25?pool={value}").pool == size
