"""Exact par sheets checked against independently published figures.

Each comparison is to the precision the source publishes (the sources are named in
docs/par-sheets.md).
"""

from __future__ import annotations

import time
from fractions import Fraction

import pytest

from controller.rules.game import load_game
from controller.rules.par import (
    ParContext, ParSheet, compute_par_sheet, enumerate_rounds, falling,
)
from controller.rules.submission import GameConfig

from tests.rules.helpers import CONFIG, game_of


def edge_pct(sheet: ParSheet, key: str) -> float:
    return float(next(w for w in sheet.wagers if w.key == key).house_edge) * 100


@pytest.fixture(scope="module")
def std8() -> ParSheet:
    return compute_par_sheet(game_of({"tie": {}, "dragon_bonus_player": {"paytable": "A"},
                                      "dragon_bonus_banker": {"paytable": "A"}}))


def test_every_round_class_sums_to_the_six_card_denominator() -> None:
    rounds = enumerate_rounds([128] + [32] * 9, list(range(10)))
    assert sum(rounds.values()) == falling(416, 6)


def test_631a_8_probabilities_8_decks_wizard_appendix_1(std8: ParSheet) -> None:
    banker = next(w for w in std8.wagers if w.key == "banker")
    probs = {line.label: float(line.probability) for line in banker.lines}
    assert round(probs["Banker wins"], 6) == 0.458597
    assert round(probs["Player wins"], 6) == 0.446247
    assert round(probs["Tie: Banker wager returned"], 6) == 0.095156


def test_631a_13_c_banker_edge_8_decks(std8: ParSheet) -> None:
    assert round(edge_pct(std8, "banker"), 4) == 1.0579


def test_631a_13_a_player_edge_8_decks(std8: ParSheet) -> None:
    assert round(edge_pct(std8, "player"), 4) == 1.2351


@pytest.mark.parametrize("odds,edge", [("8 to 1", 14.3596), ("9 to 1", 4.8440)],
                         ids=["631a.13(b)-8to1", "631a.13(b)-9to1"])
def test_631a_13_b_tie_edges_8_decks(odds: str, edge: float) -> None:
    sheet = compute_par_sheet(game_of({"tie": {}}, tie={"odds": odds}))
    assert round(edge_pct(sheet, "tie"), 4) == edge


def test_631a_3_a_six_deck_edges() -> None:
    sheet = compute_par_sheet(game_of({"tie": {}}, decks=6))
    assert round(edge_pct(sheet, "banker"), 4) == 1.0558
    assert round(edge_pct(sheet, "player"), 4) == 1.2374
    assert round(edge_pct(sheet, "tie"), 4) == 14.4382


def test_631a_1_ez_figures() -> None:
    sheet = compute_par_sheet(load_game(CONFIG / "baccarat-ez.toml"))
    assert round(edge_pct(sheet, "banker"), 4) == 1.0183
    d7 = next(w for w in sheet.wagers if w.key == "dragon_7")
    p8 = next(w for w in sheet.wagers if w.key == "panda_8")
    assert round(float(d7.hit_frequency), 6) == 0.022534  # 631a.13(f)
    assert round(edge_pct(sheet, "dragon_7"), 4) == 7.6113
    assert round(float(p8.hit_frequency), 6) == 0.034543  # 631a.13(g)
    assert round(edge_pct(sheet, "panda_8"), 4) == 10.1876


def test_631a_13_e_dragon_bonus_paytable_a(std8: ParSheet) -> None:
    assert round(edge_pct(std8, "dragon_bonus_player"), 4) == 2.6517
    assert round(edge_pct(std8, "dragon_bonus_banker"), 4) == 9.3731


def test_pair_11_to_1_edge_from_first_four_ranks() -> None:
    """The published Player Pair 11 to 1 figure checks the rank-level first-four weights."""
    ctx = ParContext(GameConfig(family="baccarat", decks=8))
    pair = sum(w for k, w in ctx.first_two_pairs.items() if k[0])
    p = Fraction(pair, ctx.four_card_denominator)
    assert round(float(-(11 * p - (1 - p))) * 100, 4) == 10.3614


def test_631a_13_h_house_money_exact_against_closed_form() -> None:
    sheet = compute_par_sheet(load_game(CONFIG / "baccarat-house-money.toml"))
    hm = next(w for w in sheet.wagers if w.key == "house_money")
    probs = {line.label: line.probability for line in hm.lines}
    # Closed form typed independently: 8 decks, 32 cards of each rank, 416 cards.
    one_hand = Fraction(13 * 32 * 31, 416 * 415)
    both = Fraction(13 * 32 * 31 * (12 * 32 * 31 + 30 * 29), 416 * 415 * 414 * 413)
    assert probs["Player and Banker Pair"] == both
    assert probs["Player or Banker Pair"] == 2 * one_hand - 2 * both
    assert hm.house_edge == -(15 * both + 3 * (2 * one_hand - 2 * both)
                              - (1 - 2 * one_hand + both))


def test_every_sheet_probabilities_sum_to_one() -> None:
    for path in sorted(CONFIG.glob("*.toml")):
        game = load_game(path)
        if game.config.is_21:
            continue
        for wp in compute_par_sheet(game).wagers:
            assert wp.total_probability == 1, (path.name, wp.key)


def test_core_analysis_speed() -> None:
    started = time.perf_counter()
    ctx = ParContext(GameConfig(family="baccarat", decks=8))
    _ = ctx.round_facts
    assert time.perf_counter() - started < 0.5  # target 0.1 s; slack for a loaded CI machine


def test_first_two_pairs_closed_form_equals_rank_enumeration() -> None:
    """631a.8(a)(7)(i): the closed form for pairs agrees with the rank-level enumeration."""
    ctx = ParContext(GameConfig(family="baccarat", decks=6))
    counted: dict[tuple[bool, bool], int] = {}
    for (p1, p2, b1, b2), w in ctx.first_four_ranks.items():
        counted[(p1 == p2, b1 == b2)] = counted.get((p1 == p2, b1 == b2), 0) + w
    assert counted == ctx.first_two_pairs


def test_rank_rounds_agree_with_value_rounds() -> None:
    """631a.11: rank-level third cards collapse to the same facts as value-level ones."""
    from controller.rules.par import collapse

    ctx = ParContext(GameConfig(family="baccarat", decks=8))
    assert collapse(ctx.rank_rounds) == ctx.round_facts


def test_the_fact_table_is_the_enumeration_as_polynomials_in_the_decks() -> None:
    """`ParContext.round_facts` evaluates controller/rules/par_table.py. Every weight is a
    polynomial of degree at most 6 in the number of decks, so a table equal to the
    enumeration interpolated at seven deck counts equals the enumeration at every count."""
    from controller.rules.par import fact_polynomials, full_shoe_facts, value_facts
    from controller.rules.par_table import FACT_POLYNOMIALS

    assert FACT_POLYNOMIALS == fact_polynomials(), "run: python -m controller.rules.write_par_tables"
    for decks in (6, 7, 8):  # the counts 631a.3(a) allows, checked directly as well
        assert full_shoe_facts(decks) == value_facts([16 * decks] + [4 * decks] * 9)
        assert full_shoe_facts(decks, "one suit") == value_facts(
            [4 * decks] + [decks] * 9, 52 * decks)


def test_value_facts_collapse_the_round_classes() -> None:
    """631a.11: the facts added straight from the moment sums equal the round classes
    (third cards by value) collapsed to totals, card counts and naturals."""
    from controller.rules.par import RoundFacts, collapse, value_facts

    for decks in (6, 8):
        counts = [16 * decks] + [4 * decks] * 9
        direct = {RoundFacts(*key): w for key, w in value_facts(counts).items()}
        assert direct == collapse(enumerate_rounds(counts, list(range(10))))
