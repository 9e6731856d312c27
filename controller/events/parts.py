"""The parts of the table's event records: a wager on the layout, a wager's settlement
(the rules' figures), a round's result and a void round's outcome. Each is a frozen
dataclass encoded inside its record's payload (and in the store's round record).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cards import Card
from controller.events.codec import Payload
from controller.rules.wager import Outcome, RoundView, Settlement


@dataclass(frozen=True)
class Wager(Payload):
    """A wager on the layout (as the store's rounds and the control API carry it too)."""

    seat: int
    wager: str
    amount_cents: int


@dataclass(frozen=True)
class SettledWager(Payload):
    """One wager's settlement as the log, the rounds table and the pay list carry it: the
    rules' figures (controller.rules.wager.Settlement), never worked out again."""

    seat: int
    wager: str
    amount_cents: int
    outcome: str
    odds: str
    win_cents: int
    vigorish_cents: int
    vig_marked_cents: int
    net_cents: int
    label: str
    section: str

    @classmethod
    def of(cls, s: Settlement, *, vigorish_marked: bool) -> SettledWager:
        """631a.13(d)(1)-(2): with marked vigorish the seat's net is the rules' own
        `Settlement.seat_net_cents`, the vigorish marked until collection."""
        # `made`: a settling card makes one a wager (its __init__ was 20,000 instructions).
        return cls.made(
            seat=s.seat, wager=s.wager, amount_cents=s.amount_cents, outcome=s.outcome.value,
            odds=str(s.odds), win_cents=s.win_cents, vigorish_cents=s.vigorish_cents,
            vig_marked_cents=s.marked_vigorish_cents(vigorish_marked=vigorish_marked),
            net_cents=s.seat_net_cents(vigorish_marked=vigorish_marked), label=s.label,
            section=s.section)

    @property
    def won(self) -> bool:
        return self.outcome == Outcome.WIN.value

    def payload(self) -> dict[str, Any]:
        """Encoded once: a settlement goes into two log entries (the settlement point's and
        the round's) and the round's row. A copy each time, for a caller may change its
        dict; its values are all flat, so the copy shares nothing that can change."""
        encoded: dict[str, Any] | None = self.__dict__.get("_encoded")
        if encoded is None:
            encoded = super().payload()
            object.__setattr__(self, "_encoded", encoded)
        return dict(encoded)


@dataclass(frozen=True)
class RoundResult(Payload):
    """A settled round's hands and winner (`round_settled`'s `result`); the side flags
    exist only for the games that have them (None: not this game)."""

    player: tuple[Card, ...]
    banker: tuple[Card, ...]
    player_total: int
    banker_total: int
    winner: str
    player_natural: bool | None = None
    banker_natural: bool | None = None
    dragon_7: bool | None = None
    panda_8: bool | None = None
    extra: tuple[Card, ...] = ()

    @property
    def natural(self) -> bool:
        return bool(self.player_natural or self.banker_natural)

    @classmethod
    def of(cls, view: RoundView, result: Any) -> RoundResult:
        """A coup's hands (its `round_view()`) and its game's result (`result()`): the
        side flags the result has, and the Bonus-only cards (681a.7(f)(2)) when dealt."""
        winner = result.winner
        flags = {flag: bool(getattr(result, flag)) for flag in
                 ("player_natural", "banker_natural", "dragon_7", "panda_8")
                 if hasattr(result, flag)}
        return cls(view.player, view.banker, view.player_total, view.banker_total,
                   str(getattr(winner, "value", winner)), extra=view.extra, **flags)


@dataclass(frozen=True)
class VoidOutcome(Payload):
    """A void round's `result` in the rounds table: why, and whether its wagers stand for
    the next live round (docs/rulings.md C19, C20)."""

    reason: str
    wagers_stand: bool = False
