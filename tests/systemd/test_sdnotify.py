"""controller.sdnotify against a real AF_UNIX datagram socket (path and abstract)."""

from __future__ import annotations

import logging
import os
import socket
import tempfile

import pytest

from controller.sdnotify import MAX_DATAGRAM_BYTES, MAX_STATUS_CHARS, SdNotifier, watchdog_interval
from tests.systemd.conftest import NotifySocket


def test_ready_datagram(notify_socket: NotifySocket) -> None:
    notifier = SdNotifier(notify_socket.env)
    assert notifier.enabled
    assert notifier.address == notify_socket.env["NOTIFY_SOCKET"]
    assert notifier.ready() is True
    assert notify_socket.drain() == [b"READY=1"]


def test_every_notification_is_the_exact_datagram(notify_socket: NotifySocket) -> None:
    notifier = SdNotifier(notify_socket.env)
    assert notifier.ready("table T1 open, shoe connecting")
    assert notifier.status("shoe 7, round 12: dealing")
    assert notifier.watchdog()
    assert notifier.watchdog(status="shoe 7, round 13: betting")
    assert notifier.stopping()
    assert notifier.stopping("closing store")
    assert notify_socket.drain() == [
        b"READY=1\nSTATUS=table T1 open, shoe connecting",
        b"STATUS=shoe 7, round 12: dealing",
        b"WATCHDOG=1",
        b"WATCHDOG=1\nSTATUS=shoe 7, round 13: betting",
        b"STOPPING=1",
        b"STOPPING=1\nSTATUS=closing store",
    ]
    assert (notifier.sent, notifier.failures) == (6, 0)


def test_status_cannot_inject_assignments(notify_socket: NotifySocket) -> None:
    # e.g. a firmware version string from a device with a newline in it
    notifier = SdNotifier(notify_socket.env)
    notifier.status("shoe firmware 1.2\nREADY=1\r\nWATCHDOG=1\0")
    assert notify_socket.drain() == [b"STATUS=shoe firmware 1.2 READY=1 WATCHDOG=1"]


def test_long_status_is_truncated_to_one_bounded_line(notify_socket: NotifySocket) -> None:
    notifier = SdNotifier(notify_socket.env)
    assert notifier.status("x" * (MAX_STATUS_CHARS * 3))
    (datagram,) = notify_socket.drain()
    text = datagram.decode()
    assert text.startswith("STATUS=xxx") and text.endswith("\u2026")
    assert len(text) == len("STATUS=") + MAX_STATUS_CHARS


def test_status_is_utf8(notify_socket: NotifySocket) -> None:
    SdNotifier(notify_socket.env).status("Mesa 3 – ronda 5")
    assert notify_socket.drain() == ["STATUS=Mesa 3 – ronda 5".encode()]


def test_not_under_systemd_is_a_silent_no_op(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="controller.sdnotify")
    notifier = SdNotifier({})
    assert not notifier.enabled
    assert notifier.address is None
    assert notifier.ready("x") is False
    assert notifier.watchdog() is False
    assert notifier.stopping() is False
    assert notifier.watchdog_interval() is None
    assert (notifier.sent, notifier.failures) == (0, 0)
    assert caplog.records == []


def test_reads_os_environ_by_default(monkeypatch: pytest.MonkeyPatch,
                                     path_notify_socket: NotifySocket) -> None:
    monkeypatch.setenv("NOTIFY_SOCKET", path_notify_socket.env["NOTIFY_SOCKET"])
    SdNotifier().watchdog()
    assert path_notify_socket.drain() == [b"WATCHDOG=1"]


@pytest.mark.parametrize("raw", ["relative/notify", "@", "vsock:2:1234"])
def test_unusable_notify_socket_is_logged_and_counted(raw: str,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    notifier = SdNotifier({"NOTIFY_SOCKET": raw})
    assert not notifier.enabled
    assert "unsupported NOTIFY_SOCKET" in caplog.text
    assert notifier.ready() is False
    assert notifier.failures == 1


def test_vanished_socket_is_logged_and_counted_never_raised(
        caplog: pytest.LogCaptureFixture) -> None:
    with tempfile.TemporaryDirectory(prefix="sdn-") as directory:
        notifier = SdNotifier({"NOTIFY_SOCKET": os.path.join(directory, "gone")})
        assert notifier.enabled
        assert notifier.ready() is False
        assert notifier.watchdog() is False
    assert notifier.failures == 2
    # Warned once for the run of failures, not at every ping.
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "send to" in warnings[0].getMessage()


def test_recovers_after_the_socket_returns(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="controller.sdnotify")
    with tempfile.TemporaryDirectory(prefix="sdn-") as directory:
        path = os.path.join(directory, "notify")
        notifier = SdNotifier({"NOTIFY_SOCKET": path})
        assert notifier.watchdog() is False
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as receiver:
            receiver.bind(path)
            assert notifier.watchdog() is True
            assert receiver.recv(100) == b"WATCHDOG=1"
    assert (notifier.sent, notifier.failures) == (1, 1)
    assert "works again" in caplog.text


def test_a_manager_that_stops_reading_never_blocks_the_caller(
        path_notify_socket: NotifySocket) -> None:
    # A blocking sendto() would hang here once the receive queue is full.
    notifier = SdNotifier(path_notify_socket.env)
    results = [notifier.watchdog() for _ in range(5000)]
    assert results[0] is True
    assert False in results
    assert notifier.failures == results.count(False)
    assert notifier.sent == results.count(True)


def test_oversized_and_malformed_notifications_are_refused(notify_socket: NotifySocket) -> None:
    notifier = SdNotifier(notify_socket.env)
    assert notifier.notify("X_BLOB=" + "a" * MAX_DATAGRAM_BYTES) is False
    assert notifier.notify("READY") is False
    assert notifier.notify("READY=1\nSTATUS=x") is False
    assert notifier.notify("STATUS=a\0b") is False  # systemd drops datagrams with NUL
    assert notifier.notify() is False
    assert notifier.failures == 5
    assert notify_socket.drain() == []


def test_close_then_send_reopens(notify_socket: NotifySocket) -> None:
    notifier = SdNotifier(notify_socket.env)
    notifier.watchdog()
    notifier.close()
    notifier.close()
    notifier.watchdog()
    assert notify_socket.drain() == [b"WATCHDOG=1", b"WATCHDOG=1"]


# --- WATCHDOG_USEC / WATCHDOG_PID ------------------------------------------------

@pytest.mark.parametrize(("usec", "seconds"), [("10000000", 10.0), ("30000", 0.03), ("1", 1e-6)])
def test_watchdog_interval_from_usec(usec: str, seconds: float) -> None:
    assert watchdog_interval({"WATCHDOG_USEC": usec}) == pytest.approx(seconds)


def test_watchdog_interval_for_this_pid() -> None:
    env = {"WATCHDOG_USEC": "10000000", "WATCHDOG_PID": str(os.getpid())}
    assert watchdog_interval(env) == 10.0


def test_watchdog_interval_meant_for_another_process_is_none() -> None:
    env = {"WATCHDOG_USEC": "10000000", "WATCHDOG_PID": str(os.getpid() + 1)}
    assert watchdog_interval(env) is None


@pytest.mark.parametrize("env", [
    {},
    {"WATCHDOG_USEC": ""},
    {"WATCHDOG_USEC": "ten"},
    {"WATCHDOG_USEC": "0"},
    {"WATCHDOG_USEC": "-5"},
    {"WATCHDOG_USEC": "1000", "WATCHDOG_PID": "me"},
])
def test_watchdog_interval_absent_or_malformed_is_none(env: dict[str, str]) -> None:
    assert watchdog_interval(env) is None


def test_watchdog_interval_reads_os_environ_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WATCHDOG_USEC", "6000000")
    monkeypatch.delenv("WATCHDOG_PID", raising=False)
    assert watchdog_interval() == 6.0


def test_notifier_watchdog_interval_needs_a_notify_socket(notify_socket: NotifySocket) -> None:
    with_socket = SdNotifier({**notify_socket.env, "WATCHDOG_USEC": "9000000"})
    assert with_socket.watchdog_interval() == 9.0
    assert SdNotifier({"WATCHDOG_USEC": "9000000"}).watchdog_interval() is None
