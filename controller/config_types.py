"""The table's configuration as the daemon reads it: frozen values, checked by
controller/config.py (every field here has passed its check)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from controller.access import AccessConfig
from controller.memory.anchor import ANCHOR_INTERVAL_S
from controller.memory.flush_in import FLUSH_IN_LOOP
from controller.software import SoftwareConfig
from drivers.reconnect import RECONNECT_MAX_DELAY_S

DEFAULT_BAUDRATE = 115200  # docs/protocol.md: the UART default
DEFAULT_DEBOUNCE_MS = 50  # a chip-sensor's contact settles well within this; see docs/wiring.md
DEFAULT_RECONNECT_MAX_S = RECONNECT_MAX_DELAY_S  # [shoe] reconnect_max_s: the driver's own cap


@dataclass(frozen=True)
class SeatWiring:
    seat: int
    sensor_pin: int | str
    led_pin: int | str


@dataclass(frozen=True)
class ShoeConfig:
    url: str
    baudrate: int = DEFAULT_BAUDRATE
    firmware_versions: tuple[str, ...] | None = None  # approved firmware; None accepts any
    # The cap on the wait between attempts to reopen a lost shoe link (drivers/reconnect.py)
    reconnect_max_s: float = DEFAULT_RECONNECT_MAX_S


@dataclass(frozen=True)
class ShufflerConfig:
    enabled: bool
    vendor_id: int = 0
    product_id: int = 0
    backend: str = ""
    batches: tuple[str, str] | None = None  # 681a.3(b): the two back colours that alternate
    firmware_versions: tuple[str, ...] | None = None


@dataclass(frozen=True)
class GpioConfig:
    pin_factory: str
    lockout_pin: int | str
    seats: tuple[SeatWiring, ...]
    debounce_ms: int = DEFAULT_DEBOUNCE_MS
    factory_options: Mapping[str, Any] = field(default_factory=dict)
    # 13-14 seats need more lines than a Pi header has: the LEDs go on an I/O expander
    # with its own pin factory (docs/wiring.md, table B).
    led_pin_factory: str | None = None
    led_factory_options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class DisplayConfig:
    enabled: bool
    url: str = ""
    baudrate: int = DEFAULT_BAUDRATE
    firmware_versions: tuple[str, ...] | None = None


@dataclass(frozen=True)
class TableConfig:
    source: str
    raw: Mapping[str, Any]
    submission: Any  # controller.rules.submission.Submission
    progressive: Any  # controller.progressive.config.ProgressiveConfig, or None
    shoe: ShoeConfig
    shuffler: ShufflerConfig
    gpio: GpioConfig
    display: DisplayConfig
    store_path: str
    control_socket: str
    control_socket_mode: int
    supervisor_pin_hashes: Mapping[str, str]
    store_flush_delay_ms: float = 0.0
    """Added to every durable commit to stand in for slow storage (benchmarks, tests)."""
    store_anchor_interval_s: float = ANCHOR_INTERVAL_S
    """`[store] anchor_interval_s`: the most the anchor lags the store (docs/rulings.md C24;
    controller.memory.anchor.ANCHOR_INTERVAL_S)."""
    store_seal_every_step: bool = False
    """`[store] seal_every_step`: every step sealed by itself, a card's inside a round too
    (docs/rulings.md C29 lets those wait for the next flushed step's seal)."""
    store_flush_in: str = FLUSH_IN_LOOP
    """`[store] flush_in`: where group commit's flush runs (controller.memory.flush_in;
    docs/rulings.md C30)."""
    access: AccessConfig = AccessConfig()
    """`[access]`: the groups behind each role, PIN guessing and connection limits."""
    critical_dir: str = ""
    """The key and anchor of critical memory; '' = beside the store, "<stem>.critical/"."""
    metrics_listen: tuple[str, int] | None = None
    """`[metrics] listen`: where the daemon serves /metrics itself (loopback only); None: off."""
    witness: Any = None
    """`[witness]`: controller.witness.config.WitnessConfig, or None (the table is unwitnessed)."""
    software: SoftwareConfig = SoftwareConfig()
    """`[software]`: whether the start checks the program against the release's manifest."""

    @property
    def table_id(self) -> str:
        return str(self.submission.table.id)
