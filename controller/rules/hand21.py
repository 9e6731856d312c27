"""A 21 Baccarat hand's total, naturals, and how two hands compare (681a.1, 681a.3(d), 681a.6(c)).

The one definition the dealing engine (`twentyone.TwentyOneCoup`, settlement) and the
exact par sheets (`par21`) share, so a round is dealt, settled and analysed alike.

681a leaves open how a natural compares with other hands, and so whether two aces (a
natural by 681a.1, but a soft 12 by 681a.3(d)(3)) tie an ace and a ten. The Rules
Submission chooses (`[game.naturals] rule`, docs/rulings.md):

* ``"natural-wins"`` (default): a natural beats every hand that is not a natural;
  two naturals compare by their 681a.3(d) totals, so ace-ten (21) beats two aces
  (12) and equal naturals tie. Two aces are a soft 12, under 17, and take the
  Bonus-only card of 681a.7(f)(2). The Board's stated Tie holds (5.9% with four
  decks, 5.4% with eight) come out of this reading only.
* ``"as-21"``: every natural counts as 21 (two aces too): ace-ten ties two aces,
  and two aces take no Bonus-only card.
* ``"by-total"``: a natural only ends the drawing (681a.7(f)); it compares by its
  681a.3(d) total, so two aces are a 12 that loses to a 13.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from controller.rules.baccarat import Winner

STAND = 17  # 681a.2(b)(7)(i), 681a.7(f)-(g)
BUST_OVER = 21  # 681a.6(c), 681a.7(i)-(j)

NATURAL_WINS = "natural-wins"
NATURAL_AS_21 = "as-21"
NATURAL_BY_TOTAL = "by-total"
NATURAL_RULES = (NATURAL_WINS, NATURAL_AS_21, NATURAL_BY_TOTAL)

# Under "natural-wins" a natural's comparison value is this plus its total: above any
# total a hand can reach (at most 26 with one card drawn to 16), and ordered by total.
_NATURAL_RANK = 100


def card_value_21(rank: int) -> int:
    """681a.3(d): 2-10 face value, J/Q/K ten, ace one here (made eleven by `hand_total`)."""
    return 10 if rank >= 10 else int(rank)


def hand_total(ranks: Iterable[int]) -> tuple[int, bool]:
    """681a.3(d)(3), 681a.1: (total, soft). One ace counts 11 when that keeps the hand <= 21."""
    hard = 0
    has_ace = False
    for r in ranks:
        hard += card_value_21(r)
        has_ace = has_ace or r == 1
    if has_ace and hard + 10 <= 21:
        return hard + 10, True
    return hard, False


def is_natural(ranks: Sequence[int]) -> bool:
    """681a.1: two aces, or an ace and a ten-value card."""
    if len(ranks) != 2:
        return False
    a, b = ranks
    return (a == 1 and (b == 1 or b >= 10)) or (b == 1 and a >= 10)


def check_natural_rule(rule: str) -> str:
    if rule not in NATURAL_RULES:
        raise ValueError(f"natural rule {rule!r}: allowed {', '.join(NATURAL_RULES)}")
    return rule


def natural_total(total: int, rule: str) -> int:
    """The total a natural shows and draws on: its 681a.3(d) total, or 21 under "as-21"."""
    return 21 if rule == NATURAL_AS_21 else total


def comparison_value(total: int, natural: bool, rule: str) -> int:
    """What `winner_21` and the Tie compare: the hand's total, lifted above all totals for a
    natural under "natural-wins". `total` is the 681a.3(d) total (two aces: 12)."""
    if not natural:
        return total
    if rule == NATURAL_WINS:
        return _NATURAL_RANK + total
    return natural_total(total, rule)


def main_total(ranks: Sequence[int], rule: str = NATURAL_WINS) -> int:
    """The total a hand shows and draws on (681a.3(d)); a natural's per `natural_total`."""
    total = hand_total(ranks)[0]
    return natural_total(total, rule) if is_natural(ranks) else total


def hand_value(ranks: Sequence[int], rule: str = NATURAL_WINS) -> int:
    """The comparison value of a hand's main cards (the Bonus-only card never counts)."""
    return comparison_value(hand_total(ranks)[0], is_natural(ranks), rule)


def winner_21(player: int, banker: int) -> Winner:
    """681a.6(c), 681a.7(i)-(j) on comparison values: higher wins at 21 or less; over 21 the
    lower wins; equal values tie (681a.7(i)(4), (j)(4)); a natural's value beats every total."""
    if player == banker:
        return Winner.TIE
    if max(player, banker) >= _NATURAL_RANK:  # a natural under "natural-wins"
        return Winner.PLAYER if player > banker else Winner.BANKER
    p_over, b_over = player > BUST_OVER, banker > BUST_OVER
    if p_over != b_over:
        return Winner.BANKER if p_over else Winner.PLAYER  # 681a.7(i)(1), (j)(1)
    lower_wins = p_over  # both over 21: 681a.7(i)(3), (j)(3)
    player_higher = player > banker
    return Winner.PLAYER if player_higher != lower_wins else Winner.BANKER


def wins_with_17(value: int) -> bool:
    """681a.8(a): a winning hand of exactly 17 is paid 1 to 2 (a natural's value never is)."""
    return value == STAND
