"""Royal 9 Progressive (627b.3): a face card and a nine as a hand's first two cards.

Every position has its own King-9 combination printed on the layout
(627b.3(e)(5)); since a table has up to 14 positions and only one King-9 by
rank, a combination is a (king's suit, nine's suit) pair, 16 in all. The
wager is of one denomination, $5 or $1, with fixed dollar prizes and three
meters (Mega, Major, Minor) per 627b.3(f)-(g). It settles after the first
four cards, before any third card (627b.3(d)).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import ClassVar

from cards import Card, Rank, Suit
from controller.rules.money import Rounding
from controller.rules.par import MysteryPar, ProgressivePar
from controller.rules.side.combinatorics import CardClass
from controller.rules.registry import wager_rule
from controller.rules.side.card_facts import is_face
from controller.rules.side.common import (
    MAX_RESET_CENTS, MINIBACCARAT, FixedAmount, LineWager, MeterSpec, ParSpace, PayLine,
    Paytable, PaysMeter, SideWagerConfigError, meter_par,
)
from controller.rules.side.mystery import ROYAL_9_MYSTERY_CONFIGURATIONS, Royal9MysteryConfiguration
from controller.rules.submission_types import GameConfig, WagerConfig
from controller.rules.wager import RoundView, Settlement, SettlementPoint, WagerRule

MEGA, MAJOR, MINOR = "Personal King 9 v. Personal King 9", "Personal King 9 on Banker Hand", \
    "Personal King 9 on Player Hand"
MEGA_ENVY = "Mega Envy - Any Position's King 9 v. King 9"
SUITED_TIE, TIE = "Suited Royal 9 Tie Hand", "Royal 9 Tie Hand"
ANY_SUITED, ANY = "Any Suited Royal 9", "Any Royal 9"

KingNine = tuple[Suit, Suit]  # (king's suit, nine's suit)

# How a personal King 9 (Major (e)(7) / Minor (e)(8)) in a round that is also a Suited Royal
# 9 Tie ((e)(4)) is paid (docs/rulings.md, Royal 9): the greater of the meter as it stands and
# the tie's fixed amount; the meter, as 627b.3(f)(1)'s order ranks it; or the fixed amount.
GREATER, METER, FIXED = "greater", "meter", "fixed"
SUITED_TIE_READINGS = (GREATER, METER, FIXED)
SUITED_TIE_PERSONAL_HELP = ("how a personal King 9 in a Suited Royal 9 Tie is paid "
                            "(docs/rulings.md): 'greater' (default) of the meter as it stands "
                            "and the tie's fixed amount, 'meter' (627b.3(f)(1)'s order) or "
                            "'fixed' (the tie's amount)")


def _paytable(section: str, envy: int, suited_tie: int, tie: int, suited: int, any_: int) -> Paytable:
    return Paytable(section, section, (
        PayLine(MEGA, PaysMeter("mega"), "627b.3(e)(6)"),
        PayLine(MAJOR, PaysMeter("major"), "627b.3(e)(7)"),
        PayLine(MINOR, PaysMeter("minor"), "627b.3(e)(8)"),
        PayLine(MEGA_ENVY, FixedAmount(envy * 100), "627b.3(e)(9)"),
        PayLine(SUITED_TIE, FixedAmount(suited_tie * 100), "627b.3(e)(4)"),
        PayLine(TIE, FixedAmount(tie * 100), "627b.3(e)(3)"),
        PayLine(ANY_SUITED, FixedAmount(suited * 100), "627b.3(e)(2)"),
        PayLine(ANY, FixedAmount(any_ * 100), "627b.3(e)(1)"),
    ))


# Denomination in cents -> paytable, and the regulation's minimum meter resets (cents).
ROYAL_9_PAYTABLES: dict[int, Paytable] = {
    500: _paytable("627b.3(f)(1)", 5000, 1500, 250, 50, 25),
    100: _paytable("627b.3(g)(1)", 1000, 300, 50, 10, 5),
}
ROYAL_9_MINIMUM_RESETS: dict[int, dict[str, int]] = {
    500: {"mega": 5_000_000, "major": 45_000, "minor": 45_000},  # 627b.3(f)(2)
    100: {"mega": 1_000_000, "major": 9_000, "minor": 9_000},  # 627b.3(g)(2)
}

_SUIT_LETTERS = {"C": Suit.CLUBS, "D": Suit.DIAMONDS, "H": Suit.HEARTS, "S": Suit.SPADES}


def default_combinations(seats: int = 14) -> dict[int, KingNine]:
    """A layout's default assignment: seat n gets the n-th (king suit, nine suit) pair.

    Suits run clubs, diamonds, hearts, spades; the king's suit varies slowest.
    A Rules Submission may print any other unique assignment.
    """
    pairs = [(k, n) for k in Suit for n in Suit]
    return {seat: pairs[seat - 1] for seat in range(1, seats + 1)}


def parse_combination(key: str, seat: object, text: object) -> KingNine:
    """'KS9H' -> (spades, hearts); errors name the option and the expected form."""
    raw = str(text).strip().upper().replace("♠", "S").replace("♥", "H").replace("♦", "D") \
        .replace("♣", "C")
    if len(raw) == 4 and raw[0] == "K" and raw[2] == "9" and raw[1] in _SUIT_LETTERS \
            and raw[3] in _SUIT_LETTERS:
        return _SUIT_LETTERS[raw[1]], _SUIT_LETTERS[raw[3]]
    raise SideWagerConfigError(key, f"personal_combinations.{seat}", text,
                               "expected a king and a nine with suits, e.g. 'KS9H'")


# The ranks these tests compare with, named once: the par sheet asks them of every pair of
# first-four hands, and a member looked up on an enum class (`Rank.NINE`) takes about 0.1 us
# in Python 3.11 (see card_facts.FACE_RANKS).
_KING, _NINE = Rank.KING, Rank.NINE


def king_nine(cards: Sequence[Card]) -> KingNine | None:
    """The hand's King-9 combination, if its two cards are exactly a king and a nine."""
    # Compared by identity, not as a set of ranks: hashing the enum members was a good part
    # of the par sheet's time.
    first, second = cards[0], cards[1]
    if first.rank is _KING and second.rank is _NINE:
        return first.suit, second.suit
    if first.rank is _NINE and second.rank is _KING:
        return second.suit, first.suit
    return None


def royal_9(cards: Sequence[Card]) -> bool:
    """627b.3(b): a face card (K, Q, J) and a nine."""
    # The nine first: most hands hold none.
    a, b = cards[0], cards[1]
    return (b.rank is _NINE and is_face(a)) or (a.rank is _NINE and is_face(b))


@dataclass(frozen=True)
class Royal9Progressive(LineWager):
    """The Royal 9 progressive wager of one table: its denomination, every position's King 9,
    its meters and mystery configuration (627b.3)."""

    key: str
    denomination_cents: int
    combinations: Mapping[int, KingNine]  # every position of the table, occupied or not
    meters: tuple[MeterSpec, ...] = ()
    mystery: Royal9MysteryConfiguration | None = None
    rounding: Rounding = Rounding.DOWN
    # A personal King 9 on one hand (Major / Minor) in a round that is also a Suited Royal 9
    # Tie: 627b.3(e) makes both winning hands; the wager is paid one line, chosen by this
    # reading (docs/rulings.md, Royal 9): GREATER, METER or FIXED (SUITED_TIE_READINGS).
    suited_tie_personal: str = GREATER
    # The meters as they stand at the hit, cents by level (`at_meters`); None: at their
    # configured resets (the par sheet, and a table that keeps no meters of its own).
    standing_cents: Mapping[str, int] | None = None
    section: str = "627b.3"
    settles_at: SettlementPoint = SettlementPoint.FIRST_FOUR_CARDS
    par_space: ClassVar[str] = ParSpace.FIRST_FOUR
    lose_section: ClassVar[str] = "627b.3(e)"
    _assigned: frozenset[KingNine] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_assigned", frozenset(self.combinations.values()))

    @property
    def paytable(self) -> Paytable:  # type: ignore[override]
        return ROYAL_9_PAYTABLES[self.denomination_cents]

    def classify(self, view: RoundView, seat: int = 1) -> PayLine | None:
        player, banker = view.player[:2], view.banker[:2]
        p9, b9 = royal_9(player), royal_9(banker)
        if not (p9 or b9):
            # Every line needs a Royal 9 in a hand, and a King 9 is one (a king is a face
            # card, 627b.3(b)): no line pays. Most hands hold none, so this is decided first.
            return None
        table = self.paytable
        mine = self.combinations.get(seat)
        kp, kb = king_nine(player), king_nine(banker)
        p_suited = p9 and player[0].suit == player[1].suit
        b_suited = b9 and banker[0].suit == banker[1].suit
        if mine is not None:
            if kp == mine and kb == mine:
                return table.line(MEGA)  # 627b.3(e)(6)
            personal = MAJOR if kb == mine else MINOR if kp == mine else None
            if personal is not None and p_suited and b_suited \
                    and self._suited_tie_outranks(table.line(personal)):
                return table.line(SUITED_TIE)  # 627b.3(e)(4) over (e)(7)/(8), ruling
            if personal is not None:
                return table.line(personal)  # 627b.3(e)(7) Major, (e)(8) Minor
        # 627b.3(e)(9): the same position's King 9 in both hands pays every other
        # wagering seat, whether or not that position is occupied or wagering.
        if kp is not None and kp == kb and kp in self._assigned:
            return table.line(MEGA_ENVY)
        if p_suited and b_suited:
            return table.line(SUITED_TIE)
        if p9 and b9:
            return table.line(TIE)
        if p_suited or b_suited:
            return table.line(ANY_SUITED)
        if p9 or b9:
            return table.line(ANY)
        return None

    def _suited_tie_outranks(self, personal: PayLine) -> bool:
        """Whether the Suited Royal 9 Tie's fixed amount is paid instead of the personal
        meter line (docs/rulings.md, Royal 9): never under METER, always under FIXED, and
        under GREATER when it is more than the meter as it stands (at its reset when the
        rule was not given the meters); a meter equal to it pays the meter."""
        if self.suited_tie_personal == METER:
            return False
        if self.suited_tie_personal == FIXED:
            return True
        assert isinstance(personal.pay, PaysMeter)
        tie = self.paytable.line(SUITED_TIE).pay
        assert isinstance(tie, FixedAmount)
        return tie.cents > self.meter_standing(personal.pay.level)

    def meter_standing(self, level: str) -> int:
        """The meter `level` in whole cents as this rule reads it: as it stands
        (`at_meters`), or at its configured reset."""
        if self.standing_cents is not None and level in self.standing_cents:
            return self.standing_cents[level]
        return next((m.reset_cents or 0 for m in self.meters if m.level == level), 0)

    def at_meters(self, standing_cents: Mapping[str, int]) -> Royal9Progressive:
        """This rule reading the meters as they stand (whole cents by level)."""
        return replace(self, standing_cents=dict(standing_cents))

    @property
    def name(self) -> str:
        return f"Royal 9 Progressive (${self.denomination_cents // 100})"

    def par_notes(self) -> tuple[str, ...]:
        return ("figures for seat 1's personal King 9; Mega Envy counts the "
                f"{len(self.combinations)} positions' combinations (627b.3(e)(9))",
                f"a personal King 9 in a Suited Royal 9 Tie: {self.suited_tie_personal!r} "
                "reading, meters at their resets (docs/rulings.md, Royal 9)")

    def progressive_par(self, distribution: Mapping[str, Fraction]) -> ProgressivePar:
        resets = {m.level: m.reset_cents or 0 for m in self.meters}
        return meter_par(self.paytable, distribution, resets, self.denomination_cents,
                         "meters at their configured resets ("
                         + ", ".join(f"{k} {v} cents" for k, v in resets.items())
                         + "); per-dollar growth is $1 on each meter")

    def mystery_par(self) -> MysteryPar | None:
        if self.mystery is None:
            return None
        m = self.mystery
        return MysteryPar(m.increment_rate,
                          f"mystery configuration {m.number} (627b.3(h)): reseed "
                          f"${m.reseed_cents // 100}, must hit by ${m.must_hit_by_cents // 100}; "
                          "in the long run it pays out every increment; the reseed is funded "
                          "by the operator and not included")

    def settle(self, seat: int, amount_cents: int, round_view: RoundView) -> Settlement:
        if amount_cents != self.denomination_cents:
            raise ValueError(f"{self.key}: a wager of {amount_cents} cents on a "
                             f"{self.denomination_cents}-cent Royal 9 (627b.3(f)-(g))")
        return super().settle(seat, amount_cents, round_view)

    def card_classes(self) -> Sequence[CardClass]:
        # Kings and nines by suit (the personal combinations), queens and jacks by
        # suit (suited Royal 9s), and everything else alike.
        return ([(Card(Rank.KING, s), 1) for s in Suit] + [(Card(Rank.NINE, s), 1) for s in Suit]
                + [(Card(Rank.QUEEN, s), 2) for s in Suit] + [(Card(Rank.TWO, Suit.CLUBS), 36)])


def make_royal_9(
    key: str, denomination_dollars: object, meters: object, combinations: object = None,
    mystery: object = None, positions: int = 14, rounding: Rounding = Rounding.DOWN,
    suited_tie_personal: object = GREATER,
) -> Royal9Progressive:
    """Validate a Royal 9 configuration.

    `meters` maps "mega"/"major"/"minor" to {reset_cents, increment_percent}: the
    submission must state the rate of progression and reset amounts, at least
    the regulation's minimums (627b.3(f)(2), (g)(2)).
    """
    if denomination_dollars not in (1, 5) or isinstance(denomination_dollars, bool):
        raise SideWagerConfigError(key, "denomination_dollars", denomination_dollars,
                                   "allowed: 1, 5 (627b.3(f)-(g))")
    denomination = int(denomination_dollars) * 100
    minimums = ROYAL_9_MINIMUM_RESETS[denomination]
    if not isinstance(meters, Mapping) or set(meters) != set(minimums):
        raise SideWagerConfigError(key, "meters", meters,
                                   "a table for each of mega, major, minor "
                                   "with reset_cents and increment_percent (627b.3(f)(2))")
    specs = []
    for level, floor in minimums.items():
        entry = meters[level]
        reset = entry.get("reset_cents") if isinstance(entry, Mapping) else None
        rate = entry.get("increment_percent") if isinstance(entry, Mapping) else None
        if isinstance(reset, bool) or not isinstance(reset, int) \
                or not floor <= reset <= MAX_RESET_CENTS:
            raise SideWagerConfigError(key, f"meters.{level}.reset_cents", reset,
                                       f"an integer of at least {floor} cents for a "
                                       f"${denomination // 100} wager (627b.3(f)(2), (g)(2)), "
                                       f"at most {MAX_RESET_CENTS:,}")
        try:
            percent = Fraction(str(rate))
        except (ValueError, ZeroDivisionError):
            percent = Fraction(-1)
        if rate is None or isinstance(rate, bool) or not 0 < percent < 100:
            raise SideWagerConfigError(key, f"meters.{level}.increment_percent", rate,
                                       "a percentage between 0 and 100, e.g. '1.5'")
        specs.append(MeterSpec(level, reset, percent / 100, "627b.3(f)(2)",
                               minimum_reset_cents=floor))
    if combinations is None:
        assigned = default_combinations(positions)
    elif isinstance(combinations, Mapping):
        assigned = {}
        for seat_text, text in combinations.items():
            try:
                seat = int(seat_text)
            except ValueError:
                seat = 0
            if not 1 <= seat <= positions:
                raise SideWagerConfigError(key, "personal_combinations", seat_text,
                                           f"seat numbers 1 to {positions}")
            assigned[seat] = parse_combination(key, seat_text, text)
        if len(set(assigned.values())) != len(assigned):
            raise SideWagerConfigError(key, "personal_combinations", combinations,
                                       "each position's King 9 must be unique (627b.3(e)(5))")
    else:
        raise SideWagerConfigError(key, "personal_combinations", combinations,
                                   "a table of seat = 'KS9H'")
    config = None
    if mystery is not None:
        if mystery not in ROYAL_9_MYSTERY_CONFIGURATIONS or isinstance(mystery, bool):
            raise SideWagerConfigError(key, "mystery", mystery, "allowed: 1, 2, 3 (627b.3(h))")
        config = ROYAL_9_MYSTERY_CONFIGURATIONS[mystery]
    if suited_tie_personal not in SUITED_TIE_READINGS:
        raise SideWagerConfigError(key, "suited_tie_personal", suited_tie_personal,
                                   "allowed: " + ", ".join(repr(r) for r in SUITED_TIE_READINGS)
                                   + " (docs/rulings.md, Royal 9)")
    return Royal9Progressive(key, denomination, assigned, tuple(specs), config, rounding,
                             str(suited_tie_personal))


# --- Registration (controller.rules.registry.WAGER_MODULES names this module) ----------------

@wager_rule("royal_9_progressive", section="627b.3", families=MINIBACCARAT, progressive=True,
            options={
                "denomination_dollars": "1 or 5 (627b.3(f)-(g))",
                "meters": "mega/major/minor tables of reset_cents and increment_percent "
                          "(627b.3(f)(2), (g)(2))",
                "personal_combinations": "seat = 'KS9H' for every position (627b.3(e)(5)); "
                                         "default: the documented layout order",
                "positions": "how many positions the layout has (default 14)",
                "mystery": "mystery progressive configuration 1, 2 or 3 (627b.3(h))",
                "suited_tie_personal": SUITED_TIE_PERSONAL_HELP,
            },
            description="Royal 9 progressive")
def _royal_9(config: WagerConfig, game: GameConfig) -> WagerRule:
    positions = config.options.get("positions", 14)
    if isinstance(positions, bool) or not isinstance(positions, int) or not 1 <= positions <= 16:
        raise SideWagerConfigError(config.key, "positions", positions,
                                   "an integer 1..16 (one unique King 9 per position)")
    rule = make_royal_9(config.key, config.options.get("denomination_dollars"),
                        config.options.get("meters"), config.options.get("personal_combinations"),
                        config.options.get("mystery"), positions, game.payout_rounding,
                        config.options.get("suited_tie_personal", GREATER))
    # 627b.3(f)-(g): the wager is exactly its denomination, so a table limit that lets any
    # other amount onto the layout is refused here, not met as an error at the first four.
    for bound, value in (("min_cents", config.min_cents), ("max_cents", config.max_cents)):
        if value is not None and value != rule.denomination_cents:
            raise SideWagerConfigError(
                config.key, bound, value,
                f"allowed: {rule.denomination_cents} only; a Royal 9 wager is exactly its "
                f"${rule.denomination_cents // 100} denomination (627b.3(f)-(g))")
    return rule
