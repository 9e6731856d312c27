"""What the table saves at the end of a step the save rule picks, declared once: `SavedState`.

The table holds one `SavedState` (`Table.saved`) and hands it to its collaborators,
which change it in place; the store keeps its JSON beside the state's name
(`Store.save_table_state`), and a restart rebuilds it from that (`replace_with`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from functools import cache
from typing import Any

from cards import BackColour, Card
from controller.events.records import SettledWager
from controller.rules.settlement import PlacedWager
from controller.faults import FaultBook
from controller.table.machine import TableState
from controller.rules.batches import BatchTracker
from controller.memory.store import OPEN_ROUND_CARDS
from drivers.protocols import CardDrawn


@dataclass
class ShoeProgress:
    shoe_no: int = 0
    cards_drawn: int = 0
    burn_expected: int | None = None  # cards still to burn after the exposed first card
    burned: list[str] = field(default_factory=list)
    cover_card_seen: bool = False
    last_hand_announced: bool = False
    rounds_in_shoe: int = 0
    last_card_index: int = -1
    back: int | None = None  # BackColour of the batch in the shoe (681a.3(b))
    # Cards the shoe reported with an index the table never saw (a reader outage), and
    # cards the table set aside to the discard rack (681a.7(c), 681a.9, 631a.15): both are
    # reconciled with the shuffler's count at the end of the shoe.
    lost_indexes: list[int] = field(default_factory=list)
    discarded: list[str] = field(default_factory=list)
    dealer_burn_due: bool = False  # 681a.7(c): a new dealer took over and has not burned yet
    # 681a.9(b): the last round is complete and the next has no wager or lock yet, so a
    # card now is one drawn by accident to a finished hand; `hand_of_17` if one had 17.
    extra_card_window: bool = False
    hand_of_17: bool = False
    reconciled: bool = False  # the shuffler counted this shoe's batch after it was played
    # 631a.15(c)(1): the next card goes to the discard bucket undisclosed (docs/rulings.md C20).
    undisclosed_discard_due: bool = False
    # 631a.5(d), 681a.5(d): why the cover card came out of range ("" when it did not), shown
    # to the dealer until the shoe is replaced.
    cover_card_misplaced: str = ""


@dataclass
class SavedState:
    """Everything the table must find again after a restart, besides its state's name."""

    shoe: ShoeProgress = field(default_factory=ShoeProgress)
    round_id: int | None = None
    round_no: int = 0
    wagers: list[PlacedWager] = field(default_factory=list)
    round_settlements: list[SettledWager] = field(default_factory=list)  # both points
    progressive_seats: frozenset[int] = frozenset()
    fault: dict[str, str] | None = None  # the first of `faults`: what the dealer was told
    faults: FaultBook = field(default_factory=FaultBook)  # all holding the table (faults.py)
    # 681a.9(c): a batch verified while a fault held a shuffling table (a technician's
    # shuffle); on recovery the table goes on to the cut instead of shuffling it again.
    verified_in_fault: BackColour | None = None
    resume_state: TableState | None = None
    out_of_order_reason: str = ""
    # 631a.15(d): a face-up card found during a live round waits for a simulated round.
    pending_simulated_card: CardDrawn | None = None
    simulated: bool = False  # the round in progress is a simulated round (no wagers)
    stashed_wagers: list[PlacedWager] = field(default_factory=list)  # waiting out a simulated round
    void_after_recovery: str = ""  # why the round must be voided once the fault clears
    void_after_recovery_section: str = ""  # the rule that voids it ("" = 631a.15(e))
    batch_in_shuffler: BackColour | None = None  # as the shuffler last reported
    batch_shuffled: BackColour | None = None  # verified by the last shuffle
    batches: BatchTracker | None = None  # 681a.3(b): two batches alternating, if configured
    # The open round's cards, as its row gets them when it closes: kept here instead of
    # rewriting the round's row for every card (OPEN_ROUND_CARDS, where the store looks for
    # them); a card that saves no state is in the log after the save (rounds.open_round_cards).
    round_cards: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    @cache
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    def replace_with(self, other: SavedState) -> None:
        """Take every field of `other`, in place: the collaborators keep this object."""
        for name in self.names():
            setattr(self, name, getattr(other, name))

    def to_json(self) -> dict[str, Any]:
        """The state as saved. A field that `from_json` reads with a default is left out
        while it holds that default (and the shoe's, which all have one): the state is
        saved at every lock and settlement, and its text is encoded and its row MACed twice
        each time (issue 31: half the text it was). A state saved with every key (earlier
        versions) is read the same, and an earlier version reads these with the same
        defaults. The open round's cards are always written: their key says the round's
        cards are here (controller/memory/rounds.py, `as_read`)."""
        # Each key is tested on the field itself before its value is made (the value saved
        # equal to its `_OMITTED_WHEN` and of the same type), in `_OMITTED_WHEN`'s order:
        # the text is not canonical, so its keys' order is the stored bytes' (half the
        # function's instructions went to values made only to be left out).
        shoe = _SHOE_DEFAULTS
        data: dict[str, Any] = {
            "shoe": {name: value for name, value in vars(self.shoe).items()
                     if type(value) is not type(shoe[name]) or value != shoe[name]},
            "round_id": self.round_id, "round_no": self.round_no,
            "wagers": [wager_json(w) for w in self.wagers], "fault": self.fault,
            "resume_state": self.resume_state.value if self.resume_state else None,
            OPEN_ROUND_CARDS: self.round_cards,
        }
        if self.round_settlements:
            data["round_settlements"] = [s.payload() for s in self.round_settlements]
        if self.progressive_seats:
            data["progressive_seats"] = sorted(self.progressive_seats)
        faults = self.faults.to_list()
        # Without its book, a state's first fault is read as the only one (`from_saved`).
        if faults or self.fault is not None:
            data["faults"] = faults
        if self.verified_in_fault is not None:
            data["verified_in_fault"] = colour_name(self.verified_in_fault)
        if _not_empty(self.out_of_order_reason):
            data["out_of_order_reason"] = self.out_of_order_reason
        if self.pending_simulated_card:
            data["pending_simulated_card"] = card_event_json(self.pending_simulated_card)
        if self.simulated is not False:
            data["simulated"] = self.simulated
        if self.stashed_wagers:
            data["stashed_wagers"] = [wager_json(w) for w in self.stashed_wagers]
        if _not_empty(self.void_after_recovery):
            data["void_after_recovery"] = self.void_after_recovery
        if _not_empty(self.void_after_recovery_section):
            data["void_after_recovery_section"] = self.void_after_recovery_section
        if self.batch_in_shuffler is not None:
            data["batch_in_shuffler"] = colour_name(self.batch_in_shuffler)
        if self.batch_shuffled is not None:
            data["batch_shuffled"] = colour_name(self.batch_shuffled)
        if self.batches is not None:
            data["batches"] = self.batches.to_dict()
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any], batches: BatchTracker | None) -> SavedState:
        """The saved snapshot; `batches` is the configured tracker, replaced by the saved one."""
        held = data.get("pending_simulated_card")
        tracker = data.get("batches", data.get("batch_tracker"))  # the key's earlier name
        return cls(
            shoe=ShoeProgress(**data["shoe"]), round_id=data["round_id"],
            round_no=data["round_no"],
            wagers=[wager_from_json(w) for w in data["wagers"]],
            round_settlements=[SettledWager.decode(s) for s in data.get("round_settlements", [])],
            progressive_seats=frozenset(data.get("progressive_seats", [])),
            fault=data["fault"], faults=FaultBook.from_saved(data.get("faults"), data["fault"]),
            verified_in_fault=colour_from(data.get("verified_in_fault")),
            resume_state=TableState(data["resume_state"]) if data["resume_state"] else None,
            out_of_order_reason=data.get("out_of_order_reason", ""),
            pending_simulated_card=card_event_from_json(held) if held else None,
            simulated=bool(data.get("simulated", False)),
            stashed_wagers=[wager_from_json(w) for w in data.get("stashed_wagers", [])],
            void_after_recovery=data.get("void_after_recovery", ""),
            void_after_recovery_section=data.get("void_after_recovery_section", ""),
            batch_in_shuffler=colour_from(data.get("batch_in_shuffler")),
            batch_shuffled=colour_from(data.get("batch_shuffled")),
            batches=BatchTracker.from_dict(tracker) if batches is not None and tracker
            else batches,
            round_cards=list(data.get(OPEN_ROUND_CARDS, [])),
        )


_SHOE_DEFAULTS: dict[str, Any] = vars(ShoeProgress())
# The saved keys `from_json` reads with a default, and that default as saved.
# (tests/controller/test_saved_state.py checks `to_json` against it.)
_OMITTED_WHEN: dict[str, Any] = {
    "round_settlements": [], "progressive_seats": [], "faults": [], "verified_in_fault": None,
    "out_of_order_reason": "", "pending_simulated_card": None, "simulated": False,
    "stashed_wagers": [], "void_after_recovery": "", "void_after_recovery_section": "",
    "batch_in_shuffler": None, "batch_shuffled": None, "batches": None,
}


def _not_empty(text: Any) -> bool:
    """Not the default "" (equal and of the same type: `_OMITTED_WHEN`)."""
    return type(text) is not str or text != ""


def wager_json(wager: PlacedWager) -> dict[str, Any]:
    """A wager as the store, the control API and the event log carry it."""
    return {"seat": wager.seat, "wager": wager.wager, "amount_cents": wager.amount_cents}


def wager_from_json(data: Mapping[str, Any]) -> PlacedWager:
    return PlacedWager(int(data["seat"]), str(data["wager"]), int(data["amount_cents"]))


def colour_name(back: BackColour | int | None) -> str | None:
    """A batch's colour as the saved state and the status name it (the saved state is
    written at every step that changes it, each wager's among them: looked up, not made)."""
    if back is None:
        return None
    return _COLOUR_NAMES.get(back) or BackColour(back).name.lower()


# A colour and its number are equal keys (BackColour is an IntEnum).
_COLOUR_NAMES: dict[BackColour | int, str] = {c: c.name.lower() for c in BackColour}


def colour_from(name: str | None) -> BackColour | None:
    return BackColour[name.upper()] if name else None


def card_event_json(event: CardDrawn) -> dict[str, Any]:
    return {"device": event.device, "index": event.index, "card": str(event.card),
            "back": event.back.value, "face_up": event.face_up}


def card_event_from_json(data: Mapping[str, Any]) -> CardDrawn:
    return CardDrawn(data["device"], data["index"], Card.parse(data["card"]),
                     BackColour(data["back"]), data["face_up"])
