"""A small sd_notify(3) client: READY, STATUS, WATCHDOG and STOPPING datagrams to systemd.

Stdlib only. Under systemd with ``Type=notify`` the service manager passes the
address of its notification socket in ``NOTIFY_SOCKET`` (a filesystem path, or
an abstract address written with a leading ``@``) and, with ``WatchdogSec=``,
the watchdog period in ``WATCHDOG_USEC`` (plus ``WATCHDOG_PID``, the process it
is meant for).

Outside systemd (tests, a technician running the daemon by hand) every call is
a silent no-op. Nothing here ever raises into the caller: a notification that
cannot be delivered is logged and counted in `SdNotifier.failures`, because a
lost STATUS line must never take the table down. The socket is non-blocking,
so a stalled service manager cannot block the event loop either.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping

__all__ = ["SdNotifier", "watchdog_interval", "MAX_DATAGRAM_BYTES", "MAX_STATUS_CHARS"]

logger = logging.getLogger(__name__)

# systemd (252, src/core/manager.c) reads notifications into a PIPE_BUF-sized
# buffer and drops any datagram that was truncated.
MAX_DATAGRAM_BYTES = 4096
# A STATUS= line is shown by `systemctl status`; keep it readable and well
# inside MAX_DATAGRAM_BYTES (4 UTF-8 bytes a character at worst) even when
# combined with other assignments.
MAX_STATUS_CHARS = 512


def _parse_address(raw: str | None) -> str | None:
    """The sendto() address for NOTIFY_SOCKET, or None if it is unset or unusable."""
    if not raw:
        return None
    if raw.startswith("@"):
        # Abstract namespace: Linux addresses it with a leading NUL byte.
        return "\0" + raw[1:] if len(raw) > 1 else None
    if raw.startswith("/"):
        return raw
    # systemd >= 253 also knows "vsock:" addresses, for VMs; not used on a Pi.
    return None


def watchdog_interval(environ: Mapping[str, str] | None = None) -> float | None:
    """The watchdog period in seconds that systemd expects pings within, or None.

    None when ``WATCHDOG_USEC`` is absent or malformed, or when ``WATCHDOG_PID``
    names another process (the variables were inherited by a child that is not
    the one systemd watches).
    """
    env = os.environ if environ is None else environ
    raw_usec = env.get("WATCHDOG_USEC")
    if not raw_usec:
        return None
    raw_pid = env.get("WATCHDOG_PID")
    if raw_pid:
        try:
            pid = int(raw_pid)
        except ValueError:
            logger.warning("sd_notify: ignoring malformed WATCHDOG_PID=%r", raw_pid)
            return None
        if pid != os.getpid():
            return None
    try:
        usec = int(raw_usec)
    except ValueError:
        logger.warning("sd_notify: ignoring malformed WATCHDOG_USEC=%r", raw_usec)
        return None
    if usec <= 0:
        logger.warning("sd_notify: ignoring non-positive WATCHDOG_USEC=%r", raw_usec)
        return None
    return usec / 1_000_000


def _one_line(text: str) -> str:
    """STATUS text as a single bounded line. A newline would start a new
    assignment, so text from a device or the configuration could otherwise
    inject one; systemd drops a whole datagram that contains a NUL byte."""
    flat = text.replace("\r\n", " ").replace("\n", " ").replace("\r", " ").replace("\0", "")
    if len(flat) > MAX_STATUS_CHARS:
        flat = flat[: MAX_STATUS_CHARS - 1] + "\u2026"
    return flat


class SdNotifier:
    """Sends sd_notify datagrams to the address in ``NOTIFY_SOCKET``.

    The environment is read once, at construction (pass a mapping in tests).
    Every sending method returns True when the datagram was handed to the
    kernel and False otherwise; it never raises.
    """

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        self._environ: Mapping[str, str] = dict(env)
        raw = self._environ.get("NOTIFY_SOCKET")
        self._address = _parse_address(raw)
        # NOTIFY_SOCKET set but unusable: systemd expects us and will time out.
        self._misconfigured = bool(raw) and self._address is None
        if self._misconfigured:
            logger.warning("sd_notify: unsupported NOTIFY_SOCKET=%r; notifications disabled", raw)
        self._sock: socket.socket | None = None
        self._last_send_failed = False
        #: datagrams delivered to the notification socket
        self.sent = 0
        #: notifications that should have reached systemd and did not
        self.failures = 0

    @property
    def enabled(self) -> bool:
        """True when running under a service manager that asked for notifications."""
        return self._address is not None

    @property
    def address(self) -> str | None:
        """The notification socket as systemd wrote it ('@name' or a path), or None."""
        if self._address is None:
            return None
        return "@" + self._address[1:] if self._address.startswith("\0") else self._address

    def watchdog_interval(self) -> float | None:
        """See `watchdog_interval`; None too when notifications are disabled."""
        if not self.enabled:
            return None
        return watchdog_interval(self._environ)

    def notify(self, *assignments: str) -> bool:
        """Send ``VAR=value`` assignments as one datagram (sd_notify's state string)."""
        address = self._address
        if address is None:
            if self._misconfigured:
                self.failures += 1
            return False
        for item in assignments:
            if "=" not in item or "\n" in item or "\0" in item:
                self._fail("malformed assignment %r", item)
                return False
        data = "\n".join(assignments).encode("utf-8", "replace")
        if not data or len(data) > MAX_DATAGRAM_BYTES:
            self._fail("datagram of %d bytes outside 1..%d", len(data), MAX_DATAGRAM_BYTES)
            return False
        try:
            if self._sock is None:
                self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                self._sock.setblocking(False)
            self._sock.sendto(data, address)
        except OSError as exc:
            # EAGAIN (manager not reading), ENOENT/ECONNREFUSED (socket gone), ...
            self._fail("send to %s failed: %s", self.address, exc)
            return False
        self.sent += 1
        if self._last_send_failed:
            logger.info("sd_notify: sending to %s works again", self.address)
            self._last_send_failed = False
        return True

    def ready(self, status: str | None = None) -> bool:
        """READY=1: start-up finished (for Type=notify, `systemctl start` returns now)."""
        return self._send_with_status("READY=1", status)

    def status(self, text: str) -> bool:
        """STATUS=: one line shown by `systemctl status`."""
        return self.notify("STATUS=" + _one_line(text))

    def watchdog(self, status: str | None = None) -> bool:
        """WATCHDOG=1: keep-alive ping; send more often than `watchdog_interval`."""
        return self._send_with_status("WATCHDOG=1", status)

    def stopping(self, status: str | None = None) -> bool:
        """STOPPING=1: orderly shutdown has begun."""
        return self._send_with_status("STOPPING=1", status)

    def close(self) -> None:
        """Close the socket; a later notification reopens it."""
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None

    def _send_with_status(self, assignment: str, status: str | None) -> bool:
        if status is None:
            return self.notify(assignment)
        return self.notify(assignment, "STATUS=" + _one_line(status))

    def _fail(self, message: str, *args: object) -> None:
        self.failures += 1
        # Warn once per run of failures; a manager that stopped reading would
        # otherwise flood the journal at every ping.
        level = logging.DEBUG if self._last_send_failed else logging.WARNING
        self._last_send_failed = True
        logger.log(level, "sd_notify: " + message, *args)
