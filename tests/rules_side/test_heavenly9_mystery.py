"""631c.2 Heavenly 9 progressive ('for 1' payouts, meter line) and 631c.6 Must-Hit-By Mystery."""

from __future__ import annotations

from fractions import Fraction

import pytest

from controller.rules.registry import WagerConfigError
from controller.rules.side import mystery
from controller.rules.side.common import PaysMeter, meter_win_cents
from controller.rules.side.heavenly9 import HEAVENLY_9_METER, make_heavenly_9
from controller.rules.wager import Outcome, RoundView, SettlementPoint

from .helpers import dealt, view


def tie_of_nines(player: str, banker: str) -> RoundView:
    v = view(player, banker)
    assert (v.player_total, v.banker_total, len(v.player), len(v.banker)) == (9, 9, 3, 3)
    return v


SUITED = tie_of_nines("AS 2S 6S", "3S 3S 3S")
COLOURED = tie_of_nines("AS 2S 6C", "3C 3S 3S")
PLAIN = tie_of_nines("AS 2H 6S", "3S 3S 3S")
BANKER_NINE = dealt("KC", "AH", "KD", "2S", "3C", "6D")   # P 3 (3 cards), B 3+6 = 9
PLAYER_NINE = dealt("AC", "7H", "AD", "KS", "7C")         # P 2+7 = 9, B 7 stands


@pytest.mark.parametrize("round_view,label,win,section", [
    (COLOURED, "Player and banker 3-card tie, all cards same color", 500 * 298, "631c.2(g)(2)"),
    (PLAIN, "Player and banker 3-card tie", 500 * 59, "631c.2(g)(3)"),
    (BANKER_NINE, "Banker 3-card 9", 500 * 8, "631c.2(g)(4)"),
    (PLAYER_NINE, "Player 3-card 9", 500 * 7, "631c.2(g)(5)"),
])
def test_for_1_lines_include_the_wager_631c_2_i(round_view: RoundView, label: str, win: int,
                                                section: str) -> None:
    """'299 for 1' hands back 299 wagers in all: 298 won plus the wager returned."""
    s = make_heavenly_9("heavenly_9_progressive").settle(1, 500, round_view)
    assert (s.outcome, s.label, s.win_cents, s.section) == (Outcome.WIN, label, win, section)
    assert s.win_cents + s.amount_cents == {COLOURED: 299, PLAIN: 60, BANKER_NINE: 9,
                                           PLAYER_NINE: 8}[round_view] * 500


def test_suited_tie_pays_the_meter_631c_2_g_1() -> None:
    rule = make_heavenly_9("heavenly_9_progressive")
    line = rule.classify(SUITED)
    assert line is not None and line.pay == PaysMeter("progressive", Fraction(1))
    s = rule.settle(5, 500, SUITED)
    assert (s.outcome, s.win_cents, s.section) == (Outcome.WIN, 0, "631c.2(g)(1)")
    assert "100% of the progressive meter" in s.label
    assert meter_win_cents(line.pay, 1_234_567) == 1_234_567



def test_a_banker_3_card_9_tied_by_a_player_2_card_9_pays_the_banker_line_631c_2_g_4() -> None:
    """docs/rulings.md, "Heavenly 9 progressive": the tie lines need three cards in both
    hands, so a Banker 3-card 9 against a Player 2-card 9 is the Banker line, 9 for 1."""
    v = view("9C KD", "2S 3H 4D")
    assert (v.player_total, v.banker_total) == (9, 9)
    s = make_heavenly_9("heavenly_9_progressive").settle(1, 500, v)
    assert (s.outcome, s.label, s.win_cents, s.section) == (
        Outcome.WIN, "Banker 3-card 9", 4000, "631c.2(g)(4)")

def test_two_card_nines_and_other_rounds_lose_631c_2_h() -> None:
    rule = make_heavenly_9("heavenly_9_progressive")
    for v in (view("9C 10D", "9S KD"), view("2C 3D 5H", "7S KD")):
        s = rule.settle(1, 500, v)
        assert (s.outcome, s.section) == (Outcome.LOSE, "631c.2(h)")


def test_minimum_wager_and_settlement_point_631c_2_c_f() -> None:
    """631c.2(c): at least $5; 631c.2(e)-(f): the round is completed, then the wager settles."""
    rule = make_heavenly_9("heavenly_9_progressive")
    assert rule.settles_at is SettlementPoint.END_OF_ROUND
    with pytest.raises(ValueError, match="631c.2\\(c\\)"):
        rule.settle(1, 499, PLAIN)


def test_meter_seed_and_increment_as_data_631c_2_i() -> None:
    assert HEAVENLY_9_METER.reset_cents == 1_000_000
    assert HEAVENLY_9_METER.increment_rate == Fraction(1, 10)


def test_exact_distribution_hierarchy() -> None:
    dist = make_heavenly_9("h9").exact_distribution(8)
    labels = list(dist)
    assert all(p > 0 for p in dist.values())
    assert dist[labels[0]] < dist[labels[1]] < dist[labels[2]] < dist[labels[3]] < dist[labels[4]]
    # Every 3-card 9 tie splits into suited / one colour / mixed exactly.
    assert sum(list(dist.values())[:3]) == _three_card_nine_ties(8)


def _three_card_nine_ties(decks: int) -> Fraction:
    from controller.rules.side.combinatorics import coup_space

    space, total = coup_space(decks, False)
    return Fraction(space.get((9, 9, 3, 3), 0), total)


# --- 631c.6 Must-Hit-By Mystery ------------------------------------------------------------------

TABLE = [  # 631c.6(c)(4): (letter, $ wager, min $, max $, rate %)
    ("A", 1, 100, 200, "2"), ("A", 2, 100, 200, "1.5"), ("A", 5, 100, 250, "1"),
    ("B", 1, 100, 500, "5"), ("B", 2, 100, 500, "3.5"), ("B", 5, 100, 500, "2"),
    ("C", 1, 250, 500, "2"), ("C", 2, 250, 500, "1.5"), ("C", 5, 250, 500, "0.5"),
    ("D", 1, 250, 1000, "5"), ("D", 2, 250, 1000, "3"), ("D", 5, 250, 1000, "2"),
]


@pytest.mark.parametrize("letter,dollars,low,high,rate", TABLE)
def test_every_configuration_631c_6_c_4(letter: str, dollars: int, low: int, high: int,
                                        rate: str) -> None:
    config = mystery.mystery_configuration("heavenly_9_progressive", letter, dollars)
    assert (config.minimum_wager_cents, config.minimum_cents, config.maximum_cents) == \
        (dollars * 100, low * 100, high * 100)
    assert config.contribution_rate == Fraction(rate) / 100
    assert mystery.trigger_bounds(config) == (low * 100, high * 100)
    assert mystery.reset_cents(config) == low * 100  # 631c.6(c)(5)(iv)


def test_qualification_631c_6_c_1() -> None:
    """631c.6(a), 631c.6(c)(1): a Baccarat wager and a Heavenly 9 wager qualify."""
    config = mystery.MUST_HIT_BY_CONFIGURATIONS[("B", 5)]
    assert mystery.qualifies(config, 2500, 500)
    assert not mystery.qualifies(config, 0, 500)      # no Baccarat wager
    assert not mystery.qualifies(config, 2500, 499)   # below the configuration's amount


def test_contribution_is_exact_631c_6_c_2() -> None:
    config = mystery.MUST_HIT_BY_CONFIGURATIONS[("C", 5)]
    assert mystery.contribution(config, 500) == Fraction(5, 2)  # 0.5% of $5 = 2.5 cents


def test_the_contribution_that_crosses_the_trigger_wins_631c_6_c_3() -> None:
    meter = Fraction(29_990)
    contributions = [(3, Fraction(5)), (7, Fraction(10)), (9, Fraction(10))]
    assert mystery.mystery_winner(meter, contributions, 30_000) == 7   # 29,995 -> 30,005
    assert mystery.mystery_winner(meter, contributions, 40_000) is None
    assert not mystery.crosses_trigger(Fraction(30_000), Fraction(1), 29_999)
    assert mystery.award_cents(Fraction(60_001, 2)) == 30_000  # 631c.6(c)(7), whole cents


def test_mystery_configuration_errors_name_the_option() -> None:
    with pytest.raises(WagerConfigError) as err:
        make_heavenly_9("heavenly_9_progressive", "E", 5)
    assert err.value.option == "mystery" and "A, B, C, D" in str(err.value)
    with pytest.raises(WagerConfigError) as err:
        make_heavenly_9("heavenly_9_progressive", "A", 3)
    assert err.value.option == "mystery_wager_dollars" and "1, 2, 5" in str(err.value)
    with pytest.raises(WagerConfigError):
        make_heavenly_9("heavenly_9_progressive", None, 5)


def test_royal_9_mystery_configurations_627b_3_h() -> None:
    rows = {n: (c.reseed_cents, c.must_hit_by_cents, c.increment_rate)
            for n, c in mystery.ROYAL_9_MYSTERY_CONFIGURATIONS.items()}
    assert rows == {1: (25_000, 100_000, Fraction(5, 100)), 2: (10_000, 50_000, Fraction(5, 100)),
                    3: (10_000, 20_000, Fraction(2, 100))}
