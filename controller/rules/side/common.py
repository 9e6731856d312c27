"""Shared vocabulary of the 631c/627b side wagers: paytable lines as data, settlement helpers.

A side wager is a ranked paytable plus a classifier: `classify(view, seat)`
names the single highest line the round hits (or None for a loss), and the
generic `settle` turns that line into exact cents. Keeping the paytable as data
lets the par sheet and the progressive system read the same table the dealer
pays from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import ClassVar

from controller.errors import shown_setting
from controller.rules.baccarat import Hand
from controller.rules.money import Rounding, payout_cents, round_cents
from controller.rules.par import (
    MysteryPar, ParContext, ParLine, ProgressivePar, WagerPar,
)
from controller.rules.registry import WagerConfigError
from controller.rules.side import combinatorics
from controller.rules.wager import Outcome, RoundView, Settlement, SettlementPoint


# The families a chapter's side wagers are offered at: 631c at Baccarat, 627b at Minibaccarat.
BACCARAT, MINIBACCARAT = frozenset({"baccarat"}), frozenset({"minibaccarat"})
# A per-hand wager's configuration key ends in the hand's name (`perfect_pairs_player`).
HANDS = {"player": Hand.PLAYER, "banker": Hand.BANKER}

MAX_RESET_CENTS = 10**11
"""The largest seed a submission may give a meter ($1,000,000,000): far beyond any table's,
and small enough that a meter and everything it records stay inside the stores' 64-bit
integers (a seed of 10**30 was accepted and stopped the daemon's start with OverflowError
when the ledger seeded it)."""


class SideWagerConfigError(WagerConfigError):
    """A side wager's option is wrong; names the wager key, the option, the value and what is allowed.

    A `WagerConfigError`, so the Rules Submission parser reports it as
    `wagers.<key>.<option>` like any other wager's.
    """

    def __init__(self, key: str, option: str, value: object, allowed: str) -> None:
        super().__init__(option, value, allowed)
        self.key = key
        self.args = (f"wagers.{key}.{option} = {shown_setting(value)}: {allowed}",)


# --- what a paytable line pays ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FixedOdds:
    """'A to B' odds: the win is the wager times `odds`, the wager is returned on top."""

    odds: Fraction

    @classmethod
    def to(cls, a: int | str | Fraction, b: int = 1) -> FixedOdds:
        return cls(Fraction(a) / b)

    @classmethod
    def for_one(cls, n: int) -> FixedOdds:
        """'n for 1' includes the returned wager, so it is n - 1 to 1 (docs/rulings.md)."""
        if n < 1:
            raise ValueError(f"'{n} for 1' returns less than the wager")
        return cls(Fraction(n - 1))

    def describe(self) -> str:
        if self.odds.denominator == 1:
            return f"{self.odds.numerator} to 1"
        if self.odds < 1 and self.odds.numerator == 1:
            return f"1 to {self.odds.denominator}"
        return f"{float(self.odds):g} to 1"


@dataclass(frozen=True, slots=True)
class FixedAmount:
    """A fixed prize in cents for a wager of one fixed denomination (627b.3(f)-(g))."""

    cents: int

    def describe(self) -> str:
        return f"${self.cents // 100:,}" + (f".{self.cents % 100:02d}" if self.cents % 100 else "")


@dataclass(frozen=True, slots=True)
class PaysMeter:
    """A share of a live progressive meter; the progressive system supplies the meter's amount."""

    level: str  # e.g. "progressive", "mega", "major", "minor"
    fraction: Fraction = Fraction(1)

    def describe(self) -> str:
        return f"{self.fraction * 100}% of the {self.level} meter"


@dataclass(frozen=True, slots=True)
class Push:
    """The wager is returned (e.g. a natural tie on Golden Talons, 627b.5(f))."""

    def describe(self) -> str:
        return "push"


Pay = FixedOdds | FixedAmount | PaysMeter | Push


@dataclass(frozen=True, slots=True)
class MeterSpec:
    """A progressive meter's parameters as the Rules Submission fixes them.

    Rates are exact shares of each wager: `increment_rate` goes to the live
    meter, `reserve_rate` to the reserve that funds the next reseed.
    """

    level: str
    reset_cents: int | None  # seed and reseed amount; None when the submission leaves it open
    increment_rate: Fraction | None  # None when the submission must state it
    section: str
    reserve_rate: Fraction = Fraction(0)
    minimum_reset_cents: int = 0  # the regulation's floor for reset_cents

    @property
    def increment_text(self) -> str:
        """The increment as a par sheet's note prints it."""
        return "unstated" if self.increment_rate is None else f"{self.increment_rate * 100}%"


@dataclass(frozen=True, slots=True)
class PayLine:
    """One line of a paytable: its label, what it pays and the clause that defines it."""

    label: str
    pay: Pay
    section: str


@dataclass(frozen=True, slots=True)
class Paytable:
    """A ranked paytable: earlier lines outrank later ones when a round hits several."""

    name: str  # the letter or configuration, e.g. "A", "$5"
    section: str  # the clause that holds the table, e.g. "631c.1(d)"
    lines: tuple[PayLine, ...]

    def line(self, label: str) -> PayLine:
        for line in self.lines:
            if line.label == label:
                return line
        raise KeyError(f"paytable {self.name} ({self.section}) has no line {label!r}")

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(line.label for line in self.lines)


def odds_table(
    section: str,
    rows: Sequence[tuple[str, str, Mapping[str, Pay | None]]],
) -> dict[str, Paytable]:
    """Build lettered paytables from the regulation's row layout.

    Each row is (label, clause of the outcome, {letter: pay or None}); None is
    the regulation's "N/A", i.e. the line does not exist in that paytable.
    """
    letters: list[str] = []
    for _, _, cells in rows:
        for letter in cells:
            if letter not in letters:
                letters.append(letter)
    return {
        letter: Paytable(letter, section, tuple(
            PayLine(label, cells[letter], clause)  # type: ignore[arg-type]
            for label, clause, cells in rows if cells.get(letter) is not None))
        for letter in letters
    }


def choose(key: str, option: str, value: object, allowed: Mapping[str, object]) -> str:
    """Validate a lettered option; the error names the key, value and allowed letters."""
    text = str(value).strip().upper() if isinstance(value, str) else value
    if not isinstance(text, str) or text not in allowed:
        raise SideWagerConfigError(
            key, option, value, "allowed: " + ", ".join(repr(a) for a in allowed))
    return text


# --- settlement --------------------------------------------------------------------------------


def win_for(amount_cents: int, pay: FixedOdds | FixedAmount, rounding: Rounding) -> tuple[Fraction, int]:
    """(odds to 1 actually applied, whole cents won) for a fixed line."""
    if isinstance(pay, FixedOdds):
        return pay.odds, payout_cents(amount_cents, pay.odds, rounding)
    return Fraction(pay.cents, amount_cents), pay.cents


def settle_line(
    key: str, seat: int, amount_cents: int, line: PayLine | None, lose_section: str,
    rounding: Rounding = Rounding.DOWN,
) -> Settlement:
    """Turn the line a round hit (None: no line, the wager loses) into a Settlement.

    A meter line (`PaysMeter`) settles as a win of 0 cents here: the amount is
    the progressive system's, computed with `meter_win_cents` from the live
    meter at the moment of the hit.
    """
    if amount_cents <= 0:
        raise ValueError(f"{key}: wager of {amount_cents} cents; a wager must be positive")
    if line is None:
        return Settlement(key, seat, amount_cents, Outcome.LOSE, Fraction(0), 0, 0,
                          "no paying outcome", lose_section)
    if isinstance(line.pay, Push):
        return Settlement(key, seat, amount_cents, Outcome.PUSH, Fraction(0), 0, 0,
                          line.label, line.section)
    if isinstance(line.pay, PaysMeter):
        return Settlement(key, seat, amount_cents, Outcome.WIN, Fraction(0), 0, 0,
                          f"{line.label} ({line.pay.describe()})", line.section)
    odds, cents = win_for(amount_cents, line.pay, rounding)
    return Settlement(key, seat, amount_cents, Outcome.WIN, odds, cents, 0, line.label, line.section)


def meter_par(
    paytable: Paytable, distribution: Mapping[str, Fraction], resets: Mapping[str, int],
    wager_cents: int, note: str,
) -> ProgressivePar:
    """Return of a paytable's meter lines at the reset amounts, and per $1 on every meter."""
    at_reset = per_dollar = Fraction(0)
    for line in paytable.lines:
        if isinstance(line.pay, PaysMeter):
            p = distribution[line.label] * line.pay.fraction
            at_reset += p * Fraction(resets.get(line.pay.level, 0), wager_cents)
            per_dollar += p * Fraction(100, wager_cents)
    headline = max(resets.values(), default=0)
    return ProgressivePar(headline, at_reset, per_dollar, wager_cents, note)


def meter_win_cents(pay: PaysMeter, meter_cents: int, rounding: Rounding = Rounding.DOWN) -> int:
    """The exact win for a meter line given the meter's amount at the hit, in whole cents."""
    if meter_cents < 0:
        raise ValueError(f"meter of {meter_cents} cents is negative")
    return round_cents(pay.fraction * meter_cents, rounding)


class ParSpace:
    """Which exact space a wager's par sheet is enumerated over (see `combinatorics`)."""

    HAND = "initial two cards of one hand"
    FIRST_FOUR = "first four cards over card classes"
    COUP = "complete coup over values"
    COUP_WITH_SUITS = "complete coup over values, split by rank/suit/colour uniformity"


class LineWager:
    """Mixin for a wager settled from one ranked paytable.

    Subclasses are frozen dataclasses with `key`, `section`, `settles_at`,
    `paytable` and `rounding`, and implement `classify` (and `hand` for a
    one-hand wager, `card_classes` for a first-four-cards wager).
    """

    key: str
    section: str
    settles_at: SettlementPoint
    paytable: Paytable
    rounding: Rounding
    par_space: ClassVar[str] = ParSpace.COUP
    lose_section: ClassVar[str] = ""

    def classify(self, view: RoundView, seat: int = 1) -> PayLine | None:
        """The single highest paytable line this round hits for `seat`, or None (a loss)."""
        raise NotImplementedError

    def at_meters(self, standing_cents: Mapping[str, int]) -> LineWager:
        """This rule reading the meters as they stand (whole cents by level): a wager whose
        choice of line depends on a meter's amount (Royal 9, docs/rulings.md) overrides it."""
        return self

    def settle(self, seat: int, amount_cents: int, round_view: RoundView) -> Settlement:
        line = self.classify(round_view, seat)
        return settle_line(self.key, seat, amount_cents, line,
                           self.lose_section or self.section, self.rounding)

    @property
    def name(self) -> str:
        """A human title for par sheets, e.g. 'Perfect Pairs Player'."""
        return self.key.replace("_", " ").title()

    def par_notes(self) -> tuple[str, ...]:
        return ()

    def progressive_par(self, distribution: Mapping[str, Fraction]) -> ProgressivePar | None:
        """Return from the meter lines; None for a wager without a meter."""
        return None

    def mystery_par(self) -> MysteryPar | None:
        return None

    def par(self, ctx: ParContext, seat: int = 1) -> WagerPar:
        """The exact par sheet for the registry's `tablectl par-sheet` (controller.rules.par)."""
        shared = None
        if self.par_space == ParSpace.COUP:
            # Share the core engine's value-level enumeration of the sheet.
            weights: dict[combinatorics.Signature, int] = {}
            for facts, w in ctx.round_facts.items():
                sig = (facts.player_total, facts.banker_total, facts.player_cards,
                       facts.banker_cards)
                weights[sig] = weights.get(sig, 0) + w
            shared = (weights, ctx.six_card_denominator)
        distribution = self.exact_distribution(ctx.game.decks, seat, shared)
        lines: list[ParLine] = []
        for line in self.paytable.lines:
            p = distribution[line.label]
            pay = line.pay
            if isinstance(pay, Push):
                lines.append(ParLine(line.label, Outcome.PUSH, Fraction(0), p, Fraction(0),
                                     line.section))
            elif isinstance(pay, PaysMeter):
                # Its return depends on the live meter: see WagerPar.progressive.
                lines.append(ParLine(f"{line.label} [{pay.describe()}]", Outcome.WIN,
                                     Fraction(0), p, Fraction(0), line.section))
            else:
                odds = pay.odds if isinstance(pay, FixedOdds) else self.par_odds(line)
                lines.append(ParLine(line.label, Outcome.WIN, odds, p, self.par_odds(line),
                                     line.section))
        lose = 1 - sum(distribution.values(), Fraction(0))
        lines.append(ParLine("Loss", Outcome.LOSE, Fraction(0), lose, Fraction(-1),
                             self.lose_section or self.section))
        return WagerPar(key=self.key, name=self.name, section=self.section, lines=tuple(lines),
                        paytable=self.paytable.name if self.paytable.name.isalpha() else None,
                        notes=self.par_notes(),
                        progressive=self.progressive_par(distribution),
                        mystery=self.mystery_par())

    def par_odds(self, line: PayLine) -> Fraction:
        """What a line returns per unit wagered, net of vigorish (for the par sheet)."""
        pay = line.pay
        if isinstance(pay, FixedOdds):
            return pay.odds
        if isinstance(pay, FixedAmount):
            return Fraction(pay.cents, getattr(self, "denomination_cents"))
        return Fraction(0)

    def card_classes(self) -> Sequence[combinatorics.CardClass]:
        return combinatorics.all_identities()

    def exact_distribution(
        self, decks: int, seat: int = 1,
        coup_space: tuple[Mapping[combinatorics.Signature, int], int] | None = None,
    ) -> dict[str, Fraction]:
        """Exact probability of every paytable line from a full shoe of `decks` decks.

        Lines are keyed by label in paytable order; the wager loses with the
        remaining probability. `coup_space` optionally supplies value-level
        coup weights (see `par`).
        """
        if decks < 1:
            raise ValueError(f"decks = {decks}: a shoe holds at least one deck")

        def label(view: RoundView) -> str | None:
            line = self.classify(view, seat)
            return line.label if line is not None else None

        if self.par_space == ParSpace.HAND:
            raw = combinatorics.initial_hand_distribution(
                decks, getattr(self, "hand") is Hand.PLAYER, label)
        elif self.par_space == ParSpace.FIRST_FOUR:
            raw = combinatorics.initial_four_distribution(self.card_classes(), decks, label)
        else:
            with_suits = self.par_space == ParSpace.COUP_WITH_SUITS
            raw = combinatorics.coup_distribution(
                decks, with_suits, label, None if with_suits else coup_space)
        return {line.label: raw.get(line.label, Fraction(0)) for line in self.paytable.lines}

    def house_edge(self, decks: int, *, meter_return: Mapping[str, Fraction] | None = None,
                   seat: int = 1) -> Fraction:
        """Exact house edge per unit wagered (pushes return the wager).

        A `FixedAmount` line returns its amount over the denomination; a meter
        line needs `meter_return[level]`, the meter's amount over the wager.
        """
        distribution = self.exact_distribution(decks, seat)
        expected = -(1 - sum(distribution.values(), Fraction(0)))
        for line in self.paytable.lines:
            p = distribution[line.label]
            pay = line.pay
            if isinstance(pay, (FixedOdds, FixedAmount)):
                expected += p * self.par_odds(line)
            elif isinstance(pay, PaysMeter):
                if p and (meter_return is None or pay.level not in meter_return):
                    raise ValueError(f"{self.key}: line {line.label!r} pays the {pay.level} "
                                     "meter; give its return in meter_return")
                if p:
                    expected += p * pay.fraction * (meter_return or {})[pay.level]
        return -expected
