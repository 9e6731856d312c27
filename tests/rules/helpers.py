"""Shared helpers for the rules tests: cards from text, coups from card lists."""

from __future__ import annotations

from pathlib import Path

from controller.rules.baccarat import BaccaratCoup
from cards import Card
from controller.rules.card_values import baccarat_value
from controller.rules.game import Game, build_game
from controller.rules.submission import parse_submission
from controller.rules.wager import RoundView

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "config"


def cards(text: str) -> list[Card]:
    return [Card.parse(t) for t in text.split()]


def deal(text: str) -> BaccaratCoup:
    """Deal the cards in shoe order into a fresh coup until it completes."""
    coup = BaccaratCoup()
    for card in cards(text):
        if coup.complete:
            break
        coup.place(card)
    return coup


def view(player: str, banker: str) -> RoundView:
    p, b = tuple(cards(player)), tuple(cards(banker))
    return RoundView(player=p, banker=b, player_total=sum(baccarat_value(c) for c in p) % 10,
                     banker_total=sum(baccarat_value(c) for c in b) % 10)


def game_of(wagers: dict[str, dict[str, object]], **game: object) -> Game:
    """A Game from an in-memory submission (standard 8-deck unless overridden)."""
    g: dict[str, object] = {"family": "baccarat", "decks": 8, "variant": "standard"}
    g.update(game)
    if g["family"] != "21-baccarat" and g["variant"] == "standard" and "vigorish" not in g:
        g["vigorish"] = {"collection": "at-payout"}
    seats = 8 if g["family"] == "21-baccarat" else 14
    data = {"table": {"id": "T", "seats": seats}, "game": g,
            "wagers": {"banker": {}, "player": {}, **wagers}}
    return build_game(parse_submission(data, "test.toml"))
