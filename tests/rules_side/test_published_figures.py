"""Exact par distributions checked against independent published figures (8 decks).

Each figure is compared to the precision it is published with; the source
(Wizard of Odds appendices, Jacobson's analyses) is named in each test.
"""

from __future__ import annotations

import pytest

from controller.rules.baccarat import Hand
from controller.rules.side.commission_free import (
    CommissionFreeBanker, CommissionFreePlayer, CommissionFreeTie, LuckySix, commission_free_pair,
)
from controller.rules.side.five_treasures import Treasure, make_five_treasures
from controller.rules.side.golden_talons import make_golden_talons
from controller.rules.side.lucky_nines import make_lucky_nines
from controller.rules.side.majestic_match import MajesticMatch
from controller.rules.side.rising_phoenix import RISING_PHOENIX_BONUSES, RisingPhoenixBanker, \
    RisingPhoenixBonus

from .helpers import pct


@pytest.mark.parametrize("section", ["631c.5", "627b.2"])
@pytest.mark.parametrize("hand", [Hand.PLAYER, Hand.BANKER])
def test_player_or_banker_pair_11_to_1_edge_10_3614_percent(section: str, hand: Hand) -> None:
    """631c.5(g), 627b.2(g): Wizard of Odds appendix 1, 10.3614%."""
    assert pct(commission_free_pair("pair", section, hand).house_edge(8), 4) == 10.3614


@pytest.mark.parametrize("section", ["631c.5", "627b.2"])
def test_banker_winning_6_pays_1_to_2_edge_1_4581_percent(section: str) -> None:
    """631c.5(i), 627b.2(i): Jacobson's Super 6 analysis, 1.4581%."""
    assert pct(CommissionFreeBanker("banker", section).house_edge(8), 4) == 1.4581


def test_commission_free_player_and_tie_edges() -> None:
    """631c.5(h), (j): Player 1.2351%, Tie 8 to 1 14.3596% (Wizard of Odds appendix 1)."""
    assert pct(CommissionFreePlayer("player", "631c.5").house_edge(8), 4) == 1.2351
    assert pct(CommissionFreeTie("tie", "631c.5").house_edge(8), 4) == 14.3596


@pytest.mark.parametrize("section", ["631c.5", "627b.2"])
def test_lucky_six_12_and_20_to_1_edge_16_68_percent(section: str) -> None:
    """631c.5(k), 627b.2(k): Wizard of Odds Lucky 6, 16.68% (a 6-6 tie loses)."""
    assert pct(LuckySix("lucky_six", section).house_edge(8), 2) == 16.68


@pytest.mark.parametrize("hand", [Hand.PLAYER, Hand.BANKER])
def test_majestic_match_edge_6_46_percent(hand: Hand) -> None:
    """631c.7(d): Wizard of Odds Majestic Match, 6.46%."""
    assert pct(MajesticMatch("mm", hand).house_edge(8), 2) == 6.46


def test_lucky_nines_paytable_c_is_the_published_8_27_percent() -> None:
    """631c.4(e): of the four paytables only C gives the published 8.27%."""
    edges = {letter: pct(make_lucky_nines("ln", letter, True).house_edge(8), 2)
             for letter in "ABCD"}
    assert edges["C"] == 8.27
    assert [letter for letter, edge in edges.items() if edge == 8.27] == ["C"]



def test_lucky_nines_paytables_a_b_d_631c_4_e() -> None:
    """docs/rulings.md, "Lucky Nines": the other three paytables' edges (8 decks), which no
    source publishes: A 19.06%, B 14.90%, D 14.62%."""
    edges = {letter: pct(make_lucky_nines("ln", letter, True).house_edge(8), 2)
             for letter in "ABD"}
    assert edges == {"A": 19.06, "B": 14.90, "D": 14.62}

def test_fortune_7_is_dragon_7_and_golden_8_is_panda_8() -> None:
    """631c.3(f)(1)-(2): Dragon 7 40 to 1 p 0.022534 edge 7.6113%, Panda 8 25 to 1 p 0.034543
    edge 10.1876% (Wizard of Odds, EZ Baccarat)."""
    for letter in "AB":
        f7 = make_five_treasures(Treasure.FORTUNE_7, letter)
        g8 = make_five_treasures(Treasure.GOLDEN_8, letter)
        assert round(float(f7.exact_distribution(8)["Fortune 7"]), 6) == 0.022534
        assert round(float(g8.exact_distribution(8)["Golden 8"]), 6) == 0.034543
        assert pct(f7.house_edge(8), 4) == 7.6113
        assert pct(g8.house_edge(8), 4) == 10.1876


def test_rising_phoenix_sun_7_and_moon_8_match_dragon_7_and_panda_8() -> None:
    """627b.4(g)(4)(i)-(ii) at 40 and 25 to 1 are Dragon 7 and Panda 8."""
    by_key = {b.key: b for b in RISING_PHOENIX_BONUSES}
    assert pct(RisingPhoenixBonus("s", by_key["sun_7"]).house_edge(8), 4) == 7.6113
    assert pct(RisingPhoenixBonus("m", by_key["moon_8"]).house_edge(8), 4) == 10.1876


def test_golden_talons_paytable_a_is_the_dragon_bonus() -> None:
    """627b.5(f) A = 30/10/6/4/2/1, natural 1, natural tie push: Dragon Bonus Player 2.6517%,
    Banker 9.3731% (Wizard of Odds appendix 5)."""
    assert pct(make_golden_talons("g", Hand.PLAYER, "A").house_edge(8), 4) == 2.6517
    assert pct(make_golden_talons("g", Hand.BANKER, "A").house_edge(8), 4) == 9.3731


def test_rising_phoenix_banker_edges() -> None:
    """627b.4(g)(1)(iv): commission-free, a winning 3-card 7 pushes = EZ Baccarat 1.0183%;
    standard, 5% vigorish = 1.0579% (Wizard of Odds)."""
    assert pct(RisingPhoenixBanker("banker", commission_free=True).house_edge(8), 4) == 1.0183
    assert pct(RisingPhoenixBanker("banker", commission_free=False).house_edge(8), 4) == 1.0579
