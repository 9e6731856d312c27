"""The Game built from a Rules Submission: coups, burn, shoe size, cut parameters."""

from __future__ import annotations

from controller.rules.baccarat import BaccaratCoup
from cards import Card
from controller.rules.game import Coup, load_game
from controller.rules.twentyone import TwentyOneCoup

from tests.rules.helpers import CONFIG


def test_631a_3_a_shoe_size_and_coup() -> None:
    game = load_game(CONFIG / "baccarat-8deck.toml")
    assert game.shoe_size == 416 and game.seats == 14
    coup = game.new_coup()
    assert isinstance(coup, BaccaratCoup) and isinstance(coup, Coup)
    assert list(game.wager_rules) == ["banker", "player", "tie", "dragon_bonus_player",
                                      "dragon_bonus_banker"]


def test_631a_5_cut_parameters_from_submission() -> None:
    game = load_game(CONFIG / "baccarat-8deck.toml")
    assert game.cut.min_cut_cards == 10 and game.cut.cover_card_from_bottom == 14
    assert not game.reshuffles_at_cover_card  # 631a.10(d): one more hand
    assert game.burn_count(Card.parse("7H")) == 7  # 631a.5(f)


def test_681a_3_a_game_and_coup() -> None:
    game = load_game(CONFIG / "21-baccarat-8deck.toml")
    assert game.shoe_size == 416 and game.seats == 8
    coup = game.new_coup(bonus_wagered=True)
    assert isinstance(coup, TwentyOneCoup) and coup.bonus_wagered and isinstance(coup, Coup)
    assert game.cut.cover_card_from_bottom == 10  # 681a.5(d)
