"""The software rig's relay board, and the gpiozero pin factory wired to it.

A bench's relay board closes a relay across each seat sensor and the lock-out
button (pulling the Pi's input low, as a chip or a press does) and reads each
seat LED with a photodiode. Its service speaks the ``hil.mock_pins`` line
protocol on the rig's ``relay_socket``::

    PING              -> OK
    SET <pin> <0|1>   -> OK            0: close the pin's relay (line low), 1: open it
    GET <pin>         -> OK <0|1>      a relay pin: its line; an LED pin: its photodiode
    anything wrong    -> ERR <reason>

``RelayBoard`` is that service in software. The Pi's side of the wires is
``WiredFactory``, a gpiozero ``MockFactory`` whose input levels come from the
board (a closed relay beats the internal pull-up, as on the real header) and
whose output levels the board's photodiodes see. The two talk over the board's
``wires`` socket: the factory subscribes (``SUBSCRIBE`` -> ``LEVEL <pin> <0|1>``
lines, ``END``, then one pushed ``LEVEL`` per relay change, each answered
``ACK`` once the pin's callbacks ran) and reports its outputs (``OUT <pin>
<0|1>`` -> ``OK``). The board keeps its relays when the Pi side goes away, as a
real board does, so a relay a test leaves closed is still closed for the next.
"""

from __future__ import annotations

import contextlib
import os
import socket
import socketserver
import threading
from typing import Any

from gpiozero.pins.mock import MockFactory, MockPin

from hil.mock_pins import BRIDGE_CLIENT_TIMEOUT_S, BRIDGE_LINE_MAX
from hil.os_threads import os_named

WIRE_TIMEOUT_S = BRIDGE_CLIENT_TIMEOUT_S
"""Longest wait for the Pi side to apply a relay change; it takes microseconds."""


def pin_key(pin: int | str) -> str:
    """One name per pin: ``17``, ``"17"`` and ``"GPIO17"`` are the same line."""
    return str(pin).upper().removeprefix("GPIO")


class _WiresHandler(socketserver.StreamRequestHandler):
    server: _WiresServer

    def handle(self) -> None:
        first = self.rfile.readline(BRIDGE_LINE_MAX + 1).decode("ascii", "replace").strip()
        board = self.server.board
        if first == "SUBSCRIBE":
            board.subscribe(self)
        elif first.startswith("OUT "):
            board.serve_outputs(self, first)
        else:
            self.wfile.write(f"ERR expected SUBSCRIBE or OUT, got {first[:40]!r}\n".encode())


class _WiresServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def __init__(self, path: str, board: RelayBoard) -> None:
        self.board = board
        super().__init__(path, _WiresHandler)


class RelayBoard:
    """Relays on ``relays`` (sensors, button) and photodiodes on ``photodiodes`` (LEDs)."""

    def __init__(self, relays: set[str], photodiodes: set[str]) -> None:
        self.relays = {pin_key(p) for p in relays}
        self.photodiodes = {pin_key(p) for p in photodiodes}
        self.lines = dict.fromkeys(self.relays, True)
        """Relay pin -> line level; every relay starts open (the line pulled up)."""
        self.outputs: dict[str, bool] = {}
        """LED pin -> what the Pi drives; absent = not driven (dark)."""
        self._lock = threading.Lock()
        """Guards the two tables above, briefly."""
        self._switching = threading.Lock()
        """One relay change at a time, held until the Pi side has taken it (never with _lock:
        the pin callbacks it waits for may report an LED, which takes _lock)."""
        self._pi: _WiresHandler | None = None
        self._acked = threading.Event()

    # --- the relay service (relay_socket) -----------------------------------------------

    def bridge_command(self, line: str) -> str:
        parts = line.split()
        if parts == ["PING"]:
            return "OK"
        if len(parts) == 3 and parts[0] == "SET" and parts[2] in ("0", "1"):
            key = pin_key(parts[1])
            if key not in self.relays:
                return (f"ERR pin {parts[1]} has no relay; relays: "
                        f"{', '.join(sorted(self.relays))}")
            return self._set(key, parts[2] == "1")
        if len(parts) == 2 and parts[0] == "GET":
            key = pin_key(parts[1])
            with self._lock:
                if key in self.relays:
                    return f"OK {int(self.lines[key])}"
                if key in self.photodiodes:
                    return f"OK {int(self.outputs.get(key, False))}"
            return f"ERR pin {parts[1]} has neither a relay nor a photodiode"
        return f"ERR unknown request {line[:40]!r}; expected PING, SET <pin> <0|1> or GET <pin>"

    def _set(self, key: str, level: bool) -> str:
        with self._switching:
            with self._lock:
                self.lines[key] = level
            pi = self._pi
            if pi is None:
                return "OK"  # nothing on the header: the relay still switches
            self._acked.clear()
            try:
                pi.wfile.write(f"LEVEL {key} {int(level)}\n".encode())
            except OSError:
                self._pi = None
                return "OK"
            if not self._acked.wait(WIRE_TIMEOUT_S):
                return f"ERR the Pi side did not take pin {key} within {WIRE_TIMEOUT_S:g} s"
        return "OK"

    # --- the Pi's side of the wires ---------------------------------------------------------

    def subscribe(self, handler: _WiresHandler) -> None:
        with self._switching, self._lock:
            for key, level in sorted(self.lines.items()):
                handler.wfile.write(f"LEVEL {key} {int(level)}\n".encode())
            handler.wfile.write(b"END\n")
            self._pi = handler
        try:
            while line := handler.rfile.readline(BRIDGE_LINE_MAX + 1):
                if line.strip() == b"ACK":
                    self._acked.set()
        finally:
            self._acked.set()  # a change waiting on this Pi side need not wait any more
            if self._pi is handler:
                self._pi = None

    def serve_outputs(self, handler: _WiresHandler, first: str) -> None:
        line = first
        try:
            while line:
                parts = line.split()
                if len(parts) == 3 and parts[0] == "OUT" and parts[2] in ("0", "1"):
                    with self._lock:
                        self.outputs[pin_key(parts[1])] = parts[2] == "1"
                    handler.wfile.write(b"OK\n")
                else:
                    handler.wfile.write(f"ERR expected OUT <pin> <0|1>, got {line[:40]!r}\n".encode())
                line = handler.rfile.readline(BRIDGE_LINE_MAX + 1).decode("ascii", "replace").strip()
        finally:
            with self._lock:
                self.outputs.clear()  # the Pi let go of its pins: every LED dark

    def serve(self, relay_socket: str, wires_socket: str) -> list[socketserver.BaseServer]:
        """Listen on both sockets (in threads); returns the servers, for shutdown()."""
        from hil.mock_pins import BridgeServer

        for path in (relay_socket, wires_socket):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)  # a stale socket from a killed board
        servers: list[socketserver.BaseServer] = [BridgeServer(relay_socket, self),
                                                  _WiresServer(wires_socket, self)]
        for server in servers:
            threading.Thread(target=os_named("sim-relay-board", server.serve_forever),
                             args=(0.05,), name="sim-relay-board", daemon=True).start()
        return servers


class WiredPin(MockPin):  # type: ignore[misc]
    """A mock pin on the relay board's wires: a closed relay drives the input whatever the
    pull; what the pin outputs is reported to the board's photodiode."""

    factory: WiredFactory

    def _set_pull(self, value: str) -> None:
        super()._set_pull(value)
        self._follow_wire()

    def _follow_wire(self) -> None:
        level = self.factory.wired_level(self.info.name)
        if level is not None and self._function == "input":
            (self.drive_high if level else self.drive_low)()

    def _set_function(self, value: str) -> None:
        was_output = self._function == "output"
        super()._set_function(value)
        if value == "output":
            self.factory.report_output(self.info.name, bool(self._state))
        elif was_output:
            self.factory.report_output(self.info.name, False)  # released: no longer driven
        self._follow_wire()

    def _set_state(self, value: Any) -> None:
        super()._set_state(value)
        self.factory.report_output(self.info.name, bool(value))


class WiredFactory(MockFactory):  # type: ignore[misc]
    """``[gpio] pin_factory = "hil.relay_board:WiredFactory"``,
    ``factory_options = { wires_socket = "<the board's wires socket>" }``."""

    def __init__(self, revision: str | None = None, *, wires_socket: str) -> None:
        super().__init__(revision=revision, pin_class=WiredPin)
        self._levels: dict[str, bool] = {}
        self._out_lock = threading.Lock()
        self._push = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._out = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._out_reader: Any = None
        try:
            self._push.connect(wires_socket)
            self._out.connect(wires_socket)
        except OSError as exc:
            self._push.close()
            self._out.close()
            raise OSError(f"gpio.factory_options.wires_socket = {wires_socket!r}: {exc}") from exc
        self._out.settimeout(WIRE_TIMEOUT_S)
        self._out_reader = self._out.makefile("rb")
        self._push_reader = self._push.makefile("rb")
        self._push.sendall(b"SUBSCRIBE\n")
        while (line := self._push_reader.readline().decode().strip()) not in ("END", ""):
            _, key, level = line.split()
            self._levels[key] = level == "1"
        self._thread = threading.Thread(target=os_named("sim-wires", self._follow), name="sim-wires",
                                        daemon=True)
        self._thread.start()

    def wired_level(self, name: str) -> bool | None:
        return self._levels.get(pin_key(name))

    def _follow(self) -> None:
        """Apply each relay change to its pin (callbacks fire here, as in lgpio's thread)."""
        with contextlib.suppress(OSError, ValueError):  # closed: by close(), or the board went
            while line := self._push_reader.readline():
                _, key, level = line.decode().split()
                self._levels[key] = level == "1"
                for pin in list(self.pins.values()):
                    if pin_key(pin.info.name) == key:
                        pin._follow_wire()
                self._push.sendall(b"ACK\n")

    def report_output(self, name: str, level: bool) -> None:
        with self._out_lock:
            self._out.sendall(f"OUT {pin_key(name)} {int(level)}\n".encode())
            reply = self._out_reader.readline().decode().strip()
        if reply != "OK":
            raise OSError(f"relay board: OUT {name} -> {reply or 'closed'}")

    def close(self) -> None:
        super().close()  # pins released first: their outputs reported dark
        for sock in (self._push, self._out):
            with contextlib.suppress(OSError):  # the board may have gone first
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        self._thread.join(WIRE_TIMEOUT_S)
