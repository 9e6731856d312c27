"""One shoe dealt by the procedure's deciders, sans-I/O: the dealer's actions in, rounds out.

`tablectl simulate` deals with it; the live table applies the same deciders
(controller.rules.procedure, controller.rules.shoe, controller.rules.settlement)
to the shoe's reports, and tests/controller/test_differential.py deals the same
actions through both and requires identical round records. Each step here
names the table's step it mirrors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from cards import Card
from controller.rules.baccarat import Hand, NextCard
from controller.rules.game import Coup, Game
from controller.rules.procedure import (
    Awaited, CardFacts, Disposition, LostCardsAction, Phase, card_ruling, expected_card_index,
    first_card_unknown, lost_cards, shoe_ends_after_round,
)
from controller.rules.settlement import PlacedWager, settle_round, settlement_order, void_round
from controller.rules.wager import RoundView, Settlement, SettlementPoint


@dataclass(frozen=True)
class Draw:
    """A card leaves the shoe; `lost`: the controller never sees it (a reader outage)."""

    index: int
    card: Card
    face_up: bool = False
    lost: bool = False


@dataclass(frozen=True)
class Cover:
    """The cover card leaves the shoe (631a.10(d), 681a.7(d))."""

    index: int


@dataclass(frozen=True)
class Bet:
    """Wagers placed on the layout while betting is open."""

    wagers: tuple[PlacedWager, ...]


@dataclass(frozen=True)
class Lock:
    """"No more bets" (631a.8(c))."""


@dataclass(frozen=True)
class NewDealer:
    """A new dealer takes over between rounds (681a.7(c))."""


Action = Draw | Cover | Bet | Lock | NewDealer


class RoundProgressive(Protocol):
    """A table's progressive (`[progressive.<name>]`) as a shoe dealt here meets it: the same
    hooks, in the same order, as the live table calls `ProgressiveSystem` (controller/table/
    rounds.py at the lock and the result, settlement.py at a void). Implemented over the
    progressive system itself by `controller.progressive.simulated.SimulatedProgressive`, so
    its meters are the live table's, never a second one."""

    @property
    def wager_key(self) -> str:
        """The wager key a seat's progressive wager is placed under."""

    def lock(self, wagers: Sequence[PlacedWager]) -> list[Settlement]:
        """A live round opens with these wagers on the layout: its progressive wagers are
        accepted or refused and contribute to the meters; a Must-Hit-By Mystery hit at the
        lock is returned as a settlement (refused wagers are returned, as pushes)."""

    def result(self, view: RoundView) -> list[Settlement]:
        """The round's progressive wagers settled from its cards, meter lines paid what the
        meters award."""

    def void(self, section: str) -> list[Settlement]:
        """The round is void: its progressive wagers are returned (pushes)."""

    def standing_cents(self) -> Mapping[str, int]:
        """Each meter's whole cents now, by level."""

    def stake_cents(self, unit_cents: int) -> int:
        """What a seat wagering `unit_cents` on every wager places on the progressive."""


def card_obj(card: Card, hand: str) -> dict[str, Any]:
    return {"rank": card.rank.label, "suit": "CDHS"[card.suit], "card": str(card), "hand": hand}


def hand_of(slot: NextCard) -> str:
    return _HAND_WORDS[slot._name_]  # by name: an enum member's own hash is a Python call


_HAND_WORDS = {slot.name: "extra" if slot in (NextCard.PLAYER_BONUS_EXTRA,
                                              NextCard.BANKER_BONUS_EXTRA)
               else "player" if slot.hand is Hand.PLAYER else "banker" for slot in NextCard}


def settlement_obj(s: Settlement) -> dict[str, Any]:
    return {"wager": s.wager, "seat": s.seat, "amount_cents": s.amount_cents, "outcome": s.outcome.value,
            "odds": f"{s.odds.numerator} to {s.odds.denominator}" if s.win_cents else None,
            "win_cents": s.win_cents, "vigorish_cents": s.vigorish_cents,
            "net_cents": s.net_cents, "label": s.label, "section": s.section}


@dataclass
class _Round:
    no: int
    simulated: bool
    last_hand: bool
    coup: Coup
    wagers: list[PlacedWager]
    cards: list[dict[str, Any]] = field(default_factory=list)
    settlements: list[Settlement] = field(default_factory=list)
    first_four_settled: bool = False


class ShoeDealing:
    """A shoe from its burn to its end, as the live table deals it (controller/table/rounds.py)."""

    def __init__(self, game: Game, shoe_no: int,
                 progressive: RoundProgressive | None = None) -> None:
        self.game, self.shoe_no = game, shoe_no
        self.progressive = progressive
        self.phase = Phase.BURN
        self.finished = False
        self.burn_expected: int | None = None
        self.last_index = -1
        self.round_no = 0
        self.round: _Round | None = None
        self.wagers: list[PlacedWager] = []
        self.stashed: list[PlacedWager] = []
        self.set_aside: Draw | None = None
        self.cover_seen = False
        self.cover_in_record = False
        self.last_hand_announced = False
        self.extra_card_window = False
        self.hand_of_17 = False
        self.dealer_burn_due = False
        self.loose_cards: list[dict[str, Any]] = []  # burned, discarded, lost: in no round
        self.records: list[dict[str, Any]] = []

    @property
    def bonus_wagered(self) -> bool:
        return any(w.wager.startswith("bonus_") for w in self.wagers)

    def apply(self, action: Action) -> list[dict[str, Any]]:
        """Apply one action; the round records it completed, in order."""
        done = len(self.records)
        match action:
            case Bet() if self.phase is Phase.BETTING:
                self.wagers.extend(action.wagers)  # Table.cmd_place_wager
                self.extra_card_window = False
            case Lock() if self.phase is Phase.BETTING:
                self._open_round()  # Table._on_locked
            case NewDealer() if self.phase is Phase.BETTING:
                self.dealer_burn_due = self.game.config.is_21  # Table.cmd_new_dealer
            case Cover():
                self.cover_seen = self.cover_in_record = True  # CardRouting.on_cover_card
            case Draw():
                self._draw(action)
            case _:
                raise ValueError(f"{action!r} is not allowed while the table is "
                                 f"{self.phase.value}")
        return self.records[done:]

    # --- cards (CardRouting.on_card) ----------------------------------------------------

    def _draw(self, draw: Draw) -> None:
        if self.finished:
            self.loose_cards.append(card_obj(draw.card, "discard"))
            return
        if draw.lost:
            self.loose_cards.append(card_obj(draw.card, "lost"))
            return
        first_known = self.burn_expected is not None
        expected = expected_card_index(self.last_index, self.phase, first_card_known=first_known)
        lost = lost_cards(expected, draw.index, self.phase,
                          round_open=self.round is not None) if expected is not None else None
        self.last_index = draw.index
        if lost is not None:
            if lost.action is LostCardsAction.VOID_ROUND:
                self._void(lost.section)
                return
            if lost.action is LostCardsAction.DISCARD_RECEIVED:
                self.loose_cards.append(card_obj(draw.card, "discard"))
                return
            if lost.action is LostCardsAction.COUNT_AS_BURNED and self.burn_expected is not None:
                self.burn_expected = max(0, self.burn_expected - len(lost.indexes))
                if self.burn_expected == 0:
                    self.phase = Phase.BETTING
        if first_card_unknown(draw.index, self.phase, first_card_known=first_known):
            self.loose_cards.append(card_obj(draw.card, "discard"))  # CardRouting, C27
            self._end_shoe()
            return
        ruling = card_ruling(self.phase, CardFacts(
            face_up=draw.face_up, twenty_one=self.game.config.is_21,
            dealer_burn_due=self.dealer_burn_due, after_completed_round=self.extra_card_window,
            hand_of_17=self.hand_of_17))
        match ruling.disposition:
            case Disposition.BURN:
                self.loose_cards.append(card_obj(draw.card, "burn"))
                if self.burn_expected is None:
                    self.burn_expected = self.game.burn_count(draw.card)  # 631a.5(f)
                else:
                    self.burn_expected -= 1
                if self.burn_expected == 0:
                    self.phase = Phase.BETTING
            case Disposition.OPEN_ROUND:
                self._open_round()
                self._deal(draw)
            case Disposition.DEAL:
                self._deal(draw)
            case Disposition.SIMULATED_ROUND:
                self._open_simulated_round(draw)
            case Disposition.SET_ASIDE:
                self.set_aside = draw
            case Disposition.DISCARD | Disposition.HOLD:
                if ruling.fulfils is Awaited.DEALER_BURN:
                    self.dealer_burn_due = False
                self.loose_cards.append(card_obj(draw.card, "discard"))

    def _open_round(self) -> None:
        self.extra_card_window = False
        self.round_no += 1
        progressive_key = self.progressive.wager_key if self.progressive else None
        self.round = _Round(self.round_no, False, self.last_hand_announced,
                            self.game.new_coup(bonus_wagered=self.bonus_wagered),
                            [w for w in self.wagers if w.wager != progressive_key])
        if self.progressive is not None:
            # Table._on_locked: the progressive system accepts the wagers at the lock.
            self.round.settlements += self.progressive.lock(self.wagers)
        self.phase = Phase.LOCKED

    def _open_simulated_round(self, draw: Draw) -> None:
        """631a.15(d): no wagers; those on the layout wait (RoundPlay.start_simulated_round).
        A live round locked but not yet dealt is closed void, its wagers returned to stand
        for the next live round (docs/rulings.md C19)."""
        r = self.round
        if r is not None and not r.simulated:
            self._close_round(r, void_round(r.wagers, "631a.15(d)"), void=True,
                              player_total=None, banker_total=None, outcome="void",
                              wagers_stand=True)
        self.stashed, self.wagers = self.wagers, []
        self.round = _Round(0, True, self.last_hand_announced, self.game.new_coup(), [])
        self.phase = Phase.SIMULATED
        self._deal(draw)

    def _deal(self, draw: Draw) -> None:
        """RoundPlay.play_card."""
        r = self.round
        assert r is not None
        if self.phase is Phase.LOCKED:
            self.phase = Phase.DEALING
        slot = r.coup.place(draw.card)
        r.cards.append(card_obj(draw.card, hand_of(slot)))
        if r.coup.initial_cards_complete and not r.first_four_settled:
            r.first_four_settled = True
            r.settlements += settle_round(self.game, r.wagers, r.coup.round_view(),
                                          SettlementPoint.FIRST_FOUR_CARDS)
        if r.coup.complete:
            self._finish()
        elif draw.index + 1 >= self.game.shoe_size:
            self._void("631a.15(e)")  # the shoe cannot complete the round

    def _close_round(self, r: _Round, settlements: Sequence[Settlement], **result: Any
                ) -> dict[str, Any]:
        record: dict[str, Any] = {"shoe": self.shoe_no, "round": r.no, "simulated": r.simulated,
                                  "last_hand": r.last_hand,
                                  "cards": self.loose_cards + r.cards, **result,
                                  "cover_card": self.cover_in_record,
                                  "settlements": [settlement_obj(s) for s in settlements],
                                  "seat_net_cents": sum(s.net_cents for s in settlements)}
        if self.progressive is not None:
            record["meters"] = dict(self.progressive.standing_cents())
        self.loose_cards, self.cover_in_record = [], False
        self.records.append(record)
        return record

    def _finish(self) -> None:
        """RoundPlay._finish_round: settle, then the shoe's phase (631a.10(d), 681a.7(d))."""
        r = self.round
        assert r is not None
        end = settle_round(self.game, r.wagers, r.coup.round_view(), SettlementPoint.END_OF_ROUND)
        if self.progressive is not None and not r.simulated:
            # RoundPlay._finish_round: the progressive system decides its hits at the result.
            end = settlement_order(end + self.progressive.result(r.coup.round_view()),
                                   [*self.game.wager_rules, self.progressive.wager_key])
        r.settlements += end
        result = r.coup.result()
        extra = {} if self.game.config.is_21 else {"dragon_7": result.dragon_7,
                                                    "panda_8": result.panda_8}
        self._close_round(r, r.settlements, void=False, player_total=result.player_total,
                     banker_total=result.banker_total, outcome=result.winner.value, **extra)
        self.round = None
        if r.simulated:
            self.wagers, self.stashed = self.stashed, []
        else:
            self.wagers = []
            self.extra_card_window = self.game.config.is_21  # 681a.9(b)
            self.hand_of_17 = 17 in (result.player_total, result.banker_total)
        if shoe_ends_after_round(cover_card_seen=self.cover_seen,
                                 last_hand_announced=self.last_hand_announced,
                                 simulated=r.simulated,
                                 reshuffle_at_cover=self.game.reshuffles_at_cover_card):
            self._end_shoe()
            return
        self.phase = Phase.BETTING
        if self.cover_seen:
            self.last_hand_announced = True
        held, self.set_aside = self.set_aside, None
        if held is not None:
            self._open_simulated_round(held)

    def void_open_round(self, section: str) -> list[dict[str, Any]]:
        """The open round is void under `section`, as the live table voids a round its cards
        cannot complete (a fault acknowledged, C6-C7): every wager returned, the shoe ends.
        Returns its record."""
        if self.round is None:
            raise ValueError("no round is open to void")
        done = len(self.records)
        self._void(section)
        return self.records[done:]

    def _void(self, section: str) -> None:
        """RoundPlay.void_round: every wager not yet settled returned (what the first four
        cards settled stands); the shoe ends."""
        r = self.round
        assert r is not None
        returned = void_round(r.wagers, section,
                              settled={(s.seat, s.wager) for s in r.settlements})
        if self.progressive is not None and not r.simulated:
            returned += self.progressive.void(section)
        self._close_round(r, r.settlements + returned, void=True, player_total=None,
                          banker_total=None, outcome="void")
        self.round, self.set_aside = None, None
        self.wagers = self.stashed if r.simulated else []
        self._end_shoe()

    def _end_shoe(self) -> None:
        """No round follows: a card set aside for a simulated round goes with the decks."""
        self.phase = Phase.OUT_OF_PLAY
        self.finished = True
        self.set_aside = None
