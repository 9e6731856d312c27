"""Building rounds for the side-wager tests from card text: 'KS 9H' style."""

from __future__ import annotations

from fractions import Fraction

from controller.rules.baccarat import BaccaratCoup, point_count
from cards import Card
from controller.rules.wager import RoundView


def cards(text: str) -> tuple[Card, ...]:
    return tuple(Card.parse(t) for t in text.split())


def view(player: str, banker: str) -> RoundView:
    """A round with exactly these hands (the test chooses legal 631a.11 draws)."""
    p, b = cards(player), cards(banker)
    return RoundView(p, b, point_count(p), point_count(b))


def dealt(*shoe: str) -> RoundView:
    """A round dealt by the 631a coup from cards in shoe order, so the draws are the rules' own."""
    coup = BaccaratCoup()
    for text in shoe:
        if coup.complete:
            raise AssertionError(f"card {text} is one too many for this coup")
        coup.place(Card.parse(text))
    assert coup.complete, "the shoe ran out before the coup completed"
    result = coup.result()
    return RoundView(result.player, result.banker, result.player_total, result.banker_total)


def pct(x: Fraction, places: int) -> float:
    """A house edge as a percentage rounded like the published figure."""
    return round(float(x) * 100, places)
