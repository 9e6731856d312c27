"""argparse types for tablectl's (and tablewitness's) numbers: each a bounded range named in
its refusal, so a value no test or wait can use (nan, inf, a negative count, 10**5000) is a
bad argument before anything is asked of the daemon or a device; and the parsers' refusals
with each long value they quote cut to its start and end."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from typing import NoReturn

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


def cut_long_values(message: str) -> str:
    """argparse's refusal with each long value it quotes cut to its start and end: '--shoes
    99...9' (5,000 digits, "invalid int value: '...'") printed a 5,000-character line, as a
    word it does not recognise still would (that part cut to 200 characters)."""
    def cut(match: re.Match[str]) -> str:
        value = match.group(1)
        return f"{value[:24]!r}...{value[-8:]!r} ({len(value)} characters)"

    message = re.sub(r"'([^']{61,})'", cut, message)
    return message if len(message) <= 1000 else f"{message[:600]} ... {message[-200:]}"


class CuttingParser(argparse.ArgumentParser):
    """An ArgumentParser that prints its refusal with long values cut (`cut_long_values`),
    then exits 2 as argparse does; its subparsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        super().error(cut_long_values(message))
