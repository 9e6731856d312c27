"""What the table controller needs from each device, as typing.Protocols.

The real drivers in this package implement them; so does anything a test puts
in their place. Events flow one way, driver -> controller, through the `emit`
callback the controller passes to `start()`. `emit` is safe to call from any
thread (GPIO callbacks run on gpiozero's thread); it only enqueues.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from cards import BackColour, Card


class LinkState(enum.Enum):
    """Reconnect state of one device link (missing at start-up is RETRYING, not an error)."""

    CONNECTING = "connecting"
    HANDSHAKING = "handshaking"
    UP = "up"
    RETRYING = "retrying"
    REFUSED = "refused"  # incompatible firmware/protocol: needs a technician, not a retry
    STOPPED = "stopped"


class LedState(enum.Enum):
    """Seat LED meaning; see docs/wiring.md for the blink pattern of each."""

    OFF = "off"
    AWAITING = "awaiting"
    ACCEPTED = "accepted"
    LOCKED = "locked"
    WON = "won"
    UNAVAILABLE = "unavailable"  # the progressive is not offered now (e.g. linked meter offline)


# --- events, driver -> controller --------------------------------------------


@dataclass(frozen=True, slots=True)
class CardDrawn:
    """A card left the shoe. `index` counts cards drawn since the shoe was loaded, from 0."""

    device: str
    index: int
    card: Card
    back: BackColour
    face_up: bool  # the card was found face up in the shoe (631a.15(c)-(d), 681a.9)


@dataclass(frozen=True, slots=True)
class CoverCardDrawn:
    device: str
    index: int  # cards drawn before the cover card


@dataclass(frozen=True, slots=True)
class ShoeLoaded:
    """The shoe was loaded with a batch of `cards` cards with this back colour; `index` restarts at 0."""

    device: str
    cards: int
    back: BackColour


@dataclass(frozen=True, slots=True)
class DeviceFault:
    """A device reported a fault, or its link failed. `action` tells the dealer/technician what to do."""

    device: str
    code: str
    detail: str
    action: str


@dataclass(frozen=True, slots=True)
class DeviceFaultCleared:
    device: str
    code: str


@dataclass(frozen=True, slots=True)
class LinkChanged:
    device: str
    state: LinkState
    detail: str = ""


@dataclass(frozen=True, slots=True)
class ShuffleProgress:
    device: str
    cards_counted: int
    cards_expected: int


@dataclass(frozen=True, slots=True)
class ShuffleComplete:
    """A batch was shuffled, counted and verified (681a.3(b), 681a.9(c))."""

    device: str
    back: BackColour
    cards_counted: int
    missing: int
    extra: int
    duplicates: int

    @property
    def verified(self) -> bool:
        return self.missing == 0 and self.extra == 0 and self.duplicates == 0


@dataclass(frozen=True, slots=True)
class BatchHeld:
    """The shuffler reported which batch it holds (None: empty), 681a.3(b)(3)."""

    device: str
    back: BackColour | None


@dataclass(frozen=True, slots=True)
class LockedOut:
    """Every seat locked at one instant. `wagers` are the seats whose sensor held a
    wager at that instant (631c.2(d)(2), 627b.3(a)(2), 627b.6(d)(2))."""

    cause: str  # "button" or "first-card"
    at_monotonic: float
    wagers: frozenset[int]


@dataclass(frozen=True, slots=True)
class LateSensorChange:
    """A seat sensor changed after the lock: never a wager, recorded for the seat."""

    seat: int
    present: bool
    at_monotonic: float


@dataclass(frozen=True, slots=True)
class SeatSensorChanged:
    """Debounced sensor change while betting is open (not yet a recognised wager)."""

    seat: int
    present: bool


DeviceEvent = (
    CardDrawn | CoverCardDrawn | DeviceFault | DeviceFaultCleared | LinkChanged
    | ShuffleProgress | ShuffleComplete | LockedOut | LateSensorChange | SeatSensorChanged
    | ShoeLoaded | BatchHeld
)
Emit = Callable[[DeviceEvent], None]


# --- health and self-test -----------------------------------------------------


@dataclass(frozen=True)
class DeviceHealth:
    device: str
    kind: str
    link: LinkState
    port: str
    serial_number: str = ""
    firmware_version: str = ""
    protocol_version: int | None = None
    connected_since_monotonic: float | None = None
    counters: Mapping[str, int] = field(default_factory=dict)
    last_error: str = ""


@dataclass(frozen=True)
class SelfTestResult:
    device: str
    passed: bool
    detail: str


# --- the protocols -----------------------------------------------------------


@runtime_checkable
class Device(Protocol):
    name: str

    async def start(self, emit: Emit) -> None:
        """Begin connecting (in a background task) and return at once."""

    async def stop(self) -> None: ...

    def health(self) -> DeviceHealth: ...

    async def self_test(self) -> SelfTestResult: ...


@runtime_checkable
class Shoe(Device, Protocol):
    """Card-reading dealing shoe on a serial link."""


@runtime_checkable
class CommittingShoe(Shoe, Protocol):
    """A shoe driver that speaks protocol 1.2's card commit acknowledgement
    (docs/protocol.md 6.6): told what the table has durably stored, it lets the shoe forget
    those cards, and it drops the cards the shoe sends again that the table already has."""

    @property
    def card_commit(self) -> bool:
        """The session in progress uses the acknowledgement: the shoe keeps every card until
        the table says it is committed, and sends the kept ones again after a handshake."""

    def follow_table(self, has_below: Callable[[], int], has_cover: Callable[[], bool]) -> None:
        """Before start(): `has_below()` is the index below which the table has every card of
        the batch in the shoe; until the driver's own count takes over (its first card or
        ShoeLoaded), a replayed card below it is dropped, one at or above it delivered.
        `has_cover()`: the table has the batch's cover card; until the driver sees the
        batch's ShoeLoaded, a cover card sent again is then dropped."""

    def cards_committed(self, loads: int, next_index: int) -> None:
        """Every card below `next_index` is durably stored, of the batch the shoe reported
        after `loads` ShoeLoaded events since start(); from the loop's thread, never blocks."""


@runtime_checkable
class Shuffler(Device, Protocol):
    """Automated two-batch shuffler on USB."""

    async def shuffle(self, back: BackColour, expected_cards: int) -> None:
        """Ask for a shuffle of the batch with this back colour; the result arrives as events."""

    @property
    def held_batch(self) -> BackColour | None:
        """The batch the shuffler last said it holds (681a.3(b)), if any."""


@runtime_checkable
class SeatPanel(Device, Protocol):
    """Per-seat progressive wager sensors and LEDs plus the dealer's lock-out button."""

    def open_betting(self, seats_allowed: frozenset[int]) -> None:
        """Unlock: sensors at these seats may register a wager (LEDs show awaiting/accepted)."""

    def lock(self, cause: str) -> LockedOut:
        """Lock every seat now, from any thread; idempotent until the next open_betting()."""

    def set_led(self, seat: int, state: LedState) -> None: ...

    def led(self, seat: int) -> LedState: ...


@runtime_checkable
class ProgressiveDisplay(Device, Protocol):
    """Meter display and win lights (631c.6(c)(5))."""

    def show_meters(self, meters_cents: Mapping[str, int]) -> None: ...

    def win_light(self, seat: int, on: bool) -> None: ...

    def win_light_confirmed(self, seat: int) -> bool:
        """The display reports this seat's win light lit (631c.6(c)(5))."""

    def show_prompt(self, text: str) -> None:
        """Show the dealer's next step."""
