"""A table's game built from its Rules Submission: coups, burn, shoe parameters, wager rules.

The table controller drives either family the same way::

    game = load_game("config/baccarat-8deck.toml")
    coup = game.new_coup()
    while not coup.complete:
        slot = coup.next_card()      # which hand the next card from the shoe goes to
        coup.place(card_from_shoe)
        if coup.initial_cards_complete: ...   # first-four-cards settlement point
    settle_round(game, wagers, coup.round_view(), SettlementPoint.END_OF_ROUND)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from controller.rules.baccarat import BaccaratCoup, NextCard
from cards import Card
from controller.rules.card_values import burn_value
from controller.rules.registry import REGISTRY
from controller.rules.submission import load_submission
from controller.rules.submission_types import CutConfig, GameConfig, Submission
from controller.rules.wager import RoundView, WagerRule


@runtime_checkable
class Coup(Protocol):
    """What both `BaccaratCoup` (631a) and `TwentyOneCoup` (681a) offer the table."""

    def next_card(self) -> NextCard:
        """The slot the rules require next; `NextCard.NONE` when the round is complete."""

    def place(self, card: Card) -> NextCard:
        """Place the card from the shoe into the required slot; returns that slot."""

    @property
    def complete(self) -> bool: ...

    @property
    def initial_cards_complete(self) -> bool: ...

    @property
    def cards_dealt(self) -> int: ...

    def round_view(self) -> RoundView: ...

    def result(self) -> Any: ...


@dataclass(frozen=True)
class Game:
    """Everything the rules say about one table, from its Rules Submission."""

    submission: Submission
    wager_rules: Mapping[str, WagerRule]  # in the order the submission lists them

    @property
    def config(self) -> GameConfig:
        return self.submission.game

    @property
    def source(self) -> str:
        return self.submission.source

    @property
    def seats(self) -> int:
        return self.submission.table.seats

    @property
    def shoe_size(self) -> int:
        """Cards in one shoe (631a.3(a), 681a.3(a)); cover cards not counted."""
        return self.config.shoe_cards

    @property
    def cut(self) -> CutConfig:
        """631a.5(c)-(d) / 681a.5(c)-(d): cut and second cover card positions."""
        return self.config.cut

    def misplaced_cover_card(self, index: int) -> str:
        """Why a cover card out after `index` cards is outside 631a.5(d) / 681a.5(d)'s range
        (the regulation's least distance from the bottom); "" when it is within it."""
        from controller.rules.shoe import misplaced_cover_card
        from controller.rules.submission import MIN_COVER_FROM_BOTTOM

        section = "681a.5(d)" if self.config.is_21 else "631a.5(d)"
        return misplaced_cover_card(index, self.shoe_size, MIN_COVER_FROM_BOTTOM[self.config.family],
                                    section)

    @property
    def reshuffles_at_cover_card(self) -> bool:
        """681a.7(d): 21 Baccarat reshuffles after the cover card's round; 631a.10(d) plays one more."""
        return self.config.is_21

    def new_coup(self, *, bonus_wagered: bool = False) -> Coup:
        """A fresh sans-I/O coup; `bonus_wagered` matters only for 681a.7(f)(2)."""
        if self.config.is_21:
            # Imported here: a 631a table never loads the 681a engine (tablectl starts faster).
            from controller.rules.twentyone import TwentyOneCoup

            return TwentyOneCoup(draw_rule=self.config.draw_rule, bonus_wagered=bonus_wagered,
                                 natural_rule=self.config.natural_rule)
        return BaccaratCoup()

    def burn_count(self, first_card: Card) -> int:
        """Cards to burn face down after exposing `first_card` (631a.5(f); 681a.7(c) burns none more)."""
        if self.config.is_21:
            return 0
        return burn_value(first_card)


def build_game(submission: Submission) -> Game:
    """Instantiate the wager rules a validated submission offers."""
    registry = REGISTRY  # imports only the wager modules this submission names
    rules: dict[str, WagerRule] = {}
    for wc in submission.wagers:
        spec = registry.lookup(wc.key, submission.game.family, submission.game.variant)
        if spec is None:  # parse_submission already rejected this
            raise ValueError(f"{submission.source}: no rule for wagers.{wc.key}")
        rules[wc.key] = spec.factory(wc, submission.game)
    return Game(submission=submission, wager_rules=rules)


def load_game(path: str | Path) -> Game:
    """`build_game(load_submission(path))`; raises `SubmissionError` for a bad file."""
    return build_game(load_submission(path))
