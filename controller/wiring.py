"""What the daemon is built from: the configuration's drivers, each optional device as the
Protocol the daemon drives it through, and the table's store, checked at opening."""

from __future__ import annotations

import os
from collections.abc import Mapping

from controller.config import TableConfig
from controller.memory.critical import IntegrityError
from controller.memory.store import Store
from drivers.protocols import Device

BOOT_CHAIN_LIMIT = 20_000
"""At start, the log's entries since the last full check are read before ready only if there
are at most this many (about 0.1 s here, 0.5 s on a Pi 4): a tampered recent entry then puts
the table out of order at once. Any longer stretch, and all of the history in any case, is
left to the full check that runs alongside the start (controller/memory/history_check.py)."""


def build_devices(config: TableConfig) -> dict[str, Device]:
    """Create the drivers the configuration names (nothing is opened yet)."""
    from controller.rules.submission import seat_rule
    from drivers.reconnect import RECONNECT_INITIAL_DELAY_S, ReconnectPolicy
    from drivers.seats import GpioSeatPanel, SeatPins
    from drivers.shoe import SerialShoe

    devices: dict[str, Device] = {
        "shoe": SerialShoe("shoe", config.shoe.url, baudrate=config.shoe.baudrate,
                           firmware_versions=config.shoe.firmware_versions,
                           reconnect=ReconnectPolicy(
                               initial_delay_s=min(RECONNECT_INITIAL_DELAY_S,
                                                   config.shoe.reconnect_max_s),
                               max_delay_s=config.shoe.reconnect_max_s)),
        "seats": GpioSeatPanel(
            "seats",
            {w.seat: SeatPins(w.sensor_pin, w.led_pin) for w in config.gpio.seats},
            config.gpio.lockout_pin, pin_factory=config.gpio.pin_factory,
            factory_options=dict(config.gpio.factory_options),
            debounce_s=config.gpio.debounce_ms / 1000,
            led_pin_factory=config.gpio.led_pin_factory,
            led_factory_options=dict(config.gpio.led_factory_options),
            seat_rule=seat_rule(config.submission.game.family)),
    }
    if config.shuffler.enabled:
        from drivers.shuffler import UsbShuffler

        devices["shuffler"] = UsbShuffler("shuffler", config.shuffler.vendor_id,
                                          config.shuffler.product_id,
                                          backend=config.shuffler.backend,
                                          firmware_versions=config.shuffler.firmware_versions)
    if config.display.enabled:
        from drivers.display import SerialDisplay

        devices["display"] = SerialDisplay("display", config.display.url,
                                           baudrate=config.display.baudrate,
                                           firmware_versions=config.display.firmware_versions)
    return devices


def device_as(devices: Mapping[str, Device], name: str, protocol: type) -> Device | None:
    """The configured device `name` as the Protocol the daemon drives it through, or None.

    A device object lacking one of the Protocol's methods is a wiring error: it is
    named with what is missing instead of failing later at the first call.
    """
    device = devices.get(name)
    if device is None:
        return None
    if not isinstance(device, protocol):
        missing = sorted(m for m in dir(protocol)
                         if not m.startswith("_") and not hasattr(device, m))
        raise TypeError(f"device {name!r} ({type(device).__name__}) lacks "
                        f"{', '.join(missing)}: it must implement {protocol.__name__} "
                        "(drivers/protocols.py)")
    return device


def secure_store_files(path: str) -> None:
    """The store holds the armed Must-Hit-By Mystery trigger: only the daemon's user may
    read it (the trigger's commitment is in the event log, which anyone may read)."""
    if path == ":memory:":
        return
    for name in (path, f"{path}-wal", f"{path}-shm"):
        try:
            os.chmod(name, 0o600)
        except FileNotFoundError:
            pass


def open_checked_store(config: TableConfig) -> tuple[Store, IntegrityError | None]:
    """The table's store, checked; or, if it fails, an empty in-memory stand-in (so the
    daemon can report the failure and refuse play) and the failure. The file on disk is
    then never written: it is the evidence."""
    from controller.memory.lifecycle import open_store

    try:
        return open_store(config.store_path, config.critical_dir,
                          flush_delay_s=config.store_flush_delay_ms / 1000,
                          anchor_interval_s=config.store_anchor_interval_s,
                          seal_every_step=config.store_seal_every_step,
                          chain_limit=BOOT_CHAIN_LIMIT), None
    except IntegrityError as exc:
        return Store(":memory:"), exc
