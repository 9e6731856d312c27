"""The table's event records: one frozen dataclass per catalogue kind of the shoe, the
cards, the rounds and their money, and the devices. Built where the event happens,
encoded once by the store (`Payload.payload`), read back through the same types by the
display, `tablectl` and the HIL checks (`decode`). The daemon's, access and critical
memory's records are in system_records.py, the progressives' in progressive_records.py.

Cards stay `cards.Card` and back colours `cards.BackColour` until the wire.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from cards import BackColour, Card
from controller.events.codec import EventRecord, Undisclosed
# The records' parts (controller/events/parts.py), named here too for the records' readers.
from controller.events.parts import RoundResult as RoundResult
from controller.events.parts import SettledWager as SettledWager
from controller.events.parts import VoidOutcome as VoidOutcome
from controller.events.parts import Wager as Wager

# --- the dealer's steps -----------------------------------------------------------------


@dataclass(frozen=True)
class Prompt(EventRecord):
    """What the dealer must do next; each action fills the fields it needs."""

    KIND: ClassVar[str] = "prompt"
    action: str
    detail: str | None = None
    round_no: int | None = None
    card: Card | Undisclosed | None = None
    ruling: str | None = None
    remaining: int | None = None
    next: str | None = None
    state: str | None = None
    reason: str | None = None
    seats: tuple[dict[str, int], ...] | None = None
    award_id: int | None = None
    seat: int | None = None
    progressive: str | None = None
    level: str | None = None
    amount_cents: int | None = None

    @classmethod
    def deal(cls, next_card: str) -> Prompt:
        """The prompt after a card of a round: deal the card the rules call for next. The
        same record for the same card every time, so the store encodes it once (controller/
        memory/entries.py): built, encoded and read back, it was a fifth of a card's step."""
        prompt = _DEAL_PROMPTS.get(next_card)
        if prompt is None:
            prompt = _DEAL_PROMPTS[next_card] = cls("deal", next=next_card)
        return prompt


_DEAL_PROMPTS: dict[str, Prompt] = {}


@dataclass(frozen=True)
class TableOpened(EventRecord):
    KIND: ClassVar[str] = "table_opened"


@dataclass(frozen=True)
class ShuffleRequested(EventRecord):
    KIND: ClassVar[str] = "shuffle_requested"
    decks: int
    during_fault: bool = False


@dataclass(frozen=True)
class NewDealer(EventRecord):
    KIND: ClassVar[str] = "new_dealer"
    dealer: str
    burn: bool


@dataclass(frozen=True)
class WagerAccepted(EventRecord):
    KIND: ClassVar[str] = "wager_accepted"
    seat: int
    wager: str
    amount_cents: int


@dataclass(frozen=True)
class NoMoreBets(EventRecord):
    KIND: ClassVar[str] = "no_more_bets"
    cause: str
    round_no: int
    wagers: tuple[Wager, ...]
    progressive_seats: tuple[int, ...]


# --- the shoe and its cards -------------------------------------------------------------


@dataclass(frozen=True)
class ShoeLoadDeclared(EventRecord):
    KIND: ClassVar[str] = "shoe_load_declared"
    back: BackColour
    by: str


@dataclass(frozen=True)
class ShoeLoaded(EventRecord):
    KIND: ClassVar[str] = "shoe_loaded"
    shoe_no: int
    back: BackColour | None


@dataclass(frozen=True)
class ShoeLoadedOutOfTurn(EventRecord):
    KIND: ClassVar[str] = "shoe_loaded_out_of_turn"
    state: str
    cards: int


@dataclass(frozen=True)
class BurnFirstCard(EventRecord):
    KIND: ClassVar[str] = "burn_first_card"
    card: Card
    index: int
    burn: int
    back: BackColour


@dataclass(frozen=True)
class BurnCard(EventRecord):
    KIND: ClassVar[str] = "burn_card"
    index: int
    back: BackColour


@dataclass(frozen=True)
class CardDealt(EventRecord):
    """A card dealt to a hand: `hand` player/banker/..., `slot` e.g. 'banker_third'."""

    KIND: ClassVar[str] = "card"
    index: int
    card: Card
    hand: str
    slot: str
    back: BackColour

    @classmethod
    def of(cls, index: int, card: Card, hand: str, slot: str, back: BackColour) -> CardDealt:
        """CardDealt(index, card, hand, slot, back), `made` (its __init__ was a quarter of a
        card's table code): every card of a round makes one (controller/table/rounds.py)."""
        return cls.made(index=index, card=card, hand=hand, slot=slot, back=back)

    def round_card(self) -> dict[str, Any]:
        """The card as the round's record (the store's `cards`) holds it."""
        return {"index": self.index, "card": str(self.card), "hand": self.hand,
                "slot": self.slot}


@dataclass(frozen=True)
class CoverCard(EventRecord):
    KIND: ClassVar[str] = "cover_card"
    index: int


@dataclass(frozen=True)
class CoverCardMisplaced(EventRecord):
    KIND: ClassVar[str] = "cover_card_misplaced"
    index: int
    cards_below: int
    detail: str


@dataclass(frozen=True)
class CardFaceUp(EventRecord):
    KIND: ClassVar[str] = "card_face_up"
    index: int
    card: Card
    ruling: str


@dataclass(frozen=True)
class SimulatedRound(EventRecord):
    KIND: ClassVar[str] = "simulated_round"
    card: Card
    index: int
    ruling: str


@dataclass(frozen=True)
class PlayerThirdDisclosed(EventRecord):
    KIND: ClassVar[str] = "player_third_disclosed"
    supervisor: str
    index: int
    card: Card
    action: str
    section: str
    changed: bool


@dataclass(frozen=True)
class CardDiscarded(EventRecord):
    KIND: ClassVar[str] = "card_discarded"
    index: int
    card: Card
    state: str
    ruling: str


@dataclass(frozen=True)
class CardDuringFault(EventRecord):
    KIND: ClassVar[str] = "card_during_fault"
    index: int
    card: Card
    round_voided: bool


@dataclass(frozen=True)
class CardGap(EventRecord):
    KIND: ClassVar[str] = "card_gap"
    expected_index: int
    received_index: int
    card: Card
    lost_indexes: tuple[int, ...]
    action: str
    section: str


@dataclass(frozen=True)
class ShoeReconciled(EventRecord):
    """The shoe's cards against the shuffler's count: an error unless all accounted."""

    KIND: ClassVar[str] = "shoe_reconciled"
    shoe_no: int
    back: BackColour
    cards_drawn: int
    lost_indexes: tuple[int, ...]
    discarded: int
    cards_counted: int
    missing: int
    extra: int
    duplicates: int
    accounted: bool

    @property
    def severity(self) -> str | None:
        return "info" if self.accounted else "error"


@dataclass(frozen=True)
class ShoeComplete(EventRecord):
    KIND: ClassVar[str] = "shoe_complete"
    shoe_no: int
    rounds: int
    last_round_id: int | None


# --- rounds and money -------------------------------------------------------------------


@dataclass(frozen=True)
class SettledFirstFourCards(EventRecord):
    KIND: ClassVar[str] = "settled_first_four_cards"
    settlements: tuple[SettledWager, ...]


@dataclass(frozen=True)
class SettledEndOfRound(EventRecord):
    KIND: ClassVar[str] = "settled_end_of_round"
    settlements: tuple[SettledWager, ...]


@dataclass(frozen=True)
class RoundSettled(EventRecord):
    """A round's result and every settlement; the table's net is the seats' nets negated."""

    KIND: ClassVar[str] = "round_settled"
    round_no: int
    simulated: bool
    result: RoundResult
    settlements: tuple[SettledWager, ...]
    table_net_cents: int

    @classmethod
    def of(cls, round_no: int, simulated: bool, result: RoundResult,
           settlements: tuple[SettledWager, ...]) -> RoundSettled:
        return cls(round_no, simulated, result, settlements,
                   -sum(s.net_cents for s in settlements))


@dataclass(frozen=True)
class RoundVoid(EventRecord):
    KIND: ClassVar[str] = "round_void"
    reason: str
    settlements: tuple[SettledWager, ...]
    wagers_stand: bool = False


@dataclass(frozen=True)
class VigorishCollected(EventRecord):
    KIND: ClassVar[str] = "vigorish_collected"
    seat: int
    cents: int


# --- devices and faults -----------------------------------------------------------------


@dataclass(frozen=True)
class DeviceFaulted(EventRecord):
    KIND: ClassVar[str] = "device_fault"
    code: str
    detail: str
    action: str


@dataclass(frozen=True)
class DeviceFaultCleared(EventRecord):
    KIND: ClassVar[str] = "device_fault_cleared"
    code: str


@dataclass(frozen=True)
class DeviceRecovered(EventRecord):
    KIND: ClassVar[str] = "device_recovered"
    code: str


@dataclass(frozen=True)
class FaultStillHeld(EventRecord):
    KIND: ClassVar[str] = "fault_still_held"
    cleared: tuple[str, ...]
    still_held: tuple[dict[str, str], ...]


@dataclass(frozen=True)
class FaultAcknowledged(EventRecord):
    """A supervisor's ruling on the fault the dealer was told about (device, code, detail,
    action: absent when none was held), with what it cleared and what still holds."""

    KIND: ClassVar[str] = "fault_acknowledged"
    supervisor: str
    cleared: tuple[dict[str, str], ...]
    still_held: tuple[dict[str, str], ...]
    device: str | None = None
    code: str | None = None
    detail: str | None = None
    action: str | None = None


@dataclass(frozen=True)
class SeatSensor(EventRecord):
    KIND: ClassVar[str] = "seat_sensor"
    seat: int
    present: bool


@dataclass(frozen=True)
class LateSensorChange(EventRecord):
    KIND: ClassVar[str] = "late_sensor_change"
    seat: int
    present: bool


@dataclass(frozen=True)
class ShuffleProgress(EventRecord):
    KIND: ClassVar[str] = "shuffle_progress"
    cards_counted: int
    cards_expected: int


@dataclass(frozen=True)
class ShuffleComplete(EventRecord):
    KIND: ClassVar[str] = "shuffle_complete"
    back: BackColour
    cards_counted: int
    missing: int
    extra: int
    duplicates: int


@dataclass(frozen=True)
class BatchHeld(EventRecord):
    KIND: ClassVar[str] = "batch_held"
    back: BackColour | None
