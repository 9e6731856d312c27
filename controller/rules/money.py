"""Money: integer cents, and the one place where a non-integral amount is rounded.

Every payout at odds that do not divide the wager (0.95 to 1, 2.5 to 1, 1 to 2)
and every vigorish amount (5%, 631a.13(c)) passes through this module, so the
rounding a table applies is stated once and is configurable per Rules
Submission (docs/rulings.md, "Rounding").
"""

from __future__ import annotations

import enum
from fractions import Fraction

QUARTER_CENTS = 25  # 631a.13(c): vigorish may be rounded to 25 cents or the next multiple of 25


class Rounding(enum.Enum):
    """How a fractional number of cents becomes whole cents."""

    DOWN = "down"  # toward zero: the house never pays a fraction it does not owe
    UP = "up"  # away from zero
    HALF_UP = "half-up"  # nearest cent, halves away from zero
    HALF_EVEN = "half-even"  # nearest cent, halves to the even cent

    @classmethod
    def parse(cls, text: str) -> Rounding:
        for member in cls:
            if member.value == text:
                return member
        allowed = ", ".join(repr(m.value) for m in cls)
        raise ValueError(f"rounding {text!r} is not one of {allowed}")


def round_cents(amount: Fraction | int, rounding: Rounding = Rounding.DOWN) -> int:
    """Round a non-negative exact amount of cents to whole cents."""
    if type(amount) is int:  # whole cents already (a wager paid at whole odds)
        if amount < 0:
            raise ValueError(f"amount {amount} is negative: money rounding applies to magnitudes")
        return amount
    value = Fraction(amount)
    return _round_ratio(value.numerator, value.denominator, rounding)


def _round_ratio(numerator: int, denominator: int, rounding: Rounding) -> int:
    """`round_cents` of numerator / denominator cents (denominator > 0), in integers: the
    settlement's payouts and vigorish without a Fraction made for each."""
    if numerator < 0:
        raise ValueError(f"amount {Fraction(numerator, denominator)} is negative: money "
                         "rounding applies to magnitudes")
    floor, remainder = divmod(numerator, denominator)
    if remainder == 0:
        return floor
    if rounding is Rounding.DOWN:
        return floor
    if rounding is Rounding.UP:
        return floor + 1
    twice = 2 * remainder  # the remainder against half the denominator
    if twice > denominator:
        return floor + 1
    if twice < denominator:
        return floor
    if rounding is Rounding.HALF_UP:
        return floor + 1
    return floor + (floor % 2)  # HALF_EVEN


def payout_cents(amount_cents: int, odds: Fraction, rounding: Rounding = Rounding.DOWN) -> int:
    """The amount won on `amount_cents` at `odds` to 1, in whole cents."""
    if amount_cents < 0:
        raise ValueError(f"wager {amount_cents} cents is negative")
    if isinstance(odds, (Fraction, int)):  # exact: in integers
        return _round_ratio(amount_cents * odds.numerator, odds.denominator, rounding)
    return round_cents(Fraction(amount_cents) * odds, rounding)


def vigorish_cents(
    win_cents: int,
    rate: Fraction = Fraction(5, 100),
    *,
    round_up_to_25c: bool = False,
    rounding: Rounding = Rounding.UP,
) -> int:
    """631a.13(c): vigorish on an amount won.

    The exact rate x win is first made whole cents with `rounding` (default up:
    a fraction of a cent owed is a whole cent owed). With `round_up_to_25c` the
    result is then raised to 25 cents or the next multiple of 25 cents, as
    631a.13(c) permits; no vigorish is charged on a zero win.
    """
    if win_cents <= 0:
        return 0
    if isinstance(rate, (Fraction, int)):  # exact: in integers
        cents = _round_ratio(win_cents * rate.numerator, rate.denominator, rounding)
    else:
        cents = round_cents(Fraction(win_cents) * rate, rounding)
    if round_up_to_25c:
        cents = -(-cents // QUARTER_CENTS) * QUARTER_CENTS
        cents = max(cents, QUARTER_CENTS)
    return cents


def format_cents(cents: int) -> str:
    """'$1,234.05' style text for people; never parsed back."""
    sign = "-" if cents < 0 else ""
    whole, frac = divmod(abs(cents), 100)
    return f"{sign}${whole:,}.{frac:02d}"


def parse_odds(text: str | int) -> Fraction:
    """Parse payout odds written 'A to B' (or a bare integer meaning 'A to 1') into a Fraction.

    'for' odds are rejected on purpose: odds a table configures are written 'A to B';
    the paytables stated 'for 1' (631c.2(i), 627b.6(i)) are data, converted once
    (docs/rulings.md, "'to 1' and 'for 1' odds").
    """
    if isinstance(text, bool):
        raise ValueError(f"odds {text!r}: expected 'A to B' or an integer")
    if isinstance(text, int):
        if text < 0:
            raise ValueError(f"odds {text!r}: must not be negative")
        return Fraction(text)
    parts = str(text).strip().lower().split()
    if len(parts) == 3 and parts[1] == "to":
        try:
            a, b = Fraction(parts[0]), Fraction(parts[2])
        except (ValueError, ZeroDivisionError):
            pass
        else:
            if a >= 0 and b > 0:
                return a / b
    raise ValueError(f"odds {text!r}: expected 'A to B' with A >= 0 and B > 0, e.g. '8 to 1' or '1 to 2'")
