"""627b.3 Royal 9 progressive: Royal 9 lines, personal King 9s, Mega Envy, denominations."""

from __future__ import annotations

from fractions import Fraction

import pytest

from cards import Suit
from controller.rules.registry import WagerConfigError
from controller.rules.side.common import PaysMeter
from controller.rules.side.royal9 import MAJOR, MINOR, default_combinations, make_royal_9
from controller.rules.wager import Outcome, SettlementPoint

from .helpers import view

METERS_5 = {"mega": {"reset_cents": 5_000_000, "increment_percent": "1.5"},
            "major": {"reset_cents": 45_000, "increment_percent": 1},
            "minor": {"reset_cents": 45_000, "increment_percent": 1}}
METERS_1 = {"mega": {"reset_cents": 1_000_000, "increment_percent": 1},
            "major": {"reset_cents": 9_000, "increment_percent": 1},
            "minor": {"reset_cents": 9_000, "increment_percent": 1}}
# Seat 1 holds K clubs + 9 diamonds, seat 2 K diamonds + 9 hearts (explicit layout).
COMBOS = {"1": "KC9D", "2": "KD9H", "3": "KH9S", "4": "KS9C"}


def rule(dollars: int = 5):
    return make_royal_9("royal_9_progressive", dollars, METERS_5 if dollars == 5 else METERS_1,
                        COMBOS, positions=4)


@pytest.mark.parametrize("dollars,player,banker,label,cents,clause", [
    (5, "QS 9H", "2C 3D", "Any Royal 9", 2_500, "627b.3(e)(1)"),
    (5, "2C 3D", "9H JD", "Any Royal 9", 2_500, "627b.3(e)(1)"),
    (5, "QS 9S", "2C 3D", "Any Suited Royal 9", 5_000, "627b.3(e)(2)"),
    (5, "QS 9H", "9C KD", "Royal 9 Tie Hand", 25_000, "627b.3(e)(3)"),
    (5, "QS 9S", "9C JC", "Suited Royal 9 Tie Hand", 150_000, "627b.3(e)(4)"),
    (5, "KD 9H", "9H KD", "Mega Envy - Any Position's King 9 v. King 9", 500_000, "627b.3(e)(9)"),
    (1, "QS 9H", "2C 3D", "Any Royal 9", 500, "627b.3(e)(1)"),
    (1, "QS 9S", "2C 3D", "Any Suited Royal 9", 1_000, "627b.3(e)(2)"),
    (1, "QS 9H", "9C KD", "Royal 9 Tie Hand", 5_000, "627b.3(e)(3)"),
    (1, "QS 9S", "9C JC", "Suited Royal 9 Tie Hand", 30_000, "627b.3(e)(4)"),
    (1, "KD 9H", "9H KD", "Mega Envy - Any Position's King 9 v. King 9", 100_000, "627b.3(e)(9)"),
])
def test_fixed_lines_627b_3_f_g(dollars: int, player: str, banker: str, label: str, cents: int,
                                 clause: str) -> None:
    """627b.3(f)(1) for $5, 627b.3(g)(1) for $1; dealt per 627b.3(c)."""
    s = rule(dollars).settle(1, dollars * 100, view(player, banker))
    assert (s.outcome, s.label, s.win_cents, s.section) == (Outcome.WIN, label, cents, clause)
    assert s.odds == Fraction(cents, dollars * 100)


@pytest.mark.parametrize("player,banker,level,clause", [
    ("KC 9D", "9D KC", "mega", "627b.3(e)(6)"),    # seat 1's King 9 in both hands
    ("2C 3D", "9D KC", "major", "627b.3(e)(7)"),   # on the Banker hand
    ("KC 9D", "QH 9S", "minor", "627b.3(e)(8)"),   # on the Player hand (outranks the tie line)
])
def test_personal_king_9_pays_a_meter(player: str, banker: str, level: str, clause: str) -> None:
    r = rule()
    line = r.classify(view(player, banker), seat=1)
    assert line is not None and line.pay == PaysMeter(level) and line.section == clause
    s = r.settle(1, 500, view(player, banker))
    assert (s.outcome, s.win_cents) == (Outcome.WIN, 0)  # the progressive system pays the meter


def test_mega_envy_pays_every_other_seat_not_the_owner_627b_3_e_9() -> None:
    """Ruling: the owner of the King 9 collects the Mega, every other wagering seat the Envy."""
    v = view("KC 9D", "9D KC")
    r = rule()
    assert r.settle(1, 500, v).label.startswith("Personal King 9 v. Personal King 9")
    for seat in (2, 3, 4):
        assert r.settle(seat, 500, v).win_cents == 500_000


def test_unassigned_king_9_twice_is_only_a_royal_9_tie() -> None:
    """K spades + 9 spades is nobody's combination on this 4-position layout."""
    s = rule().settle(1, 500, view("KS 9S", "9S KS"))
    assert s.label == "Suited Royal 9 Tie Hand"


@pytest.mark.parametrize("player,banker", [("10S 9S", "2C 3D"), ("KS 8S", "2C 3D"),
                                           ("KS 8S 9C", "2C 3D")])
def test_not_a_royal_9_loses(player: str, banker: str) -> None:
    """627b.3(b): a face card (K, Q, J, not a ten) and a nine as the first two cards."""
    assert rule().settle(1, 500, view(player, banker)).outcome is Outcome.LOSE


def test_settles_before_the_third_card_and_only_at_its_denomination_627b_3_d() -> None:
    r = rule()
    assert r.settles_at is SettlementPoint.FIRST_FOUR_CARDS
    with pytest.raises(ValueError, match="500-cent"):
        r.settle(1, 1000, view("QS 9H", "2C 3D"))


def test_meters_and_minimum_resets_627b_3_f_2_g_2() -> None:
    """627b.3(f)(2), 627b.3(g)(2): rates stated, resets at least the minimums."""
    specs = {m.level: m for m in rule(5).meters}
    assert specs["mega"].reset_cents == 5_000_000 and specs["mega"].increment_rate == Fraction(15, 1000)
    low = dict(METERS_1, mega={"reset_cents": 999_999, "increment_percent": 1})
    with pytest.raises(WagerConfigError) as err:
        make_royal_9("royal_9_progressive", 1, low)
    assert err.value.option == "meters.mega.reset_cents" and "1000000" in str(err.value)
    with pytest.raises(WagerConfigError, match="increment_percent"):
        make_royal_9("royal_9_progressive", 5, dict(METERS_5, major={"reset_cents": 45_000}))
    with pytest.raises(WagerConfigError, match="denomination_dollars"):
        make_royal_9("royal_9_progressive", 2, METERS_5)


def test_personal_combinations_must_be_unique_627b_3_e_5() -> None:
    with pytest.raises(WagerConfigError, match="unique"):
        make_royal_9("r", 5, METERS_5, {"1": "KC9D", "2": "KC9D"})
    with pytest.raises(WagerConfigError, match="KS9H"):
        make_royal_9("r", 5, METERS_5, {"1": "QC9D"})
    defaults = default_combinations(14)
    assert len(set(defaults.values())) == 14 and defaults[1] == (Suit.CLUBS, Suit.CLUBS)


def test_exact_distribution_symmetry_and_personal_lines() -> None:
    dist = rule().exact_distribution(8, seat=1)
    assert dist["Personal King 9 on Banker Hand"] == dist["Personal King 9 on Player Hand"]
    # Seat 1 = K clubs 9 diamonds: 8 of each card in 8 decks; the hand is exactly that pair.
    hand = Fraction(2 * 8 * 8, 416 * 415)
    assert dist["Personal King 9 on Banker Hand"] < hand
    assert 0 < dist["Personal King 9 v. Personal King 9"] < hand * hand
    assert sum(dist.values()) < 1


def test_all_lines_together_are_any_royal_9_by_the_core_rank_enumeration() -> None:
    """Every line needs a Royal 9 in some hand and every Royal 9 hits a line, so the lines
    sum to P(some hand is a face card and a nine), counted independently over ranks."""
    from cards import Rank
    from controller.rules.par import ParContext
    from controller.rules.submission import GameConfig

    ctx = ParContext(GameConfig(family="minibaccarat", decks=8))
    faces = {Rank.JACK, Rank.QUEEN, Rank.KING}

    def royal(a: Rank, b: Rank) -> bool:
        return (a in faces and b == Rank.NINE) or (b in faces and a == Rank.NINE)

    hits = sum(w for (p1, p2, b1, b2), w in ctx.first_four_ranks.items()
               if royal(p1, p2) or royal(b1, b2))
    expected = Fraction(hits, ctx.four_card_denominator)
    for seat in (1, 3):
        assert sum(rule().exact_distribution(8, seat=seat).values()) == expected


@pytest.mark.parametrize("player,banker,meter_level", [
    ("QH 9H", "KC 9C", "major"),   # seat 1's suited King 9 on the Banker hand
    ("KC 9C", "JD 9D", "minor"),   # ... on the Player hand
])
def test_627b_3_e_4_suited_tie_with_a_personal_king_9_reads_the_meter_as_it_stands(
        player: str, banker: str, meter_level: str) -> None:
    """627b.3(e)(4) Suited Royal 9 Tie and 627b.3(e)(7)/(8) a personal King 9 both hit; the
    wager is paid one line (docs/rulings.md, Royal 9). By default the greater of the meter as
    it stands and 627b.3(f)(1)'s $1,500: the $1,500 while the meter is below it (at its
    $450 reset, or at $1,499.99), the meter once it is $1,500 or more ('meter' pays it
    always, 627b.3(f)(1)'s order; 'fixed' the $1,500 always)."""
    combos = {"1": "KC9C", "2": "KD9H"}

    def paid(reading: str, standing: int | None) -> tuple[str, int | str]:
        r = make_royal_9("royal_9_progressive", 5, METERS_5, combos, positions=2,
                         suited_tie_personal=reading)
        if standing is not None:
            r = r.at_meters({meter_level: standing})
        line = r.classify(view(player, banker), seat=1)
        assert line is not None
        if isinstance(line.pay, PaysMeter):
            assert line.pay.level == meter_level
            return line.label, meter_level
        return line.label, line.pay.cents

    tie = ("Suited Royal 9 Tie Hand", 150_000)
    meter = (MAJOR if meter_level == "major" else MINOR, meter_level)
    assert paid("greater", None) == tie           # at the $450 reset
    assert paid("greater", 149_999) == tie
    assert paid("greater", 150_000) == meter       # equal: the meter
    assert paid("greater", 200_000) == meter
    assert paid("meter", None) == meter
    assert paid("meter", 45_000) == meter
    assert paid("fixed", 200_000) == tie
    # An unsuited personal King 9 is no suited tie: the meter, whatever the reading.
    unsuited = make_royal_9("royal_9_progressive", 5, METERS_5, combos, positions=2,
                            suited_tie_personal="fixed")
    assert unsuited.classify(view("QH 9H", "KD 9H"), seat=2).pay.level == "major"


def test_627b_3_suited_tie_reading_refuses_an_unknown_value() -> None:
    """The reading is one of three words; anything else names the option and what is allowed."""
    with pytest.raises(WagerConfigError) as exc:
        make_royal_9("royal_9_progressive", 5, METERS_5, COMBOS, positions=4,
                     suited_tie_personal=True)
    assert str(exc.value) == ("wagers.royal_9_progressive.suited_tie_personal = True: allowed: "
                              "'greater', 'meter', 'fixed' (docs/rulings.md, Royal 9)")


def test_627b_3_h_configured_mystery_is_in_the_par_sheet() -> None:
    """627b.3(h): the configured mystery's incrementation rate returns to players (5% for
    configurations 1 and 2, 2% for 3), so the house edge drops by exactly that."""
    from controller.rules.par import ParContext
    from controller.rules.submission_types import GameConfig

    ctx = ParContext(GameConfig(family="minibaccarat", decks=8))
    plain = make_royal_9("royal_9_progressive", 5, METERS_5, COMBOS, positions=4).par(ctx)
    for number, rate in ((1, Fraction(5, 100)), (2, Fraction(5, 100)), (3, Fraction(2, 100))):
        with_mystery = make_royal_9("royal_9_progressive", 5, METERS_5, COMBOS, mystery=number,
                                    positions=4).par(ctx)
        assert with_mystery.mystery is not None
        assert with_mystery.mystery.expected_contribution == rate
        assert plain.house_edge - with_mystery.house_edge == rate
