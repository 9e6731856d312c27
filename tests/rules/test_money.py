"""Money: integer cents and the one rounding function (631a.13(c) vigorish, fractional odds)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from controller.rules.money import Rounding, format_cents, parse_odds, payout_cents, round_cents, vigorish_cents


@pytest.mark.parametrize("amount,rounding,expected", [
    (Fraction(1901, 2), Rounding.DOWN, 950), (Fraction(1901, 2), Rounding.UP, 951),
    (Fraction(1901, 2), Rounding.HALF_UP, 951), (Fraction(1901, 2), Rounding.HALF_EVEN, 950),
    (Fraction(1903, 2), Rounding.HALF_EVEN, 952), (Fraction(10), Rounding.UP, 10),
    (Fraction(7, 3), Rounding.HALF_UP, 2), (Fraction(8, 3), Rounding.HALF_UP, 3),
])
def test_round_cents_modes(amount: Fraction, rounding: Rounding, expected: int) -> None:
    assert round_cents(amount, rounding) == expected


@pytest.mark.parametrize("wager,odds,expected", [
    (1000, Fraction(19, 20), 950), (1010, Fraction(19, 20), 959),  # 0.95 to 1 rounds down
    (1001, Fraction(5, 2), 2502), (1001, Fraction(1, 2), 500), (1000, Fraction(1, 2), 500),
])
def test_payout_rounds_down_to_the_cent_by_default(wager: int, odds: Fraction, expected: int) -> None:
    assert payout_cents(wager, odds) == expected


@pytest.mark.parametrize("win,up25,expected", [
    (10000, False, 500), (1010, False, 51), (1, False, 1), (0, False, 0),
    (1010, True, 75), (100, True, 25), (10000, True, 500), (10100, True, 525), (0, True, 0),
], ids=lambda x: str(x))
def test_631a_13_c_vigorish_rounding(win: int, up25: bool, expected: int) -> None:
    assert vigorish_cents(win, round_up_to_25c=up25) == expected


def test_vigorish_rounding_down_when_configured() -> None:
    assert vigorish_cents(1010, rounding=Rounding.DOWN) == 50


@pytest.mark.parametrize("text,odds", [("8 to 1", Fraction(8)), ("1 to 2", Fraction(1, 2)),
                                       ("2.5 to 1", Fraction(5, 2)), (9, Fraction(9))])
def test_parse_odds_to_one(text: str | int, odds: Fraction) -> None:
    assert parse_odds(text) == odds


@pytest.mark.parametrize("text", ["8 for 1", "eight", "-1 to 1", "1 to 0", True])
def test_parse_odds_rejects_for_odds_and_garbage(text: object) -> None:
    with pytest.raises(ValueError, match="to"):
        parse_odds(text)  # type: ignore[arg-type]


def test_format_cents() -> None:
    assert format_cents(123456) == "$1,234.56" and format_cents(-5) == "-$0.05"


def test_negative_amounts_rejected() -> None:
    with pytest.raises(ValueError):
        payout_cents(-1, Fraction(1))
    with pytest.raises(ValueError):
        round_cents(Fraction(-1, 2))


def _rounded_by_fractions(value: Fraction, rounding: Rounding) -> int:
    """Rounding as 631a.13(c) and docs/rulings.md state it, in Fractions: the reference the
    integer arithmetic of `round_cents`, `payout_cents` and `vigorish_cents` must match."""
    floor = value.numerator // value.denominator
    remainder = value - floor
    if remainder == 0 or rounding is Rounding.DOWN:
        return floor
    if rounding is Rounding.UP or remainder > Fraction(1, 2):
        return floor + 1
    if remainder < Fraction(1, 2):
        return floor
    return floor + 1 if rounding is Rounding.HALF_UP else floor + floor % 2


@pytest.mark.parametrize("rounding", list(Rounding))
def test_integer_rounding_matches_the_fractions_everywhere(rounding: Rounding) -> None:
    for denominator in range(1, 41):
        for numerator in range(0, 1201):
            value = Fraction(numerator, denominator)
            assert round_cents(value, rounding) == _rounded_by_fractions(value, rounding), value
    odds = [Fraction(1), Fraction(8), Fraction(19, 20), Fraction(5, 2), Fraction(1, 2),
            Fraction(3, 4), Fraction(7, 3), Fraction(40), 3]
    for amount in range(0, 3001, 7):
        for each in odds:
            assert payout_cents(amount, each, rounding) == _rounded_by_fractions(  # type: ignore[arg-type]
                Fraction(amount) * each, rounding), (amount, each)
    rates = [Fraction(5, 100), Fraction(1, 20), Fraction(4, 100), Fraction(25, 1000), Fraction(1, 3)]
    for win in range(1, 5001, 3):
        for rate in rates:
            exact = _rounded_by_fractions(Fraction(win) * rate, rounding)
            assert vigorish_cents(win, rate, rounding=rounding) == exact, (win, rate)
            assert vigorish_cents(win, rate, rounding=rounding, round_up_to_25c=True) == max(
                25, -(-exact // 25) * 25), (win, rate)


def test_round_cents_of_whole_cents_is_those_cents() -> None:
    assert [round_cents(n, r) for n in (0, 1, 950) for r in Rounding] == \
        [0] * 4 + [1] * 4 + [950] * 4
    with pytest.raises(ValueError, match="amount -3 is negative"):
        round_cents(-3)
