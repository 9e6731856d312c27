"""Example Rules Submissions load, bad options are named, and rule-wide properties hold."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.rules.baccarat import BaccaratCoup
from cards import Card, shoe_of
from controller.rules.card_values import baccarat_value
from controller.rules.game import load_game
from controller.rules.submission import SubmissionError, parse_submission
from controller.rules.wager import Outcome, RoundView, SettlementPoint

CONFIG = Path(__file__).resolve().parents[2] / "config"
EXAMPLES = {
    "baccarat-side-wagers.toml": 13, "baccarat-progressive-heavenly9.toml": 4,
    "baccarat-commission-free.toml": 6, "baccarat-lucky-nines-automated.toml": 4,
    "minibaccarat-royal9.toml": 6, "minibaccarat-rising-phoenix.toml": 25,
    "minibaccarat-harmony.toml": 7,
}


@pytest.mark.parametrize("name,wagers", sorted(EXAMPLES.items()))
def test_example_submissions_load(name: str, wagers: int) -> None:
    game = load_game(CONFIG / name)
    assert len(game.wager_rules) == wagers


def base(family: str = "baccarat", variant: str = "standard", **game: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "table": {"id": "T", "seats": 10},
        "game": {"family": family, "decks": 8, "variant": variant, **game},
        "wagers": {"banker": {}, "player": {}},
    }
    if variant == "standard":
        data["game"]["vigorish"] = {"collection": "at-payout"}
    return data


def errors_of(data: dict[str, Any]) -> str:
    with pytest.raises(SubmissionError) as err:
        parse_submission(data, "t.toml")
    return "\n".join(err.value.errors)


def test_wrong_paytable_letter_names_key_value_and_letters() -> None:
    data = base()
    data["wagers"]["perfect_pairs_player"] = {"paytable": "Z"}
    text = errors_of(data)
    assert "wagers.perfect_pairs_player.paytable = 'Z'" in text and "'A', 'B', 'C'" in text


def test_lucky_nines_is_rejected_unless_fully_automated_631c_4_a() -> None:
    data = base()
    data["wagers"]["lucky_nines"] = {"paytable": "C"}
    assert "wagers.lucky_nines.fully_automated = False" in errors_of(data)
    data["game"]["fully_automated"] = True
    assert "lucky_nines" in load_rules_of(data)


def test_lucky_nines_refusal_names_the_game_sections_key_631c_4_a() -> None:
    """The key that offers it is `[game] fully_automated`, not one of `[table]`."""
    data = base()
    data["wagers"]["lucky_nines"] = {"paytable": "C"}
    assert errors_of(data) == (
        "t.toml: wagers.lucky_nines.fully_automated = False: 631c.4(a) offers Lucky Nines only "
        "on a fully automated electronic gaming table; set [game] fully_automated = true or "
        "remove the wager")


def load_rules_of(data: dict[str, Any]) -> list[str]:
    return [w.key for w in parse_submission(data, "t.toml").wagers]


def test_commission_free_wagers_need_the_commission_free_variant() -> None:
    data = base()
    data["wagers"]["lucky_six"] = {}
    assert "wagers.lucky_six" in errors_of(data)
    data = base(variant="commission-free")
    data["wagers"]["lucky_six"] = {}
    data["wagers"]["player_pair"] = {}
    assert {"lucky_six", "player_pair"} <= set(load_rules_of(data))


def test_commission_free_tie_must_be_8_to_1_631c_5_j() -> None:
    data = base(variant="commission-free", tie={"odds": "9 to 1"})
    data["wagers"]["tie"] = {}
    assert "631c.5(j)" in errors_of(data)


def test_rising_phoenix_banker_only_at_minibaccarat() -> None:
    data = base(variant="commission-free")
    data["wagers"]["banker"] = {"rising_phoenix": True}
    assert "wagers.banker.rising_phoenix = True" in errors_of(data)


def test_royal_9_options_are_checked() -> None:
    data = base(family="minibaccarat")
    data["wagers"]["royal_9_progressive"] = {"denomination_dollars": 5, "meters": {
        "mega": {"reset_cents": 100, "increment_percent": 1},
        "major": {"reset_cents": 45000, "increment_percent": 1},
        "minor": {"reset_cents": 45000, "increment_percent": 1}}}
    assert "wagers.royal_9_progressive.meters.mega.reset_cents = 100" in errors_of(data)


# --- properties over dealt rounds -------------------------------------------------------------

ALL_RULES = load_game(CONFIG / "baccarat-side-wagers.toml").wager_rules | \
    load_game(CONFIG / "minibaccarat-rising-phoenix.toml").wager_rules | \
    load_game(CONFIG / "minibaccarat-harmony.toml").wager_rules | \
    load_game(CONFIG / "baccarat-lucky-nines-automated.toml").wager_rules | \
    load_game(CONFIG / "minibaccarat-royal9.toml").wager_rules


def deal(shoe: list[Card]) -> tuple[RoundView, RoundView]:
    """(the round after the first four cards, the complete round)."""
    coup = BaccaratCoup()
    cards = iter(shoe)
    while not coup.complete:
        coup.place(next(cards))
    r = coup.result()
    full = RoundView(r.player, r.banker, r.player_total, r.banker_total)
    p2, b2 = r.player[:2], r.banker[:2]
    four = RoundView(p2, b2, sum(baccarat_value(c) for c in p2) % 10,
                     sum(baccarat_value(c) for c in b2) % 10)
    return four, full


@settings(max_examples=150, deadline=None)
@given(shoe=st.permutations(shoe_of(2)), seat=st.integers(1, 9),
       amount=st.integers(1, 100_000))
def test_every_settlement_is_exact_and_first_four_wagers_ignore_third_cards(
    shoe: list[Card], seat: int, amount: int
) -> None:
    four, full = deal(shoe)
    for key, rule in ALL_RULES.items():
        if key == "heavenly_9_progressive":
            amount_here = max(amount, 500)
        elif key == "royal_9_progressive":
            amount_here = 500
        else:
            amount_here = amount
        s = rule.settle(seat, amount_here, full)
        assert s.wager == key and s.amount_cents == amount_here
        if s.outcome is Outcome.WIN and s.odds:
            # Exact odds, rounded down to whole cents once (game.payout_rounding = "down").
            assert s.win_cents == (Fraction(amount_here) * s.odds).__floor__()
        if s.outcome is Outcome.LOSE:
            assert s.net_cents == -amount_here
        if rule.settles_at is SettlementPoint.FIRST_FOUR_CARDS:
            assert rule.settle(seat, amount_here, four) == s
