"""A device's serial port as pyserial opens it, read and written without `select()`.

pyserial's posix `Serial.read` waits in `select.select()` even when asked only for what
has already arrived (timeout 0, as pyserial-asyncio-fast's transport asks each time the
event loop reports the port readable). `select()` refuses a descriptor numbered 1024 or
above with ValueError, and the daemon may hold thousands of descriptors (a control
connection is one: `[access] max_connections` is 4096 under `LimitNOFILE=16384`). A shoe
replugged during such a flood got a high descriptor, and every turn of the event loop then
logged that ValueError while the shoe never came back. Read here asks `poll()`, which takes
any descriptor number, whether the port is readable, then reads it with one `os.read`.

pyserial's non-blocking write loops on EAGAIN until the kernel takes every byte: a device
that stopped reading held the daemon's event loop in that loop for good. Written here is
one `os.write`: a full port raises BlockingIOError, and the transport keeps the bytes and
waits for the port to be writable. Everything else (opening, termios settings, the
exclusive lock) is pyserial's own: a subclass, because pyserial-asyncio-fast's transport
takes a `serial.Serial` and calls its `read` and `write`.
"""

from __future__ import annotations

import errno
import os
import select

import serial

# What a non-blocking read may answer when nothing is there after all (pyserial's own list).
NOTHING_YET = frozenset({errno.EAGAIN, errno.EALREADY, errno.EWOULDBLOCK, errno.EINPROGRESS,
                         errno.EINTR})


class SerialPort(serial.Serial):  # type: ignore[misc]  # pyserial has no type hints
    """`serial.Serial` whose non-blocking read and write are one `os.read` and one
    `os.write` (see the module's docstring); with a timeout they are pyserial's."""

    def read(self, size: int = 1) -> bytes:
        if self.timeout != 0 or not self.is_open:
            return bytes(super().read(size))
        # pyserial's test, with poll() in place of select(): with VMIN = VTIME = 0 (as
        # pyserial sets the port) a read of an idle port answers b"" rather than EAGAIN,
        # so only a port that says it is readable and then gives nothing has gone away.
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        if not poller.poll(0):
            return b""
        try:
            data = os.read(self.fd, size)
        except OSError as exc:
            if exc.errno in NOTHING_YET:
                return b""
            raise serial.SerialException(f"read failed: {exc}") from exc
        if not data:
            raise serial.SerialException("device reports readiness to read but returned no "
                                         "data (device disconnected or multiple access on "
                                         "port?)")
        return data

    def write(self, data: bytes | bytearray | memoryview) -> int:
        if self.write_timeout != 0 or not self.is_open:
            return int(super().write(data) or 0)
        try:
            return os.write(self.fd, data)
        except (BlockingIOError, InterruptedError):
            raise  # the transport keeps the bytes until the port is writable
        except OSError as exc:
            raise serial.SerialException(f"write failed: {exc}") from exc
