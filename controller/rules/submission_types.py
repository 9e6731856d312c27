"""The validated Rules Submission as frozen data: what `submission.parse_submission` returns.

Its own module so that the wager registry (whose factories take a `GameConfig` and a
`WagerConfig`) and the parser (which looks wagers up in the registry) both depend on
it without depending on each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from controller.rules.money import Rounding

VIG_RATE = Fraction(5, 100)  # 631a.13(c)
MIN_CUT_CARDS = 10  # 631a.5(c), 681a.5(c)


@dataclass(frozen=True)
class TableConfig:
    """The `[table]` table."""

    id: str
    seats: int
    name: str = ""


@dataclass(frozen=True)
class VigorishConfig:
    """631a.13(c)-(d): 5% of the amount won, optional round-up to 25c, and when it is collected."""

    rate: Fraction = VIG_RATE
    round_up_to_25c: bool = False
    collection: str = "at-payout"  # "at-payout" 631a.13(d)(1) | "marked" 631a.13(d)(2)
    rounding: Rounding = Rounding.UP  # a fraction of a cent of vigorish (ruling)


@dataclass(frozen=True)
class CutConfig:
    """631a.5(c)-(d), 681a.5(c)-(d): where the cut and the second cover card go."""

    min_cut_cards: int = MIN_CUT_CARDS
    cover_card_from_bottom: int = 14


@dataclass(frozen=True)
class GameConfig:
    """The `[game]` table."""

    family: str
    decks: int
    variant: str = "standard"
    fully_automated: bool = False
    squeeze: bool = False  # 631a.9(d) procedure instead of 631a.9(c)
    payout_rounding: Rounding = Rounding.DOWN
    vigorish: VigorishConfig | None = None  # None: no vigorish (EZ, commission-free, 681a)
    tie_odds: Fraction = Fraction(8)
    disclosed_player_third: str = "discard"  # 631a.15(c)(1) "discard" | (2) "simulated-round"
    cut: CutConfig = field(default_factory=CutConfig)
    draw_rule: str = "one-card"  # 681a.7(g): one additional card (ruling); "to-17" optional
    bonus_cards: str = "first-three"  # 681a.3(e)
    natural_rule: str = "natural-wins"  # 681a.1 naturals vs other hands (hand21, ruling)

    @property
    def is_21(self) -> bool:
        return self.family == "21-baccarat"

    @property
    def shoe_cards(self) -> int:
        return 52 * self.decks


@dataclass(frozen=True)
class WagerConfig:
    """One `[wagers.<key>]` table: the common keys, and the rule's own options."""

    key: str
    paytable: str | None = None
    min_cents: int | None = None
    max_cents: int | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    without_base_wager: bool = False  # 631c.7(b): offered without a Baccarat wager


@dataclass(frozen=True)
class Submission:
    """A whole validated Rules Submission, read from `source`."""

    source: str
    table: TableConfig
    game: GameConfig
    wagers: tuple[WagerConfig, ...]

    def wager(self, key: str) -> WagerConfig | None:
        return next((w for w in self.wagers if w.key == key), None)
