"""Backend selection for the HIL device tests: the simulators, or a real rig.

One test body, two backends (as python-can's back-to-back tests and gpiozero's
real-pin tests do): every HIL device test runs against the simulators; when
``TABLE_HIL_RIG`` names a rig file (TOML, see docs/wiring.md) it runs against
the rig's real shoe, shuffler, display and relay board as well. Without it the
rig variants are skipped with a reason that says how to enable them.

A test gets a bench per device kind (``ShoeBench``, ``SeatBench``... in
hil/conftest.py): where the driver connects and how the test acts as dealer and
player, through the simulators or through the rig's card feeder and relay board.
Fault injection exists only on the simulators; a rig variant of such a test
skips, as does a test needing a device the rig file has no section for, before
any device is connected. A rig keeps its state between tests (a relay stays
closed, a shoe is not reloaded): every rig test leaves the relays and LEDs as
it found them (``bench_state``), and reads card indexes from the first it sees.
"""

from __future__ import annotations

import os
import socket
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.errors import shown_setting
from controller.text_files import read_toml
from drivers.seats import MAX_SEATS, SeatPins

TABLE_A = {seat: SeatPins(sensor_pin=s, led_pin=led)
           for seat, (s, led) in enumerate(zip([4, 5, 6, 12, 13, 16, 17, 18, 19, 20],
                                               [21, 22, 23, 24, 25, 26, 27, 7, 8, 9]), start=1)}
"""docs/wiring.md, table A: ten seats (631a.2(a)) on a Pi's header, the button on GPIO 10."""
TABLE_A_LOCKOUT_PIN = 10

RIG_ENV = "TABLE_HIL_RIG"
NO_RIG_REASON = f"no rig: set {RIG_ENV}=path/to/rig.toml (docs/wiring.md, 'HIL rig file')"
FEEDER_TIMEOUT_S = 10.0
"""The rig's card feeder answers one DRAW within this time (one card per ~0.5 s, plus margin)."""


class RigConfigError(ValueError):
    """The rig file is missing a key or has a wrong value; the message names it."""


@dataclass(frozen=True)
class RigShoe:
    url: str
    feeder_socket: str | None
    """The card-feeding robot (``DRAW`` -> ``OK``); None: the rig cannot deal by itself."""


@dataclass(frozen=True)
class RigShuffler:
    vendor_id: int
    product_id: int
    backend: str
    backend_socket: str | None
    """Exported as ``TABLE_USB_BRIDGE_SOCKET`` for a backend reached over a socket (hil.usb_bridge)."""
    batch_cards: int | None
    """Cards in the batch the shuffler holds when a test starts; None: unknown, and the
    test that shuffles it skips."""


@dataclass(frozen=True)
class RigGpio:
    pin_factory: str
    factory_options: Mapping[str, Any]
    lockout_pin: int | str
    relay_socket: str
    seats: Mapping[int, SeatPins]

    def relay_pins(self) -> list[int | str]:
        """Every pin a relay drives: the seat sensors and the lock-out button."""
        return [p.sensor_pin for _, p in sorted(self.seats.items())] + [self.lockout_pin]

    def led_pins(self) -> list[int | str]:
        """Every pin a photodiode reads: the seat LEDs."""
        return [p.led_pin for _, p in sorted(self.seats.items())]


@dataclass(frozen=True)
class RigConfig:
    """A HIL rig's devices and pins, read from the file ``TABLE_HIL_RIG`` names.

    Every device is optional: a rig without one skips that device's tests with
    ``lacks(device)``, before any device is connected.
    """

    path: str
    shoe: RigShoe | None = None
    shuffler: RigShuffler | None = None
    display_url: str | None = None
    gpio: RigGpio | None = None

    def lacks(self, device: str) -> str | None:
        """Why the rig cannot run a test that needs ``device`` (None: it can)."""
        missing = {
            "shoe": self.shoe is None,
            "card feeder": self.shoe is not None and self.shoe.feeder_socket is None,
            "shuffler": self.shuffler is None,
            "display": self.display_url is None,
            "relay board": self.gpio is None,
            "known batch": self.shuffler is not None and self.shuffler.batch_cards is None,
        }
        if device == "card feeder" and self.shoe is None:
            return self.lacks("shoe")
        if device == "known batch" and self.shuffler is None:
            return self.lacks("shuffler")
        if missing[device]:
            return f"rig has no {device} ({RIG_SECTIONS[device]} in {self.path})"
        return None


RIG_SECTIONS = {"shoe": "[shoe]", "card feeder": "[shoe] feeder_socket", "shuffler": "[shuffler]",
                "display": "[display]", "relay board": "[gpio] and [seats]",
                "known batch": "[shuffler] batch_cards"}
_KEYS = {
    "shoe": {"url", "feeder_socket"},
    "shuffler": {"vendor_id", "product_id", "backend", "backend_socket", "batch_cards"},
    "display": {"url"},
    "gpio": {"pin_factory", "factory_options", "lockout_pin", "relay_socket"},
}
PIN_ALLOWED = "a BCM GPIO number 0-53 or a pin name like 'GPIO17'"


def _get(table: Mapping[str, Any], key: str, where: str, kind: type | tuple[type, ...],
         default: Any = ...) -> Any:
    if key not in table:
        if default is ...:
            raise RigConfigError(f"{where}.{key}: missing")
        return default
    value = table[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise RigConfigError(f"{where}.{key} = {shown_setting(value)}: expected {names}")
    return value


def _known(table: Mapping[str, Any], where: str, allowed: set[str]) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise RigConfigError(f"{where}.{unknown[0]}: unknown key; allowed: {', '.join(sorted(allowed))}")


def _beside(folder: Path, value: str | None) -> str | None:
    """A relative path names a file in the rig file's own folder; URLs and absolute paths stay."""
    if value is None or "://" in value or os.path.isabs(value):
        return value
    return str(folder / value)


def _pin(table: Mapping[str, Any], key: str, where: str) -> int | str:
    value = _get(table, key, where, (int, str))
    if isinstance(value, int) and not 0 <= value <= 53 or value == "":
        raise RigConfigError(f"{where}.{key} = {shown_setting(value)}: expected {PIN_ALLOWED}")
    return value  # type: ignore[no-any-return]


def _usb_id(table: Mapping[str, Any], key: str) -> int:
    value = _get(table, key, "shuffler", int)
    if not 0x0001 <= value <= 0xFFFF:
        raise RigConfigError(f"shuffler.{key} = {value:#x}: expected a USB id 0x0001-0xFFFF")
    return value  # type: ignore[no-any-return]


def _batch_cards(shuffler: Mapping[str, Any]) -> int | None:
    value = _get(shuffler, "batch_cards", "shuffler", int, None)
    if value is not None and not 52 <= value <= 8 * 52:
        raise RigConfigError(f"shuffler.batch_cards = {value}: expected 52 to 416 (one to eight decks)")
    return value  # type: ignore[no-any-return]


def _gpio(gpio: Mapping[str, Any], seats_table: Mapping[str, Any], folder: Path) -> RigGpio:
    """[gpio] and [seats], checked by the same rules the daemon's seat panel applies."""
    from drivers.seats import GpioSeatPanel, SeatPanelConfigError

    _known(gpio, "gpio", _KEYS["gpio"])
    pin_factory = _get(gpio, "pin_factory", "gpio", str, "lgpio")
    if pin_factory == "mock":
        raise RigConfigError(
            "gpio.pin_factory = 'mock': gpiozero's mock pins live inside the test's process, "
            "where no relay board (gpio.relay_socket) can reach them; use 'lgpio' on a Pi or an "
            "import path 'module:attr' to a factory the relay board drives")
    seats: dict[int, SeatPins] = {}
    for key, pins in seats_table.items():
        if not key.isdecimal() or not 1 <= int(key) <= MAX_SEATS or not isinstance(pins, dict):
            raise RigConfigError(f"seats.{key}: expected '<seat number 1-{MAX_SEATS}> = "
                                 "{ sensor_pin = PIN, led_pin = PIN }' (631a.2(a))")
        _known(pins, f"seats.{key}", {"sensor_pin", "led_pin"})
        seats[int(key)] = SeatPins(_pin(pins, "sensor_pin", f"seats.{key}"),
                                   _pin(pins, "led_pin", f"seats.{key}"))
    rig_gpio = RigGpio(pin_factory=pin_factory,
                       factory_options=_get(gpio, "factory_options", "gpio", dict, {}),
                       lockout_pin=_pin(gpio, "lockout_pin", "gpio"),
                       relay_socket=str(_beside(folder, _get(gpio, "relay_socket", "gpio", str))),
                       seats=seats)
    try:  # 631a.2(a): 10 to 14 seats; each pin used once; the factory importable
        GpioSeatPanel("seats", seats, rig_gpio.lockout_pin, pin_factory=pin_factory,
                      factory_options=rig_gpio.factory_options)
    except SeatPanelConfigError as exc:
        raise RigConfigError(str(exc)) from exc
    return rig_gpio


def load_rig(path: str | os.PathLike[str]) -> RigConfig:
    """Read a rig file; raises RigConfigError naming the key and what is allowed.

    Relative paths in it (``url``, ``feeder_socket``, ``relay_socket``,
    ``backend_socket``) resolve from the rig file's own folder.
    """
    try:
        data = read_toml(path)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise RigConfigError(f"{RIG_ENV}={path}: {exc}") from exc
    try:
        return _parse(data, str(path))
    except RigConfigError as exc:
        raise RigConfigError(f"{RIG_ENV}={path}: {exc}") from None


def _parse(data: Mapping[str, Any], path: str) -> RigConfig:
    folder = Path(path).resolve().parent
    _known(data, "rig", {"shoe", "shuffler", "display", "gpio", "seats"})
    shoe = _get(data, "shoe", "rig", dict, None)
    shuffler = _get(data, "shuffler", "rig", dict, None)
    display = _get(data, "display", "rig", dict, None)
    gpio = _get(data, "gpio", "rig", dict, None)
    seats = _get(data, "seats", "rig", dict, None)
    if (gpio is None) != (seats is None):
        raise RigConfigError("[gpio] and [seats] go together: a relay board needs both "
                             f"(found only [{'gpio' if seats is None else 'seats'}])")
    if shoe is None and shuffler is None and display is None and gpio is None:
        raise RigConfigError("no device: expected at least one of [shoe], [shuffler], [display], "
                             "[gpio] with [seats]")
    for name, table in (("shoe", shoe), ("shuffler", shuffler), ("display", display)):
        if table is not None:
            _known(table, name, _KEYS[name])
    return RigConfig(
        path=path,
        shoe=None if shoe is None else RigShoe(
            str(_beside(folder, _get(shoe, "url", "shoe", str))),
            _beside(folder, _get(shoe, "feeder_socket", "shoe", str, None))),
        shuffler=None if shuffler is None else RigShuffler(
            _usb_id(shuffler, "vendor_id"), _usb_id(shuffler, "product_id"),
            _get(shuffler, "backend", "shuffler", str, ""),
            _beside(folder, _get(shuffler, "backend_socket", "shuffler", str, None)),
            _batch_cards(shuffler)),
        display_url=None if display is None else _beside(folder, _get(display, "url", "display", str)),
        gpio=None if gpio is None else _gpio(gpio, seats, folder),
    )


def rig_from_env() -> RigConfig | None:
    """The rig ``TABLE_HIL_RIG`` names, or None when it is not set."""
    path = os.environ.get(RIG_ENV, "").strip()
    return load_rig(path) if path else None


def bench_state(gpio: RigGpio) -> dict[str, bool]:
    """What the relay board sees: each relay pin's line and each LED's photodiode."""
    from hil.mock_pins import PinBridgeClient

    with PinBridgeClient(gpio.relay_socket) as board:
        return {str(pin): board.read_output(pin) for pin in gpio.relay_pins() + gpio.led_pins()}


def bench_changes(gpio: RigGpio, before: Mapping[str, bool], after: Mapping[str, bool]) -> list[str]:
    """What a test left different on the bench, one phrase per pin."""
    roles = {str(p.sensor_pin): f"seat {seat}'s sensor relay" for seat, p in gpio.seats.items()}
    roles[str(gpio.lockout_pin)] = "the lock-out button's relay"
    roles |= {str(p.led_pin): f"seat {seat}'s LED" for seat, p in gpio.seats.items()}
    leds = {str(p) for p in gpio.led_pins()}

    def level(pin: str, value: bool) -> str:
        if pin in leds:
            return "lit" if value else "dark"
        return "released (line high)" if value else "pressed (line low)"

    return [f"{roles[pin]} (pin {pin}) left {level(pin, after[pin])}; "
            f"the test found it {level(pin, before[pin])}"
            for pin in before if after.get(pin) != before[pin]]


class CardFeeder:
    """The rig's card-feeding robot: one line ``DRAW`` -> ``OK`` once a card left the shoe
    (``ERR <reason>`` if it could not deal; the connection may be kept for more lines).

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
