"""Exact holds of the 21 Baccarat Bonus (681a.3(e), 681a.8(c)) under readings the engine does
not offer, for docs/par-sheets.md ("21 Baccarat: the Bonus readings tried").

    .venv/bin/python tools/bonus_readings.py

A hand's Bonus cards are exchangeable with three cards drawn from the full shoe
(controller/rules/par21.py), so each reading is an exact rank-level enumeration: the first
two ranks, and a third when the reading deals the hand one. The default reading is the
engine's (`twentyone.bonus_hands`, `hand21.hand_total`); tests/rules/test_681a_bonus_readings.py
checks that it, and the as-21 row, give the engine's par sheet exactly. Every other reading
changes one thing, named in its row. None is a
configuration: the Board's range of 5.8% to 8.0% is reproduced by a reading only if all six
paytables fall inside it, and the script marks such a row.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from fractions import Fraction
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from controller.rules.hand21 import hand_total  # noqa: E402
from controller.rules.twentyone import BONUS_PAYTABLES, bonus_hands  # noqa: E402

THREE_SEVENS, TRIPS, STRAIGHT, TWENTY_ONE, PAIR = range(5)  # twentyone.BONUS_LINES
DECKS = {"A": 4, "B": 4, "C": 4, "D": 8, "E": 8, "F": 8}  # 681a.8(c)
BOARD_LOW, BOARD_HIGH = Fraction(58, 1000), Fraction(80, 1000)

Lines = Callable[[list[int]], list[int]]
Third = Callable[[list[int]], bool]


def engine_lines(ranks: list[int]) -> list[int]:
    return bonus_hands(ranks)


def under_17(two: list[int]) -> bool:
    """681a.7(f)(2), (g): a hand under 17 takes one more card; two aces are a soft 12."""
    return hand_total(two)[0] < 17


def hold(decks: int, table: str, lines: Lines, third: Third) -> Fraction:
    """The house's share of each unit wagered on a Bonus, under `lines` and `third`."""
    per_rank, n = 4 * decks, 52 * decks
    pays = BONUS_PAYTABLES[table]
    returned = Fraction(0)
    for r1 in range(1, 14):
        for r2 in range(1, 14):
            w2 = per_rank * (per_rank - (r1 == r2))
            if not third([r1, r2]):
                found = lines([r1, r2])
                returned += w2 * (n - 2) * (max(pays[i] for i in found) if found else -1)
                continue
            for r3 in range(1, 14):
                w3 = per_rank - (r1 == r3) - (r2 == r3)
                found = lines([r1, r2, r3])
                returned += w2 * w3 * (max(pays[i] for i in found) if found else -1)
    return -returned / (n * (n - 1) * (n - 2))


def without(line: int, unless: Callable[[list[int]], bool]) -> Lines:
    """The engine's lines, less `line` where `unless(ranks)` does not hold."""
    return lambda ranks: [i for i in engine_lines(ranks) if i != line or unless(ranks)]


def with_pair_on(test: Callable[[list[int]], bool]) -> Lines:
    """The engine's lines, with a pair wherever `test(ranks)` holds."""
    def lines(ranks: list[int]) -> list[int]:
        found = [i for i in engine_lines(ranks) if i != PAIR]
        return found + [PAIR] if test(ranks) else found
    return lines


def ten_value(rank: int) -> int:
    return min(rank, 10)


READINGS: Sequence[tuple[str, Lines, Third, dict[str, int] | None]] = (
    ("default (the engine's: natural-wins, one card under 17)", engine_lines, under_17, None),
    ("every paytable with 2 decks", engine_lines, under_17, {t: 2 for t in DECKS}),
    ("every paytable with 6 decks", engine_lines, under_17, {t: 6 for t in DECKS}),
    ("A-C with 8 decks, D-F with 4 (the deck counts swapped)", engine_lines, under_17,
     {"A": 8, "B": 8, "C": 8, "D": 4, "E": 4, "F": 4}),
    ("two aces count 21 and take no card (as-21)", engine_lines,
     lambda two: two != [1, 1] and under_17(two), None),
    ("a straight with no ace (Q-K-A never has three cards; A-2-3 does not count)",
     without(STRAIGHT, lambda r: 1 not in r), under_17, None),
    ("a three-card 21 only with an ace counted 11",
     without(TWENTY_ONE, lambda r: sum(11 if x == 1 else ten_value(x) for x in r) == 21),
     under_17, None),
    ("a three-card 21 only as a hard total (an ace counts 1)",
     without(TWENTY_ONE, lambda r: sum(ten_value(x) for x in r) == 21), under_17, None),
    ("a pair only on a hand that took no third card",
     with_pair_on(lambda r: len(r) == 2 and r[0] == r[1]), under_17, None),
    ("a pair on any two of the hand's cards",
     with_pair_on(lambda r: len(set(r)) < len(r)), under_17, None),
    ("a pair by value (10-J is a pair)",
     with_pair_on(lambda r: ten_value(r[0]) == ten_value(r[1])), under_17, None),
    ("every hand takes a third card for the Bonus", engine_lines, lambda two: True, None),
    ("the Bonus card under 16 only", engine_lines, lambda two: hand_total(two)[0] < 16, None),
    ("the Bonus card under 18", engine_lines, lambda two: hand_total(two)[0] < 18, None),
    ("a busted three-card hand (over 21) wins no three-card line",
     lambda r: [i for i in engine_lines(r) if len(r) < 3 or hand_total(r)[0] <= 21 or i == PAIR],
     under_17, None),
    ("a busted hand wins nothing, its pair neither",
     lambda r: [] if len(r) == 3 and hand_total(r)[0] > 21 else engine_lines(r),
     under_17, None),
    ("drawing to 17: a three-card line needs the hand to stop at three cards",
     lambda r: [i for i in engine_lines(r) if len(r) < 3 or i == PAIR
                or hand_total(r)[0] >= 17],
     under_17, None),
)


def main() -> int:
    # No options: --help says what it does, an argument it does not take is refused.
    argparse.ArgumentParser(description="Exact holds of the 21 Baccarat Bonus under the "
                            "readings docs/par-sheets.md lists.").parse_args()
    print("reading".ljust(78) + "".join(f"{t:>9}" for t in DECKS))
    for name, lines, third, decks in READINGS:
        holds = [hold((decks or DECKS)[t], t, lines, third) for t in DECKS]
        inside = all(BOARD_LOW <= h <= BOARD_HIGH for h in holds)
        print(name.ljust(78) + "".join(f"{float(h) * 100:8.4f}%" for h in holds)
              + ("   all six inside 5.8%-8.0%" if inside else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
