"""argparse types for tablectl's numbers: each a bounded range named in its refusal, so a
value no test or wait can use (nan, inf, a negative count, 10**5000) is a bad argument
before anything is asked of the daemon or a device."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from controller.errors import shown


def seconds(low: float, high: float) -> Callable[[str], float]:
    """A number of seconds from `low` to `high` (nan and inf are not)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{shown(text)}: allowed: {low:g} to {high:g} "
                                             "seconds")
        return value
    return parse


def whole(low: int, high: int, what: str) -> Callable[[str], int]:
    """A whole number from `low` to `high` (`what` names it in the refusal)."""
    def parse(text: str) -> int:
        digits = text.strip().removeprefix("-")
        value = int(text) if digits.isdecimal() and digits.isascii() and len(digits) <= 12 \
            else None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{shown(text)}: allowed: {what}, {low} to {high}")
        return value
    return parse
