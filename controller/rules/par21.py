"""Exact enumeration for 21 Baccarat (681a) par sheets.

Main wagers: every ordered card sequence of a round, over ten value classes
(ace, 2..9, ten-value) with card removal, memoised on (cards remaining, hand
state). A sequence of d cards has integer weight c1 (c2') ... (the falling
counts of the classes it uses); its probability is weight / N(N-1)...(N-d+1),
so results are kept per depth d and summed exactly at the end.

Bonus wagers: by exchangeability, a hand's first three cards (its first two,
and the next card it is dealt when its two-card total is under 17, whether
by 681a.7(g) or as the Bonus-only card of 681a.7(f)(2)) are distributed as
three cards drawn at random from the full shoe, whatever the other hand does;
so a rank-level enumeration of three cards is exact.

A natural's total and how it compares are `hand21`'s, for the configured natural
rule; the enumerations key rounds by `hand21.comparison_value`, which is what the
dealing engine settles on.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from functools import cached_property, lru_cache

from controller.rules.hand21 import (
    NATURAL_RULES,
    NATURAL_WINS,
    check_natural_rule,
    comparison_value,
    natural_total,
)
from controller.rules.par import evaluate_in_decks, falling, polynomials_in_decks


def _initial_four_weight(counts: list[int], p1: int, p2: int, b1: int, b2: int
                         ) -> tuple[dict[int, int], int]:
    """Ways to deal value classes p1, p2 to the Player and b1, b2 to the Banker from a shoe
    with `counts` cards per class: each hand's two cards in either order (one order when
    alike), times the falling factorial of each class for the cards it gives."""
    used: dict[int, int] = {}
    for cls in (p1, p2, b1, b2):
        used[cls] = used.get(cls, 0) + 1
    weight = (1 if p1 == p2 else 2) * (1 if b1 == b2 else 2)
    for cls, k in used.items():
        weight *= falling(counts[cls], k)
    return used, weight

def one_card_totals_polynomials() -> dict[str, dict[tuple[int, int], tuple[int, ...]]]:
    """`_one_card_totals` of each natural rule as polynomials in the number of decks: a
    round takes at most six cards, each weight a product of six factors linear in d."""
    def totals_of(rule: str) -> Callable[[int], dict[tuple[int, int], int]]:
        return lambda decks: TwentyOneEnumeration(decks, "one-card", rule)._one_card_totals()

    return {rule: polynomials_in_decks(totals_of(rule)) for rule in NATURAL_RULES}


# Value classes: index 0 = ace, 1..8 = 2..9, 9 = ten-value (10, J, Q, K).
_VALUES = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
STAND = 17


def _add(hard: int, ace: bool, cls: int) -> tuple[int, bool]:
    return hard + _VALUES[cls], ace or cls == 0


def _total(hard: int, ace: bool) -> int:
    return hard + 10 if ace and hard + 10 <= 21 else hard


class TwentyOneEnumeration:
    """Exact 681a round distributions for a full shoe of `decks` decks."""

    def __init__(self, decks: int, draw_rule: str = "one-card",
                 natural_rule: str = NATURAL_WINS) -> None:
        self.decks = decks
        self.draw_rule = draw_rule
        self.natural_rule = check_natural_rule(natural_rule)
        self.n = 52 * decks
        self.counts = tuple([4 * decks] * 9 + [16 * decks])

    # ---- main wagers ----------------------------------------------------------------------

    @cached_property
    def totals(self) -> dict[tuple[int, int], int]:
        """(Player, Banker) `hand21.comparison_value`s -> weight over `denominator`.

        With the one-card rule, from the table of `_one_card_totals` as polynomials in the
        number of decks (controller/rules/par21_table.py; tests/rules/test_681a.py checks it
        against the enumeration): a fraction of a millisecond instead of tens.
        """
        if self.draw_rule == "one-card":
            from controller.rules.par21_table import TOTALS_681A

            self._max_depth = 6
            return evaluate_in_decks(TOTALS_681A[self.natural_rule], self.decks)
        return self._recursive_totals()

    def _natural_value(self, hard: int, ace: bool) -> int:
        return comparison_value(_total(hard, ace), True, self.natural_rule)

    def _one_card_totals(self) -> dict[tuple[int, int], int]:
        """At most six cards: moment sums over the initial four, as in `par.enumerate_rounds`.

        For each pair of two-card hand states the sums S0 = sum W4, S1[v] = sum W4 k[v],
        S2[v][w] = sum W4 k[v] k[w] make every third-card weight (c[v]-k[v]) and pair of
        them exact without revisiting the four-card deals.
        """
        counts = list(self.counts)
        n = self.n
        pairs = [(a, b) for a in range(10) for b in range(a, 10)]
        # (Player hand state, Banker hand state), each (hard total, has ace, natural)
        HandPair = tuple[tuple[int, bool, bool], tuple[int, bool, bool]]
        s0: dict[HandPair, int] = {}
        s1: dict[HandPair, list[int]] = {}
        s2: dict[HandPair, dict[tuple[int, int], int]] = {}

        def state(a: int, b: int) -> tuple[int, bool, bool]:
            hard, ace = _VALUES[a] + _VALUES[b], a == 0 or b == 0
            natural = ace and (hard == 11 or (a == 0 and b == 0))  # 681a.1
            return hard, ace, natural

        for pa, pb in pairs:
            ps = state(pa, pb)
            for ba, bb in pairs:
                used, w4 = _initial_four_weight(counts, pa, pb, ba, bb)
                if not w4:
                    continue
                key = (ps, state(ba, bb))
                if key not in s0:
                    s0[key], s1[key], s2[key] = 0, [0] * 10, {}
                s0[key] += w4
                for cls, k in used.items():
                    s1[key][cls] += w4 * k
                    for cls2, k2 in used.items():
                        s2[key][(cls, cls2)] = s2[key].get((cls, cls2), 0) + w4 * k * k2
        out: dict[tuple[int, int], int] = {}
        self._max_depth = 6

        def put(pt: int, bt: int, w: int) -> None:
            out[(pt, bt)] = out.get((pt, bt), 0) + w

        for ((ph, pa_, pn), (bh, ba_, bn)), total in s0.items():
            m1, m2 = s1[((ph, pa_, pn), (bh, ba_, bn))], s2[((ph, pa_, pn), (bh, ba_, bn))]
            pt2 = self._natural_value(ph, pa_) if pn else _total(ph, pa_)
            bt2 = self._natural_value(bh, ba_) if bn else _total(bh, ba_)
            if pn or bn:  # 681a.7(f): no further card counts for the main wagers
                put(pt2, bt2, total * (n - 4) * (n - 5))
                continue
            p_draws, b_draws = pt2 < STAND, bt2 < STAND  # 681a.7(g)
            if not p_draws and not b_draws:
                put(pt2, bt2, total * (n - 4) * (n - 5))
            elif p_draws and not b_draws:
                for c5 in range(10):
                    w = counts[c5] * total - m1[c5]
                    if w:
                        put(_total(*_add(ph, pa_, c5)), bt2, w * (n - 5))
            elif b_draws and not p_draws:
                for c6 in range(10):
                    w = counts[c6] * total - m1[c6]
                    if w:
                        put(pt2, _total(*_add(bh, ba_, c6)), w * (n - 5))
            else:
                for c5 in range(10):
                    a = counts[c5]
                    pt = _total(*_add(ph, pa_, c5))
                    for c6 in range(10):
                        bb = counts[c6] - (c5 == c6)
                        w = a * bb * total - a * m1[c6] - bb * m1[c5] + m2.get((c5, c6), 0)
                        if w:
                            put(pt, _total(*_add(bh, ba_, c6)), w)
        return out

    def _recursive_totals(self) -> dict[tuple[int, int], int]:
        one_card = self.draw_rule == "one-card"
        n = self.n

        @lru_cache(maxsize=None)
        def banker(rem: tuple[int, ...], hard: int, ace: bool, drawn: int) -> tuple[tuple[int, int, int], ...]:
            # -> ((banker total, extra cards used, sequence count), ...)
            t = _total(hard, ace)
            if t >= STAND or (one_card and drawn >= 1):
                return ((t, 0, 1),)
            acc: dict[tuple[int, int], int] = {}
            lst = list(rem)
            for cls in range(10):
                c = lst[cls]
                if not c:
                    continue
                lst[cls] = c - 1
                h2, a2 = _add(hard, ace, cls)
                for bt, used, w in banker(tuple(lst), h2, a2, drawn + 1):
                    key = (bt, used + 1)
                    acc[key] = acc.get(key, 0) + c * w
                lst[cls] = c
            return tuple((bt, used, w) for (bt, used), w in acc.items())

        @lru_cache(maxsize=None)
        def player(rem: tuple[int, ...], hard: int, ace: bool, drawn: int,
                   b_hard: int, b_ace: bool) -> tuple[tuple[int, int, int, int], ...]:
            # -> ((player total, banker total, extra cards used, sequence count), ...)
            t = _total(hard, ace)
            if t >= STAND or (one_card and drawn >= 1):
                return tuple((t, bt, used, w) for bt, used, w in banker(rem, b_hard, b_ace, 0))
            acc: dict[tuple[int, int, int], int] = {}
            lst = list(rem)
            for cls in range(10):
                c = lst[cls]
                if not c:
                    continue
                lst[cls] = c - 1
                h2, a2 = _add(hard, ace, cls)
                for pt, bt, used, w in player(tuple(lst), h2, a2, drawn + 1, b_hard, b_ace):
                    key = (pt, bt, used + 1)
                    acc[key] = acc.get(key, 0) + c * w
                lst[cls] = c
            return tuple((pt, bt, used, w) for (pt, bt, used), w in acc.items())

        by_depth: dict[tuple[int, int, int], int] = {}
        counts = list(self.counts)
        for p1 in range(10):
            for p2 in range(p1, 10):
                for b1 in range(10):
                    for b2 in range(b1, 10):
                        used, w4 = _initial_four_weight(counts, p1, p2, b1, b2)
                        if not w4:
                            continue
                        ph, pa = _add(*_add(0, False, p1), p2)
                        bh, ba = _add(*_add(0, False, b1), b2)
                        p_nat = pa and ph == 11  # 681a.1: ace with a ten-value card, or two aces
                        b_nat = ba and bh == 11
                        p_nat = p_nat or (p1 == 0 and p2 == 0)
                        b_nat = b_nat or (b1 == 0 and b2 == 0)
                        if p_nat or b_nat:  # 681a.7(f): no card counts for the main wagers
                            key = (self._natural_value(ph, pa) if p_nat else _total(ph, pa),
                                   self._natural_value(bh, ba) if b_nat else _total(bh, ba), 4)
                            by_depth[key] = by_depth.get(key, 0) + w4
                            continue
                        rem = tuple(c - used.get(i, 0) for i, c in enumerate(counts))
                        for pt, bt, extra, w in player(rem, ph, pa, 0, bh, ba):
                            key = (pt, bt, 4 + extra)
                            by_depth[key] = by_depth.get(key, 0) + w4 * w
        depths = {d for _, _, d in by_depth}
        self._max_depth = max(depths)
        out: dict[tuple[int, int], int] = {}
        scale_to = self._max_depth
        for (pt, bt, d), w in by_depth.items():
            # bring every depth to the deepest denominator N(N-1)...(N-D+1)
            scaled = w * falling(n - d, scale_to - d)
            out[(pt, bt)] = out.get((pt, bt), 0) + scaled
        return out

    @property
    def denominator(self) -> int:
        _ = self.totals
        return falling(self.n, self._max_depth)

    def probability(self, weight: int) -> Fraction:
        return Fraction(weight, self.denominator)

    # ---- Bonus wagers ---------------------------------------------------------------------

    @cached_property
    def bonus_three_cards(self) -> dict[tuple[int, ...], int]:
        """Ranks of a hand's Bonus cards: three ranks, or two when its first two total 17+
        (two aces: 12 and a third card, or 21 and none under the "as-21" natural rule)."""
        per_rank = 4 * self.decks
        out: dict[tuple[int, ...], int] = {}
        for r1 in range(1, 14):
            for r2 in range(1, 14):
                w2 = per_rank * (per_rank - (r1 == r2))
                v1, v2 = min(r1, 10), min(r2, 10)
                two = _total(v1 + v2, r1 == 1 or r2 == 1)
                if r1 == r2 == 1:
                    two = natural_total(two, self.natural_rule)
                if two >= STAND:
                    key = (r1, r2)
                    out[key] = out.get(key, 0) + w2 * (self.n - 2)
                    continue
                for r3 in range(1, 14):
                    w3 = per_rank - (r1 == r3) - (r2 == r3)
                    out[(r1, r2, r3)] = w2 * w3
        return out

    @property
    def bonus_denominator(self) -> int:
        return falling(self.n, 3)
