"""Backend selection for the HIL device tests: the simulators, or a real rig.

One test body, two backends (as python-can's back-to-back tests and gpiozero's
real-pin tests do): every HIL device test runs against the simulators; when
``TABLE_HIL_RIG`` names a rig file (TOML, see docs/wiring.md) it runs against
the rig's real shoe, shuffler, display and relay board as well. Without it the
rig variants are skipped with a reason that says how to enable them.

A test gets a ``Bench`` per device kind; it says where the driver connects and
how the test acts as dealer/player: ``SimBench`` objects drive the simulators,
``RigBench`` objects drive the rig's card feeder and relay board. Fault
injection exists only on the simulators; a rig variant of such a test skips.
"""

from __future__ import annotations

import os
import socket
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from drivers.seats import SeatPins

RIG_ENV = "TABLE_HIL_RIG"
NO_RIG_REASON = f"no rig: set {RIG_ENV}=path/to/rig.toml (docs/wiring.md, 'HIL rig file')"
FEEDER_TIMEOUT_S = 10.0
"""The rig's card feeder answers one DRAW within this time (one card per ~0.5 s, plus margin)."""


class RigConfigError(ValueError):
    """The rig file is missing a key or has a wrong value; the message names it."""


@dataclass(frozen=True)
class RigConfig:
    """A HIL rig's devices and pins, read from the file ``TABLE_HIL_RIG`` names."""

    path: str
    shoe_url: str
    shoe_feeder_socket: str | None
    shuffler_vendor_id: int
    shuffler_product_id: int
    shuffler_backend: str
    display_url: str | None
    pin_factory: str
    factory_options: Mapping[str, Any]
    lockout_pin: int | str
    relay_socket: str
    seats: Mapping[int, SeatPins] = field(default_factory=dict)


def _get(table: Mapping[str, Any], key: str, where: str, kind: type | tuple[type, ...],
         default: Any = ...) -> Any:
    if key not in table:
        if default is ...:
            raise RigConfigError(f"{where}.{key}: missing")
        return default
    value = table[key]
    if not isinstance(value, kind):
        raise RigConfigError(f"{where}.{key} = {value!r}: expected {kind}")
    return value


def load_rig(path: str | os.PathLike[str]) -> RigConfig:
    """Read a rig file; raises RigConfigError naming the key and what is allowed."""
    try:
        data = tomllib.loads(Path(path).read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise RigConfigError(f"{RIG_ENV}={path}: {exc}") from exc
    shoe = _get(data, "shoe", "rig", dict)
    shuffler = _get(data, "shuffler", "rig", dict)
    display = _get(data, "display", "rig", dict, {})
    gpio = _get(data, "gpio", "rig", dict)
    seats_table = _get(data, "seats", "rig", dict)
    seats: dict[int, SeatPins] = {}
    for key, pins in seats_table.items():
        if not key.isdigit() or not isinstance(pins, dict):
            raise RigConfigError(f"seats.{key}: expected '<seat number> = {{ sensor_pin, led_pin }}'")
        seats[int(key)] = SeatPins(_get(pins, "sensor_pin", f"seats.{key}", (int, str)),
                                   _get(pins, "led_pin", f"seats.{key}", (int, str)))
    return RigConfig(
        path=str(path),
        shoe_url=_get(shoe, "url", "shoe", str),
        shoe_feeder_socket=_get(shoe, "feeder_socket", "shoe", str, None),
        shuffler_vendor_id=_get(shuffler, "vendor_id", "shuffler", int),
        shuffler_product_id=_get(shuffler, "product_id", "shuffler", int),
        shuffler_backend=_get(shuffler, "backend", "shuffler", str, ""),
        display_url=_get(display, "url", "display", str, None),
        pin_factory=_get(gpio, "pin_factory", "gpio", str, "lgpio"),
        factory_options=_get(gpio, "factory_options", "gpio", dict, {}),
        lockout_pin=_get(gpio, "lockout_pin", "gpio", (int, str)),
        relay_socket=_get(gpio, "relay_socket", "gpio", str),
        seats=seats,
    )


def rig_from_env() -> RigConfig | None:
    """The rig ``TABLE_HIL_RIG`` names, or None when it is not set."""
    path = os.environ.get(RIG_ENV, "").strip()
    return load_rig(path) if path else None


class CardFeeder:
    """The rig's card-feeding robot: one line ``DRAW`` -> ``OK`` once a card left the shoe.

    The card itself is reported by the real shoe over its serial link; the feeder
    only pulls it out, like a dealer's hand.
    """

    def __init__(self, socket_path: str) -> None:
        self.socket_path = socket_path

    def draw(self) -> None:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(FEEDER_TIMEOUT_S)
            sock.connect(self.socket_path)
            sock.sendall(b"DRAW\n")
            reply = sock.makefile("rb").readline().decode("ascii", "replace").strip()
        if reply != "OK":
            raise RuntimeError(f"card feeder {self.socket_path}: DRAW -> {reply or 'closed'}")
