"""The table's configuration file: its Rules Submission plus the devices, store and control socket.

The game sections (`[table]`, `[game]`, `[wagers.*]`) are validated by the
rules engine (`controller.rules.submission`); this module validates the rest
with the same promise: every error names the file, the key, the bad value and
what is allowed, and all errors are reported at once.
"""

from __future__ import annotations

import os
import stat
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from controller.access import AccessConfig, parse_access
from controller.auth import read_secrets
from controller.errors import ConfigurationError
from controller.memory.anchor import ANCHOR_INTERVAL_RANGE_S, ANCHOR_INTERVAL_S
from controller.memory.flush_in import FLUSH_IN, FLUSH_IN_LOOP
from controller.software import parse_software
from controller.config_checks import (
    ConfigReader, check_control_socket, check_feature_packages, check_import_path,
    check_pin_hash, check_store_path, is_serial_port, serial_port_allowed,
)
from controller.config_types import (
    DEFAULT_BAUDRATE, DEFAULT_DEBOUNCE_MS, DEFAULT_RECONNECT_MAX_S, DisplayConfig, GpioConfig, SeatWiring, ShoeConfig,
    ShufflerConfig,
)
from controller.config_types import TableConfig as TableConfig  # where its callers import it
from controller.text_files import read_toml

# 631a.2(a): numbered positions for 10 to 14 seated players.
MIN_SEATS, MAX_SEATS = 10, 14
BAUDRATES = (9600, 19200, 38400, 57600, 115200, 230400)
# The sections this module (and the packages it calls) checks; the Rules Submission's are
# `[table]`, `[game]` and `[wagers.*]`. Any other top-level section is refused as unknown.
# controller.rules.submission.OTHER_OWNED_SECTIONS lists the same names (a test holds them
# equal), so a Rules Submission tool reading a whole table configuration skips them.
DEVICE_SECTIONS = ("shoe", "shuffler", "gpio", "display", "store", "control",
                   "progressive", "linked", "mqtt", "supervisors", "access", "metrics",
                   "witness", "software", "display_service")
METRICS_HOSTS = ("127.0.0.1", "::1", "localhost")  # the daemon serves its metrics locally only


class ConfigError(ConfigurationError):
    """The configuration is wrong; `problems` lists every error found."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"{source}: {len(problems)} configuration error(s):\n{lines}")


def _pin(value: Any) -> bool:
    return isinstance(value, str) and bool(value) or (isinstance(value, int) and 0 <= value <= 53)


_COLOURS = ("red", "blue", "green", "black")
_BAUD_ALLOWED = "one of " + ", ".join(str(b) for b in BAUDRATES)


def _firmware_versions(c: ConfigReader, section: Mapping[str, Any], path: str
                       ) -> tuple[str, ...] | None:
    """The device's approved firmware versions; a device reporting another is refused."""
    value = section.get("firmware_versions")
    if value is None:
        return None
    if isinstance(value, list) and value and all(isinstance(v, str) and v for v in value):
        return tuple(value)
    c.report.add(f"{path}.firmware_versions", value, "a non-empty list of the approved firmware "
                 "version strings, e.g. [\"shoe-fw 2.1\"]")
    return None


def _batches(c: ConfigReader, shuffler: Mapping[str, Any]) -> tuple[str, str] | None:
    value = shuffler.get("batches")
    if value is None:
        return None
    if (isinstance(value, list) and len(value) == 2 and all(v in _COLOURS for v in value)
            and value[0] != value[1]):
        return (value[0], value[1])
    c.report.add("shuffler.batches", value, f"two different back colours of {', '.join(_COLOURS)} "
                 "(681a.3(b)(2)), e.g. [\"red\", \"blue\"]")
    return None


_BACKEND_ALLOWED = "empty for libusb, or an importable pyusb backend 'module:attribute'"


def _wager_limits(c: ConfigReader, submission: Any) -> None:
    """A table's every wager has a minimum and a maximum (631a.8(a): posted limits); a
    missing one would let the daemon accept 1 cent to its ceiling."""
    from controller.rules.submission import MAX_WAGER_CENTS  # the range the rules enforce

    for wager in submission.wagers:
        for bound, value in (("min_cents", wager.min_cents), ("max_cents", wager.max_cents)):
            if value is None:
                c.report.missing(f"wagers.{wager.key}.{bound}",
                                 f"the table's {bound[:3]}imum for this wager in cents, 1 to "
                                 f"{MAX_WAGER_CENTS:,} (a table configuration posts both)")


def parse_config(data: Mapping[str, Any], source: str, *,
                 file_mode: int | None = None) -> TableConfig:
    """Validate a parsed TOML document; raise ConfigError listing every problem."""
    from controller.rules.submission import SubmissionError, parse_submission

    c = ConfigReader(source, data)
    submission = None
    try:
        # The rules parser sees only its own sections; the device sections are checked below.
        submission = parse_submission(
            {k: v for k, v in data.items() if k not in DEVICE_SECTIONS}, source)
    except SubmissionError as exc:
        c.problems.extend(line.removeprefix(f"{source}: ") for line in exc.errors or [str(exc)])

    shoe_t = c.table("shoe")
    c.unknown(shoe_t, "shoe", {"url", "baudrate", "firmware_versions", "reconnect_max_s"})
    shoe = ShoeConfig(
        url=c.get(shoe_t, "shoe", "url", str,
                  serial_port_allowed("/dev/ttyUSB0", "/dev/baccarat-shoe", "socket://host:port"),
                  check=is_serial_port) or "",
        baudrate=c.get(shoe_t, "shoe", "baudrate", int, _BAUD_ALLOWED, DEFAULT_BAUDRATE,
                       check=lambda v: v in BAUDRATES),
        firmware_versions=_firmware_versions(c, shoe_t, "shoe"),
        reconnect_max_s=float(c.get(
            shoe_t, "shoe", "reconnect_max_s", (int, float), "0.5 to 60 seconds",
            DEFAULT_RECONNECT_MAX_S, check=lambda v: 0.5 <= v <= 60)),
    )

    sh_t = c.table("shuffler", required=False)
    c.unknown(sh_t, "shuffler", {"enabled", "vendor_id", "product_id", "backend", "batches",
                                 "firmware_versions"})
    sh_enabled = c.get(sh_t, "shuffler", "enabled", bool, "true or false", bool(sh_t))
    def usb_id(value: int) -> bool:
        return 0 < value <= 0xFFFF

    shuffler = ShufflerConfig(
        enabled=sh_enabled,
        vendor_id=c.get(sh_t, "shuffler", "vendor_id", int, "a USB vendor id 0x0001-0xFFFF",
                        ... if sh_enabled else 0, check=usb_id) or 0,
        product_id=c.get(sh_t, "shuffler", "product_id", int, "a USB product id 0x0001-0xFFFF",
                         ... if sh_enabled else 0, check=usb_id) or 0,
        backend=c.get(sh_t, "shuffler", "backend", str, _BACKEND_ALLOWED, "",
                      check=lambda v: v == "" or ":" in v),
        batches=_batches(c, sh_t),
        firmware_versions=_firmware_versions(c, sh_t, "shuffler"),
    )

    gpio_t = c.table("gpio")
    c.unknown(gpio_t, "gpio", {"pin_factory", "lockout_pin", "debounce_ms", "seats",
                               "factory_options", "led_pin_factory", "led_factory_options"})
    factory_allowed = "'lgpio' (Raspberry Pi), 'mock', or an import path 'module:attribute'"

    def factory_ok(value: str) -> bool:
        return value in ("lgpio", "mock") or ":" in value

    led_factory = c.get(gpio_t, "gpio", "led_pin_factory", str, factory_allowed, None,
                        check=factory_ok)
    seats_t = gpio_t.get("seats", {})
    seats: list[SeatWiring] = []
    if not isinstance(seats_t, Mapping):
        c.report.add("gpio.seats", seats_t, "a table of seat number -> {sensor = PIN, led = PIN}")
        seats_t = {}
    for seat_key, wiring in seats_t.items():
        path = f"gpio.seats.{seat_key}"
        if not (seat_key.isdecimal() and 1 <= int(seat_key) <= MAX_SEATS):
            c.report.add(path, wiring, f"seat numbers 1 to {MAX_SEATS} (631a.2(a))")
            continue
        if not isinstance(wiring, Mapping):
            c.report.add(path, wiring, "{sensor = PIN, led = PIN}")
            continue
        c.unknown(wiring, path, {"sensor", "led"})
        sensor = c.get(wiring, path, "sensor", (int, str), "a BCM GPIO number 0-53 or a pin name",
                       check=_pin)
        led = c.get(wiring, path, "led", (int, str), "a BCM GPIO number 0-53 or a pin name",
                    check=_pin)
        seats.append(SeatWiring(int(seat_key), sensor, led))
    # LEDs on their own factory use that factory's line numbers, not the header's.
    pins = [p for s in seats for p in (s.sensor_pin,) + (() if led_factory else (s.led_pin,))]
    lockout = c.get(gpio_t, "gpio", "lockout_pin", (int, str), "a BCM GPIO number 0-53",
                    check=_pin)
    pins.append(lockout)
    duplicates = sorted({str(p) for p in pins if p is not None and pins.count(p) > 1})
    if duplicates:
        c.report.clash("gpio", f"pin(s) {', '.join(duplicates)} wired to more than one input or "
                       "output", "each pin used once")
    if submission is not None and len(seats) != submission.table.seats:
        c.report.clash("gpio.seats", f"{len(seats)} seats wired but table.seats = "
                       f"{submission.table.seats}", "one sensor and LED per seat")
    gpio = GpioConfig(
        pin_factory=c.get(gpio_t, "gpio", "pin_factory", str, factory_allowed,
                          check=factory_ok) or "",
        lockout_pin=lockout,
        seats=tuple(sorted(seats, key=lambda s: s.seat)),
        debounce_ms=c.get(gpio_t, "gpio", "debounce_ms", int, "0 to 500 milliseconds",
                          DEFAULT_DEBOUNCE_MS, check=lambda v: 0 <= v <= 500),
        factory_options=c.get(gpio_t, "gpio", "factory_options", Mapping,
                              "a table of options for the pin factory", {}),
        led_pin_factory=led_factory,
        led_factory_options=c.get(gpio_t, "gpio", "led_factory_options", Mapping,
                                  "a table of options for the LEDs' pin factory", {}),
    )

    disp_t = c.table("display", required=False)
    c.unknown(disp_t, "display", {"enabled", "url", "baudrate", "firmware_versions"})
    disp_enabled = c.get(disp_t, "display", "enabled", bool, "true or false", bool(disp_t))
    display = DisplayConfig(
        enabled=disp_enabled,
        url=c.get(disp_t, "display", "url", str, serial_port_allowed("/dev/ttyUSB1"),
                  ... if disp_enabled else "",
                  check=lambda v: is_serial_port(v) or not (v or disp_enabled)) or "",
        baudrate=c.get(disp_t, "display", "baudrate", int, _BAUD_ALLOWED, DEFAULT_BAUDRATE,
                       check=lambda v: v in BAUDRATES),
        firmware_versions=_firmware_versions(c, disp_t, "display"),
    )

    store_t = c.table("store")
    c.unknown(store_t, "store", {"path", "flush_delay_ms", "critical_dir", "anchor_interval_s",
                                 "seal_every_step", "flush_in"})
    store_path = c.get(store_t, "store", "path", str, "a file path, e.g. "
                       "/var/lib/tabled/table.sqlite", check=bool) or ""
    if store_path:
        check_store_path(c.report, store_path)
    critical_dir = c.get(store_t, "store", "critical_dir", str, "a directory only the daemon's "
                         "user can open, e.g. /var/lib/tabled/table.critical", "") or ""
    flush_delay_ms = c.get(store_t, "store", "flush_delay_ms", (int, float),
                           "0 to 1000 milliseconds (a stand-in for slow storage in benchmarks "
                           "and tests; leave it out at a table)", 0,
                           check=lambda v: 0 <= v <= 1000)
    # docs/rulings.md C24: how far the anchor may lag the store (a rollback by less passes
    # for a power cut when no witness is configured).
    low, high = ANCHOR_INTERVAL_RANGE_S
    anchor_interval_s = c.get(store_t, "store", "anchor_interval_s", (int, float),
                              f"{low:g} to {high:g} seconds (how far the anchor may lag the "
                              "store; docs/rulings.md C24)", ANCHOR_INTERVAL_S,
                              check=lambda v: low <= v <= high)
    # docs/rulings.md C29: a card's step inside a round waits for the next flush's seal,
    # unless the operator's regulator wants every step sealed by itself.
    seal_every_step = c.get(store_t, "store", "seal_every_step", bool, "true or false (true: "
                            "every step sealed by itself, a card's too; docs/rulings.md C29)",
                            False)
    # docs/rulings.md C30: where group commit's flush runs.
    flush_in = c.get(store_t, "store", "flush_in", str, "'loop' (the event loop's thread "
                     "flushes and reports at once) or 'thread' (a thread of its own, the loop "
                     "going on meanwhile; docs/rulings.md C30)", FLUSH_IN_LOOP,
                     check=lambda v: v in FLUSH_IN)

    ctl_t = c.table("control")
    c.unknown(ctl_t, "control", {"socket", "mode"})
    control_socket = c.get(ctl_t, "control", "socket", str, "a Unix socket path, e.g. "
                           "/run/tabled/control.sock", check=bool) or ""
    if control_socket:
        check_control_socket(c.report, control_socket)
    mode_text = c.get(ctl_t, "control", "mode", str, "'0600' (owner only) or '0660' (group)",
                      "0660", check=lambda v: v in ("0600", "0660"))

    access, supervisors = _access_and_pins(c, data, file_mode)
    software = parse_software(c.table("software", required=False), c.problems)
    # Read by the display service (its own process); checked here with the rest of the file.
    from controller.display.settings import SECTION, parse_display_service

    c.problems.extend(parse_display_service(c.table(SECTION, required=False))[1])

    metrics_t = c.table("metrics", required=False)
    c.unknown(metrics_t, "metrics", {"listen"})
    metrics_listen = _loopback_address(c.get(
        metrics_t, "metrics", "listen", str, "HOST:PORT on this machine (127.0.0.1, [::1] or "
        "localhost; PORT 1 to 65535, 0 for any free one), e.g. 127.0.0.1:9464; leave it out "
        "for no metrics "
        "endpoint", "", check=lambda v: _loopback_address(v) is not None) or "")

    progressive = None
    if any(key in data for key in ("progressive", "linked", "mqtt")):
        from controller.progressive.config import parse_progressive_config
        from controller.progressive.errors import ProgressiveConfigError

        try:
            progressive = parse_progressive_config(data, source)
        except ProgressiveConfigError as exc:
            c.problems.extend(exc.problems)
        check_feature_packages(c.report, [key for key in ("mqtt", "linked") if key in data])
    witness = _witness(c, data, submission)
    if submission is not None:
        _wager_limits(c, submission)
    if shuffler.enabled and shuffler.backend:
        check_import_path(c.report, "shuffler.backend", shuffler.backend, _BACKEND_ALLOWED)

    if c.problems:
        raise ConfigError(source, c.problems)
    return TableConfig(
        source=source, raw=data, submission=submission, progressive=progressive, shoe=shoe, shuffler=shuffler, gpio=gpio,
        display=display, store_path=store_path, control_socket=control_socket,
        control_socket_mode=int(mode_text or "0660", 8), supervisor_pin_hashes=supervisors,
        access=access,
        store_flush_delay_ms=float(flush_delay_ms), critical_dir=critical_dir,
        store_anchor_interval_s=float(anchor_interval_s),
        store_seal_every_step=bool(seal_every_step),
        store_flush_in=str(flush_in or FLUSH_IN_LOOP),
        metrics_listen=metrics_listen,
        witness=witness,
        software=software,
    )


def _loopback_address(text: str) -> tuple[str, int] | None:
    """'127.0.0.1:9464' -> ('127.0.0.1', 9464); None if empty or not a loopback HOST:PORT."""
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not port.isdecimal() or not 0 <= int(port) <= 65535 or host not in METRICS_HOSTS:
        return None
    return host, int(port)


def _witness(c: ConfigReader, data: Mapping[str, Any], submission: Any) -> Any:
    """`[witness]` (controller/witness/config.py); it needs psycopg and cryptography."""
    if "witness" not in data:
        return None
    from controller.witness.config import parse_witness

    table_id = str(submission.table.id) if submission is not None else ""
    witness = parse_witness(data["witness"], table_id, c.report)
    check_feature_packages(c.report, ["witness"])
    return witness


def apply_overrides(data: dict[str, Any], overrides: list[str], source: str) -> None:
    """Apply `--set section.key=VALUE` overrides (VALUE in TOML syntax, bare words as strings)."""
    for item in overrides:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise ConfigError(source, [f"--set {item!r}: expected KEY=VALUE, e.g. "
                                       "shoe.url=/dev/ttyUSB1"])
        try:
            value = tomllib.loads(f"v = {text}")["v"]
        except (ValueError, RecursionError):  # not TOML, a number of over 4,300 digits or
            value = text  # arrays nested too deeply to read: a bare word (refused by its key)
        node = data
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(source, [f"--set {item!r}: {part} is not a table"])
        node[parts[-1]] = value


def load_config(path: str | Path, overrides: list[str] | None = None) -> TableConfig:
    source = str(path)
    try:
        data = read_toml(path)
    except OSError as exc:
        raise ConfigError(source, [f"cannot read the file: {exc.strerror or exc}"]) from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(source, [f"not valid TOML: {exc}"]) from exc
    apply_overrides(data, overrides or [], source)
    return parse_config(data, source, file_mode=stat.S_IMODE(os.stat(path).st_mode))


def _access_and_pins(c: ConfigReader, data: Mapping[str, Any], file_mode: int | None,
                     ) -> tuple[AccessConfig, dict[str, str]]:
    """`[access]`, and the supervisors' PIN hashes: from the secrets file, or (a demo
    table only, `inline_pin_hashes = true`) from `[supervisors]` in this file."""
    access = parse_access(c.table("access", required=False), c.problems)
    inline = c.table("supervisors", required=False)
    if inline and access.secrets:
        c.report.clash("supervisors", "PIN hashes here and in the secrets file "
                       f"({access.secrets})", "one place: the secrets file, so remove "
                       "[supervisors] from this file")
    elif inline and file_mode is not None and file_mode & 0o077 \
            and not access.inline_pin_hashes:
        c.report.clash("supervisors", f"PIN hashes in a file group or others can read (mode "
                       f"{file_mode:04o}) can be guessed offline", "[access] secrets = a file "
                       "of mode 0600 holding [supervisors] (docs/deployment.md), or "
                       "inline_pin_hashes = true on a demo table")
    table = inline
    if access.secrets:
        table, problems = read_secrets(access.secrets)
        c.problems.extend(problems)
    hashes = {}
    for name, digest in table.items():
        checked = check_pin_hash(c.report, name, digest)
        if checked is not None:
            hashes[str(name)] = checked
    return access, hashes