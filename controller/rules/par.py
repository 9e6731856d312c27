"""Exact par sheets: every paying outcome's probability, hit frequency and house edge.

Nothing here simulates: the main 631a game is enumerated exactly
(controller/rules/par_enumerate.py); `tablectl par-sheet` renders the sheet
(controller/rules/par_render.py).

A wager rule takes part by providing `par(ctx: ParContext) -> WagerPar`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from controller.errors import ControllerError
from cards import Card, Rank, Suit
from controller.rules.card_values import baccarat_value
from controller.rules.money import Rounding, payout_cents, vigorish_cents
from controller.rules.wager import Outcome, Settlement
from controller.rules.par_enumerate import (  # re-exported: the wagers' par reads them here
    SHOE_PARTS as SHOE_PARTS,
    TABLE_DECKS as TABLE_DECKS,
    RoundClass as RoundClass,
    RoundFacts as RoundFacts,
    collapse as collapse,
    enumerate_raw as enumerate_raw,
    enumerate_rounds as enumerate_rounds,
    evaluate_in_decks as evaluate_in_decks,
    fact_polynomials as fact_polynomials,
    falling as falling,
    full_shoe_facts as full_shoe_facts,
    polynomials_in_decks as polynomials_in_decks,
    value_facts as value_facts,
)

if TYPE_CHECKING:
    from controller.rules.submission_types import GameConfig, VigorishConfig


_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Resolution:
    """How one wager fares on one class of rounds."""

    outcome: Outcome
    label: str
    section: str
    odds: Fraction = Fraction(0)
    vig_rate: Fraction = Fraction(0)

    def __hash__(self) -> int:
        # Par sheets add weights by Resolution thousands of times; hashing the two Fractions
        # (a modular inverse each) and the Outcome member (a Python-level hash) was most of
        # that. Equal resolutions have equal labels and sections, so hashing those two
        # strings alone keeps the hash consistent with the generated __eq__.
        return hash((self.label, self.section))

    @property
    def net(self) -> Fraction:
        """Return per unit wagered (the par sheet ignores vigorish rounding, see rulings)."""
        if self.outcome is Outcome.WIN:
            return self.odds * (1 - self.vig_rate)
        return Fraction(-1) if self.outcome is Outcome.LOSE else Fraction(0)


def settlement_of(key: str, seat: int, amount_cents: int, r: Resolution, rounding: Rounding,
                  vig: VigorishConfig | None = None) -> Settlement:
    """The one place a Resolution becomes cents, for the 631a and 681a wagers' `settle`
    (money.py does the rounding)."""
    if r.outcome is not Outcome.WIN:
        return Settlement(wager=key, seat=seat, amount_cents=amount_cents, outcome=r.outcome,
                          odds=Fraction(0), win_cents=0, vigorish_cents=0, label=r.label,
                          section=r.section)
    win = payout_cents(amount_cents, r.odds, rounding)
    owed = 0
    if r.vig_rate and vig is not None:
        owed = vigorish_cents(win, vig.rate, round_up_to_25c=vig.round_up_to_25c,
                              rounding=vig.rounding)
    return Settlement(wager=key, seat=seat, amount_cents=amount_cents, outcome=Outcome.WIN,
                      odds=r.odds, win_cents=win, vigorish_cents=owed, label=r.label,
                      section=r.section)


@dataclass(frozen=True, slots=True)
class ParLine:
    """One paying outcome of a wager on the par sheet, with its exact probability."""

    label: str
    outcome: Outcome
    odds: Fraction
    probability: Fraction
    net: Fraction  # return per unit when this line happens
    section: str = ""


@dataclass(frozen=True)
class ProgressivePar:
    """A progressive wager's return at the reset value and its growth with the meter."""

    reset_cents: int
    # Expected return per unit wagered that the meter-paid outcomes add with the meter at its
    # reset value, on top of `WagerPar.lines` (whose meter-paid lines carry net 0).
    return_at_reset: Fraction
    return_per_meter_dollar: Fraction  # added expected return per unit for each $1 on the meter
    wager_cents: int  # the wager amount the meter figures assume
    note: str = ""


@dataclass(frozen=True)
class MysteryPar:
    """A mystery bonus's expected contribution per unit wagered on the qualifying wager."""

    expected_contribution: Fraction
    note: str = ""


@dataclass(frozen=True)
class WagerPar:
    """One wager's par sheet: its outcome lines and, for a progressive, its meters' par."""

    key: str
    name: str
    section: str
    lines: tuple[ParLine, ...]
    paytable: str | None = None
    notes: tuple[str, ...] = ()
    progressive: ProgressivePar | None = None
    mystery: MysteryPar | None = None

    @property
    def expected_return(self) -> Fraction:
        base = sum((line.probability * line.net for line in self.lines), Fraction(0))
        if self.progressive is not None:
            base += self.progressive.return_at_reset
        if self.mystery is not None:
            base += self.mystery.expected_contribution
        return base

    @property
    def house_edge(self) -> Fraction:
        """Per unit wagered; pushes count as zero return."""
        return -self.expected_return

    @property
    def hit_frequency(self) -> Fraction:
        return sum((line.probability for line in self.lines if line.outcome is Outcome.WIN),
                   Fraction(0))

    @property
    def total_probability(self) -> Fraction:
        return sum((line.probability for line in self.lines), Fraction(0))


class ParUnavailable(ControllerError):
    """Raised by a rule's `par` when no exact analysis can be given; the sheet says why."""


@runtime_checkable
class ParRule(Protocol):
    """A wager rule that can state its exact par sheet."""

    key: str

    def par(self, ctx: ParContext) -> WagerPar: ...


@dataclass(frozen=True)
class ShoeComposition:
    """How many of each card the configured shoe holds (a full shoe: `decks` of each card)."""

    decks: int

    @property
    def total(self) -> int:
        return 52 * self.decks

    def count(self, card: Card) -> int:
        return self.decks

    @property
    def rank_counts(self) -> dict[Rank, int]:
        return {rank: 4 * self.decks for rank in Rank}

    @property
    def card_counts(self) -> dict[Card, int]:
        return {Card(rank, suit): self.decks for rank in Rank for suit in Suit}

    @property
    def value_counts(self) -> list[int]:
        """631a.6(a) values 0..9: 10/J/Q/K are worth zero."""
        return [16 * self.decks] + [4 * self.decks] * 9


class ParContext:
    """What a wager rule may use to compute its exact par: the shoe and shared enumerations.

    Enumerations are computed lazily and shared by every wager of the sheet.
    """

    def __init__(self, game: GameConfig) -> None:
        self.game = game
        self.shoe = ShoeComposition(game.decks)
        self._shared: dict[Hashable, object] = {}

    def shared(self, key: Hashable, compute: Callable[[], _T]) -> _T:
        """`compute()` once per sheet under `key`: an analysis a game family owns (21
        Baccarat's enumeration), shared by its wagers without this module knowing it."""
        if key not in self._shared:
            self._shared[key] = compute()
        return self._shared[key]  # type: ignore[return-value]

    @property
    def six_card_denominator(self) -> int:
        return falling(self.shoe.total, 6)

    @cached_property
    def _value_raw(self) -> dict[tuple[int, int, int, int], int]:
        return enumerate_raw(self.shoe.value_counts, list(range(10)))

    @cached_property
    def value_rounds(self) -> dict[RoundClass, int]:
        """631a round classes at value level, weights over `six_card_denominator`."""
        return {RoundClass(p, b, None if c5 < 0 else c5, None if c6 < 0 else c6,
                           None if c5 < 0 else c5, None if c6 < 0 else c6): w
                for (p, b, c5, c6), w in self._value_raw.items()}

    @cached_property
    def round_facts(self) -> dict[RoundFacts, int]:
        """The value-level rounds collapsed to totals, card counts and naturals; same denominator."""
        return {RoundFacts(*key): w for key, w in full_shoe_facts(self.shoe.decks).items()}

    @cached_property
    def rank_rounds(self) -> dict[RoundClass, int]:
        """631a round classes with the third cards' ranks (1..13), same denominator."""
        counts = [0] + [4 * self.shoe.decks] * 13
        values = [0] + [baccarat_value(Card(r, Suit.CLUBS)) for r in Rank]
        return enumerate_rounds(counts, values)

    @cached_property
    def first_four_ranks(self) -> dict[tuple[Rank, Rank, Rank, Rank], int]:
        """Ordered ranks of (Player 1st, Player 2nd, Banker 1st, Banker 2nd), weights over N(N-1)(N-2)(N-3)."""
        per_rank = 4 * self.shoe.decks
        out: dict[tuple[Rank, Rank, Rank, Rank], int] = {}
        ranks = list(Rank)
        ff = [falling(per_rank, k) for k in range(5)]
        for p1 in ranks:
            for p2 in ranks:
                for b1 in ranks:
                    for b2 in ranks:
                        w = 1
                        for r in {p1, p2, b1, b2}:
                            w *= ff[(p1 == r) + (p2 == r) + (b1 == r) + (b2 == r)]
                        out[(p1, p2, b1, b2)] = w
        return out

    @cached_property
    def first_two_pairs(self) -> dict[tuple[bool, bool], int]:
        """(Player pair, Banker pair) on each hand's first two cards, over N(N-1)(N-2)(N-3).

        Closed form over ordered deals: a pair of rank r takes q(q-1) of the q cards
        of r; the other hand's pair is then of another rank (12 q(q-1)) or the
        same rank ((q-2)(q-3)).
        """
        n, q = self.shoe.total, 4 * self.shoe.decks
        pair = 13 * q * (q - 1)
        other_pair = 12 * q * (q - 1) + (q - 2) * (q - 3)
        both = pair * other_pair
        one_only = pair * ((n - 2) * (n - 3) - other_pair)
        neither = falling(n, 4) - both - 2 * one_only
        return {(True, True): both, (True, False): one_only, (False, True): one_only,
                (False, False): neither}

    @property
    def four_card_denominator(self) -> int:
        return falling(self.shoe.total, 4)

    def distribution(self, classify: Callable[[RoundClass], Hashable],
                     rounds: Mapping[RoundClass, int] | None = None) -> dict[Hashable, Fraction]:
        """Probability of each `classify` result over the value-level round classes."""
        rounds = self.value_rounds if rounds is None else rounds
        weights: dict[Hashable, int] = {}
        for rc, w in rounds.items():
            key = classify(rc)
            weights[key] = weights.get(key, 0) + w
        denominator = self.six_card_denominator
        return {k: Fraction(w, denominator) for k, w in weights.items()}


def lines_from_resolutions(weights: Mapping[Resolution, int], denominator: int) -> tuple[ParLine, ...]:
    """Par lines from integer weights of each Resolution, best payouts first."""
    lines = [ParLine(label=r.label, outcome=r.outcome, odds=r.odds,
                     probability=Fraction(w, denominator), net=r.net, section=r.section)
             for r, w in weights.items() if w]
    order = {Outcome.WIN: 0, Outcome.PUSH: 1, Outcome.LOSE: 2}
    lines.sort(key=lambda line: (order[line.outcome], -line.odds, line.label))
    return tuple(lines)


def par_by_rounds(ctx: ParContext, resolve: Callable[[Any], Resolution],
                  rounds: Mapping[Any, int] | None = None) -> tuple[ParLine, ...]:
    """Par lines for a wager decided by `RoundFacts` (default) or by the given round classes."""
    rounds = ctx.round_facts if rounds is None else rounds
    weights: dict[Resolution, int] = {}
    for rc, w in rounds.items():
        r = resolve(rc)
        weights[r] = weights.get(r, 0) + w
    return lines_from_resolutions(weights, ctx.six_card_denominator)


@dataclass(frozen=True)
class ParSheet:
    """The par sheet of a table: every offered wager's, from the Rules Submission `source`."""

    source: str
    game: GameConfig
    wagers: tuple[WagerPar, ...]
    missing: tuple[str, ...] = ()  # "key: reason" for offered wagers without an exact analysis


def compute_par_sheet(game_obj: Any, extra_rules: Mapping[str, Any] | None = None) -> ParSheet:
    """The par sheet of every wager a `Game` offers (full shoe, start of round), and of
    `extra_rules` (key -> rule): wagers the table offers outside its `[wagers]`, such as the
    progressives of its `[progressive.*]` sections."""
    config = game_obj.config
    ctx = ParContext(config)
    pars: list[WagerPar] = []
    missing: list[str] = []
    rules = dict(game_obj.wager_rules)
    for key, rule in (extra_rules or {}).items():
        rules.setdefault(key, rule)
    for key, rule in rules.items():
        # What isinstance(rule, ParRule) checks, without the runtime Protocol machinery
        # (milliseconds per sheet in Python 3.11, a noticeable part of `tablectl par-sheet`).
        if not (hasattr(rule, "key") and callable(getattr(rule, "par", None))):
            missing.append(f"{key}: its rule provides no exact analysis")
            continue
        try:
            pars.append(rule.par(ctx))
        except ParUnavailable as exc:
            missing.append(f"{key}: {exc}")
    return ParSheet(source=game_obj.source, game=config, wagers=tuple(pars), missing=tuple(missing))
