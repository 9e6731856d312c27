"""gpiozero mock pins that another process can drive: the software relay board of a HIL rig.

``BridgedMockFactory`` is a ``MockFactory`` that also serves a small line
protocol on a Unix socket. The daemon is configured with::

    [gpio]
    pin_factory = "hil.mock_pins:BridgedMockFactory"
    factory_options = { bridge_socket = "/tmp/table-pins.sock" }

and the HIL harness, in its own process, uses ``PinBridgeClient`` to place and
lift chips on seat sensors, press the lock-out button and read the seat LEDs,
as a rig's relay board and photodiodes would. A real rig's relay service speaks
the same protocol, so the same test body drives both (``hil/rig.py``).

Line protocol (ASCII, one request per line, one reply per line)::

    PING              -> OK
    SET <pin> <0|1>   -> OK            drive an input pin low/high
    GET <pin>         -> OK <0|1>      the level of any pin (outputs: what the daemon drives)
    anything wrong    -> ERR <reason>

Pins are gpiozero names: a BCM number (``17``) or ``GPIO17``. Callbacks fire in
the bridge's connection thread, just as lgpio fires them in its own thread.

The lines are claimed as a gpiochip's are: one program at a time. Each pin the factory
makes takes an exclusive lock on its file in a simulated gpiochip directory beside the
bridge socket (``gpiochip``), held until the factory closes (or its process dies, as the
kernel frees a dead program's lines). ``LineHolder`` is the other program that takes the
seat pins first: the factory's pin is then refused with lgpio's words, ``GPIO busy``.
"""

from __future__ import annotations

import fcntl
import os
import socket
import socketserver
import threading
import time
from types import TracebackType
from typing import Any, Protocol

import structlog
from gpiozero.exc import GPIOPinInUse
from gpiozero.pins.mock import MockFactory, MockPin

from hil.os_threads import os_named

log = structlog.get_logger()

BRIDGE_LINE_MAX = 256
"""Longest request line accepted; the protocol's longest legal line is ~20 bytes."""
BRIDGE_POLL_S = 0.05
"""How often the server checks for shutdown: bounds close() to ~50 ms (socketserver's default is 0.5 s)."""
BRIDGE_CLIENT_TIMEOUT_S = 5.0
"""Client reply timeout: the server answers in microseconds; 5 s only catches a dead daemon."""


def _pin_name(token: str) -> int | str:
    return int(token) if token.isdecimal() else token


def chip_directory(bridge_socket: str) -> str:
    """The simulated gpiochip of the factory serving `bridge_socket`: one file per line."""
    return os.path.join(os.path.dirname(os.path.abspath(bridge_socket)), "gpiochip")


def claim_line(chip: str, name: str) -> int | None:
    """An exclusive, non-blocking lock on line `name` of `chip`: the open file, or None when
    another program holds the line (released when the file is closed or its process dies)."""
    os.makedirs(chip, exist_ok=True)
    fd = os.open(os.path.join(chip, name), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


class LineHolder:
    """Another program holding GPIO lines (a test script left running, a second daemon):
    while it holds them, a factory that needs one of them cannot claim its pins."""

    def __init__(self, bridge_socket: str, pins: list[int]) -> None:
        self.chip = chip_directory(bridge_socket)
        self._fds: list[int] = []
        for pin in pins:
            fd = claim_line(self.chip, f"GPIO{pin}")
            if fd is None:
                self.release()
                raise PinBridgeError(f"GPIO{pin} is held by another program already")
            self._fds.append(fd)

    def release(self) -> None:
        for fd in self._fds:
            os.close(fd)
        self._fds.clear()


class LineCommands(Protocol):
    """What answers the bridge's lines: the mock factory here, the software relay board in
    hil.relay_board."""

    def bridge_command(self, line: str) -> str: ...


class _BridgeHandler(socketserver.StreamRequestHandler):
    server: BridgeServer

    def handle(self) -> None:
        while True:
            line = self.rfile.readline(BRIDGE_LINE_MAX + 1)
            if not line:
                return
            if len(line) > BRIDGE_LINE_MAX:
                self.wfile.write(b"ERR line too long\n")
                return
            reply = self.server.factory.bridge_command(line.decode("ascii", "replace").strip())
            self.wfile.write(reply.encode("ascii") + b"\n")


class BridgeServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    """Serves the line protocol above on ``path``, each line answered by ``factory``."""

    daemon_threads = True

    def __init__(self, path: str, factory: LineCommands) -> None:
        self.factory = factory
        super().__init__(path, _BridgeHandler)


class BridgedMockFactory(MockFactory):
    """A gpiozero ``MockFactory`` whose pins are driven and read over a Unix socket."""

    def __init__(self, revision: str | None = None, pin_class: Any = None, *,
                 bridge_socket: str) -> None:
        super().__init__(revision=revision, pin_class=pin_class)
        self.bridge_socket = bridge_socket
        self._pin_lock = threading.Lock()
        self._chip = chip_directory(bridge_socket)
        self._lines: list[int] = []  # the gpiochip lines this factory holds
        try:
            os.unlink(bridge_socket)  # a stale socket from a killed daemon
        except FileNotFoundError:
            pass
        self._server = BridgeServer(bridge_socket, self)
        self._thread = threading.Thread(target=os_named("sim-pin-bridge", self._server.serve_forever),
                                        args=(BRIDGE_POLL_S,), name="sim-pin-bridge", daemon=True)
        self._thread.start()
        log.info("pin bridge listening", socket=bridge_socket)

    def pin(self, name: Any, pin_class: Any = None, **kwargs: Any) -> Any:
        """A new pin claims its line first, as lgpio's gpio_claim_input does."""
        for _header, info in self.board_info.find_pin(name):
            if info not in self.pins:
                fd = claim_line(self._chip, info.name)
                if fd is None:
                    raise GPIOPinInUse(f"GPIO busy: {info.name} is held by another program")
                self._lines.append(fd)
            break
        return super().pin(name, pin_class, **kwargs)

    def bridge_command(self, line: str) -> str:
        """Execute one protocol line and return the reply (without newline)."""
        parts = line.split()
        try:
            if parts == ["PING"]:
                return "OK"
            if len(parts) == 3 and parts[0] == "SET" and parts[2] in ("0", "1"):
                pin: MockPin = self.pin(_pin_name(parts[1]))
                with self._pin_lock:
                    if pin.function != "input":
                        return f"ERR pin {parts[1]} is an output; only inputs can be driven"
                    if parts[2] == "1":
                        pin.drive_high()
                    else:
                        pin.drive_low()
                return "OK"
            if len(parts) == 2 and parts[0] == "GET":
                return f"OK {int(bool(self.pin(_pin_name(parts[1])).state))}"
        except Exception as exc:  # a bad pin name must not kill the bridge thread
            return f"ERR {type(exc).__name__}: {exc}"
        return f"ERR unknown request {line[:40]!r}; expected PING, SET <pin> <0|1> or GET <pin>"

    def close(self) -> None:
        """Stop the bridge, then release the pins."""
        self._server.shutdown()
        self._server.server_close()
        try:
            os.unlink(self.bridge_socket)
        except FileNotFoundError:
            pass
        super().close()
        for fd in self._lines:
            os.close(fd)
        self._lines.clear()


class PinBridgeError(RuntimeError):
    """The pin bridge refused a request or could not be reached."""


class PinBridgeClient:
    """Drives a ``BridgedMockFactory`` (or a rig's relay service) from another process.

    Sensors and the lock-out button are wired active-low (docs/wiring.md), so
    ``press`` drives the pin low and ``release`` lets it go high; a wager on a
    seat sensor is ``press(sensor_pin)``.
    """

    def __init__(self, socket_path: str, *, timeout: float = BRIDGE_CLIENT_TIMEOUT_S,
                 active_low: bool = True) -> None:
        self.socket_path = socket_path
        self.active_low = active_low
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(timeout)
        try:
            self._sock.connect(socket_path)
        except OSError as exc:
            self._sock.close()
            raise PinBridgeError(f"pin bridge {socket_path}: {exc}") from exc
        self._reader = self._sock.makefile("rb")
        self._lock = threading.Lock()

    def _request(self, line: str) -> str:
        return self._requests(line)[0]

    def _requests(self, *lines: str) -> list[str]:
        """Send `lines` together and read their answers: the bridge runs them one after
        another, in order, as if each had waited for the one before (one round trip, not
        one a line)."""
        with self._lock:
            self._sock.sendall("".join(f"{line}\n" for line in lines).encode("ascii"))
            replies = [self._reader.readline(BRIDGE_LINE_MAX + 1).decode("ascii").strip()
                       for _ in lines]
        for line, reply in zip(lines, replies, strict=True):
            if not reply.startswith("OK"):
                raise PinBridgeError(
                    f"pin bridge {self.socket_path}: {line!r} -> {reply or 'closed'}")
        return [reply[2:].strip() for reply in replies]

    def ping(self) -> None:
        self._request("PING")

    def set_input(self, pin: int | str, high: bool) -> None:
        """Drive an input pin to a level (the daemon's gpiozero callbacks fire before this returns)."""
        self._request(f"SET {pin} {int(high)}")

    def read_output(self, pin: int | str) -> bool:
        """The level of a pin (an LED the daemon drives)."""
        return self._request(f"GET {pin}") == "1"

    def press(self, pin: int | str) -> None:
        """Activate a sensor or button (low when wired active-low)."""
        self.set_input(pin, not self.active_low)

    def release(self, pin: int | str) -> None:
        self.set_input(pin, self.active_low)

    def press_and_release(self, pin: int | str) -> None:
        """`press` then `release`, in one round trip (the dealer's tap of a button)."""
        self._requests(f"SET {pin} {int(not self.active_low)}", f"SET {pin} {int(self.active_low)}")

    def chatter(self, pin: int | str, edges: int, *, interval_s: float = 0.0) -> None:
        """Fault injection: toggle a sensor ``edges`` times (a loose connector), ending released
        if ``edges`` is even. ``interval_s`` spaces the edges for a real clock."""
        level = not self.active_low
        for _ in range(edges):
            self.set_input(pin, level)
            level = not level
            if interval_s:
                time.sleep(interval_s)

    def close(self) -> None:
        self._reader.close()
        self._sock.close()

    def __enter__(self) -> PinBridgeClient:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def main(argv: list[str]) -> int:
    """`python -m hil.mock_pins hold BRIDGE_SOCKET PIN...`: another program that holds the
    seat pins of the factory serving BRIDGE_SOCKET until its input ends (the practice
    table's "Let another program hold the seat pins", hil/practice_service.py)."""
    import sys

    if len(argv) < 3 or argv[0] != "hold" or not all(p.isdecimal() for p in argv[2:]):
        print("usage: python -m hil.mock_pins hold BRIDGE_SOCKET PIN...", file=sys.stderr)
        return 2
    try:
        holder = LineHolder(argv[1], [int(p) for p in argv[2:]])
    except PinBridgeError as exc:
        print(f"refused: {exc}", flush=True)
        return 1
    print(f"holding GPIO{', GPIO'.join(argv[2:])}", flush=True)
    sys.stdin.read()  # until the practice page ends this program
    holder.release()
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
