"""What the control commands need of the daemon that registers them: its table, devices,
store and checks, and the few things it does for them (record an entry, run a task, hold
the table out of order). A Protocol, so the commands depend on it and not on the daemon."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from controller.config import TableConfig
from controller.control import ControlServer
from controller.events.codec import EventRecord
from controller.memory.critical import IntegrityError
from controller.intake import EventIntake
from controller.offload import StoreWork
from controller.memory.store import Store
from controller.table.table import Table
from drivers.protocols import Device, ProgressiveDisplay, SeatPanel, Shuffler

if TYPE_CHECKING:  # loaded only by a table that offers a progressive
    from controller.progressive.system import ProgressiveSystem


class CommandHost(Protocol):
    config: TableConfig
    table: Table
    devices: dict[str, Device]
    seats: SeatPanel | None
    display: ProgressiveDisplay | None
    shuffler: Shuffler | None
    progressive: ProgressiveSystem | None
    store: Store
    store_work: StoreWork
    store_failure: IntegrityError | None
    witness: Any  # controller.witness.table_side.TableWitness, or None
    control: ControlServer
    intake: EventIntake
    software: dict[str, Any]
    history_check: Mapping[str, Any]
    history_checked: asyncio.Event
    started_monotonic: float

    def record(self, record: EventRecord, severity: str | None = None) -> None: ...

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None: ...

    def hold_out_of_order(self, exc: IntegrityError, event: str = ...) -> None: ...

    def status(self) -> dict[str, Any]: ...
