"""The 631a round enumeration behind the exact par sheets (controller/rules/par.py).

The main game is enumerated over card *values* (ten classes with their counts) with
falling-factorial weights, so that every weight is an exact integer over the common
denominator N(N-1)...(N-5) of six ordered cards; rounds that use fewer cards are scaled
up by the falling factorial of the cards they leave unused.

Speed comes from not enumerating the four initial cards once per third card:
for each pair of two-card Point Counts (P, B) the engine keeps the sums
S0 = sum W4, S1[v] = sum W4*k[v] and S2[v][w] = sum W4*k[v]*k[w] over the
initial four-card deals (W4 their weight, k[v] how many cards of class v they
used). A third-card weight (c[v]-k[v]) and a pair of them (c[v]-k[v])(c'[w]-k[w])
are polynomials in k, so the sums give the exact totals directly. The facts of a full
shoe are polynomials in the number of decks (controller/rules/par_table.py holds them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations_with_replacement
from typing import TypeVar

from controller.rules.baccarat import banker_draws_value, player_draws


def falling(n: int, k: int) -> int:
    """n (n-1) ... (n-k+1): ordered ways to draw k cards from n."""
    result = 1
    for i in range(k):
        result *= n - i
    return result


@dataclass(frozen=True, slots=True)
class RoundClass:
    """A class of 631a rounds: the two-card Point Counts and the third cards' classes.

    `player_third` / `banker_third` are card-class indices: the value 0..9 for
    value-level enumeration, the rank 1..13 for rank-level enumeration.
    """

    player_two: int
    banker_two: int
    player_third: int | None
    banker_third: int | None
    player_third_value: int | None
    banker_third_value: int | None

    @property
    def player_total(self) -> int:
        return (self.player_two + (self.player_third_value or 0)) % 10

    @property
    def banker_total(self) -> int:
        return (self.banker_two + (self.banker_third_value or 0)) % 10

    @property
    def player_cards(self) -> int:
        return 2 if self.player_third is None else 3

    @property
    def banker_cards(self) -> int:
        return 2 if self.banker_third is None else 3

    @property
    def player_natural(self) -> bool:
        return self.player_two >= 8

    @property
    def banker_natural(self) -> bool:
        return self.banker_two >= 8


def enumerate_rounds(counts: Sequence[int], values: Sequence[int]) -> dict[RoundClass, int]:
    """Exact weights of every 631a round class over N(N-1)...(N-5).

    `counts[i]` cards of class i, each worth baccarat value `values[i]`.
    """
    return {RoundClass(p, b, None if c5 < 0 else c5, None if c6 < 0 else c6,
                       None if c5 < 0 else values[c5], None if c6 < 0 else values[c6]): w
            for (p, b, c5, c6), w in enumerate_raw(counts, values).items()}


def enumerate_raw(counts: Sequence[int], values: Sequence[int]
                  ) -> dict[tuple[int, int, int, int], int]:
    """`enumerate_rounds` keyed by plain tuples (P, B, class of 3rd Player card or -1, same for Banker)."""
    classes = range(len(counts))
    size = len(counts)
    n = sum(counts)
    s0, s1, s2 = _moment_sums(counts, values)
    out: dict[tuple[int, int, int, int], int] = {}
    rest2 = (n - 4) * (n - 5)
    for key, total in enumerate(s0):
        if not total:
            continue
        p, b = divmod(key, 10)
        m1, m2 = s1[key], s2[key]
        if not player_draws(p, b):
            if p >= 8 or b >= 8 or b > 5:
                out[(p, b, -1, -1)] = total * rest2
                continue
            for c6 in classes:  # 631a.11(c)(1): Player stays, Banker draws on 0-5
                w = counts[c6] * total - m1[c6]
                if w:
                    out[(p, b, -1, c6)] = w * (n - 5)
            continue
        for c5 in classes:
            a = counts[c5]
            w5 = a * total - m1[c5]
            if w5 == 0:
                continue
            if not banker_draws_value(b, p, values[c5]):
                out[(p, b, c5, -1)] = w5 * (n - 5)
                continue
            base = c5 * size
            for c6 in classes:
                # (c[c5]-k[c5]) (c[c6]-k[c6]-[c5 = c6]) summed over the initial deals,
                # expanded: w5 is the first factor's sum, the rest are moment sums.
                w = counts[c6] * w5 - a * m1[c6] + m2[base + c6] - (w5 if c5 == c6 else 0)
                if w:
                    out[(p, b, c5, c6)] = w
    return out


def _moment_sums(counts: Sequence[int], values: Sequence[int]
                 ) -> tuple[list[int], list[list[int]], list[list[int]]]:
    """S0, S1 and S2 of every pair of two-card Point Counts (P, B), indexed 10 P + B.

    S1 is filled only where a third card may be drawn and S2 only where the Player draws
    (631a.11(c)), the other rows are empty lists: about half the pairs need neither,
    which halves the work of the loop over pairs of hands.
    """
    size = len(counts)
    ff = [[falling(c, k) for k in range(5)] for c in counts]
    # Each two-card hand once: (total, orderings x weight alone, orderings, bit mask of its
    # classes, ((class, cards used), ...)). The mask tells at once whether two hands share a
    # class, the only case where their weights do not simply multiply.
    Hand = tuple[int, int, int, int, tuple[tuple[int, int], ...]]
    hands: list[Hand] = []
    for x, y in combinations_with_replacement(range(size), 2):
        total = (values[x] + values[y]) % 10
        if x == y:
            hands.append((total, ff[x][2], 1, 1 << x, ((x, 2),)))
        else:
            hands.append((total, 2 * ff[x][1] * ff[y][1], 2, (1 << x) | (1 << y),
                          ((x, 1), (y, 1))))

    def moments_needed(p: int, b: int) -> int:
        if p >= 8 or b >= 8:
            return 0  # a natural: no third card (631a.11(a))
        if player_draws(p, b):
            return 2
        return 1 if banker_draws_value(b, p, None) else 0

    need = [moments_needed(p, b) for p in range(10) for b in range(10)]
    # Most pairs of hands share no class, and then the weight of the four cards is the
    # product of the hands' weights alone: those pairs are summed at once as products of
    # per-total sums (a0: weights, a1: weight x cards of each class, a2: weight x products
    # of cards), as if the two hands were drawn independently. The pairs that share a class
    # are then corrected one by one by the difference of their true weight (cards of the
    # shared class are drawn from one count, falling factorial) and that product. The cards
    # used, k, are the same either way, so every correction has the same moments.
    square = size * size
    a0 = [0] * 10
    a1 = [[0] * size for _ in range(10)]
    a2 = [[0] * square for _ in range(10)]
    for total, weight, _mult, _mask, alone in hands:
        a0[total] += weight
        row1, row2 = a1[total], a2[total]
        for cls, k in alone:
            row1[cls] += weight * k
            for cls2, k2 in alone:
                row2[cls * size + cls2] += weight * k * k2
    s0 = [a0[key // 10] * a0[key % 10] for key in range(100)]
    s1: list[list[int]] = []
    s2: list[list[int]] = []
    for key, moments in enumerate(need):
        p, b = divmod(key, 10)
        a0p, a0b, a1p, a1b = a0[p], a0[b], a1[p], a1[b]
        s1.append([x * a0b + a0p * y for x, y in zip(a1p, a1b)] if moments else [])
        if moments != 2:
            s2.append([])
            continue
        row2 = [x * a0b + a0p * y for x, y in zip(a2[p], a2[b])]
        for cls in range(size):
            xp, xb = a1p[cls], a1b[cls]
            if xp or xb:
                base = cls * size
                row2[base:base + size] = [r + xp * y + xb * x for r, x, y in
                                          zip(row2[base:base + size], a1p, a1b)]
        s2.append(row2)
    containing: list[list[Hand]] = [[] for _ in range(size)]
    for hand in hands:
        for cls, _k in hand[4]:
            containing[cls].append(hand)
    for p_total, p_weight, p_mult, p_mask, p_used in hands:
        row = 10 * p_total
        sharing = containing[p_used[0][0]]
        if len(p_used) == 2:  # the hands with the second class and not the first
            first = p_mask & -p_mask
            sharing = sharing + [h for h in containing[p_used[1][0]] if not h[3] & first]
        for b_total, b_weight, b_mult, b_mask, b_used in sharing:
            used: dict[int, int] = dict(p_used)
            for cls, k in b_used:
                used[cls] = used.get(cls, 0) + k
            w4 = p_mult * b_mult
            for cls, k in used.items():
                w4 *= ff[cls][k]
            delta = w4 - p_weight * b_weight
            key = row + b_total
            s0[key] += delta
            moments = need[key]
            if not moments:
                continue
            items = tuple(used.items())
            row1 = s1[key]
            if moments == 1:
                for cls, k in items:
                    row1[cls] += delta * k
                continue
            row2 = s2[key]
            for cls, k in items:
                dk = delta * k
                row1[cls] += dk
                base = cls * size
                for cls2, k2 in items:
                    row2[base + cls2] += dk * k2
    return s0, s1, s2


def value_facts(counts: Sequence[int], shoe_size: int | None = None
                ) -> dict[tuple[int, int, int, int, bool, bool], int]:
    """`RoundFacts` fields -> weight over N(N-1)...(N-5), for classes that are the values 0..9.

    `shoe_size` (default: all the counted cards) is N, the shoe the cards a round leaves
    unused come from: counting only the sequences of one suit's cards still completes each
    round to six cards from the whole shoe, so that every weight shares one denominator.

    The same sums as `enumerate_raw`, added straight into the facts (final totals, card
    counts, naturals) instead of one entry per pair of third cards: the Banker/Player/Tie
    core needs nothing finer, and skipping the ~3,400 intermediate classes is most of its time.
    """
    n = sum(counts) if shoe_size is None else shoe_size
    rest1, rest2 = n - 5, (n - 4) * (n - 5)
    s0, s1, s2 = _moment_sums(counts, range(10))
    naturals: dict[tuple[int, int, int, int, bool, bool], int] = {}
    # drew[d][pt][bt]: weight of final totals (pt, bt) where d says who drew a third card
    # (2: the Player, 1: the Banker, as bits).
    drew = [[[0] * 10 for _ in range(10)] for _ in range(4)]
    for key, total in enumerate(s0):
        if not total:
            continue
        p, b = divmod(key, 10)
        if p >= 8 or b >= 8:  # 631a.11(a): a Natural, nobody draws
            naturals[(p, b, 2, 2, p >= 8, b >= 8)] = total * rest2
            continue
        m1 = s1[key]
        if p >= 6:  # 631a.11(b): the Player stands; 631a.11(c)(1): the Banker draws on 0-5
            if b > 5:
                drew[0][p][b] += total * rest2
                continue
            weights = [(c * total - m) * rest1 for c, m in zip(counts, m1)]
            _add_rotated(drew[1][p], weights, b)
            continue
        m2 = s2[key]
        for c5 in range(10):
            a = counts[c5]
            w5 = a * total - m1[c5]
            if not w5:
                continue
            pt = (p + c5) % 10
            if not banker_draws_value(b, p, c5):
                drew[2][pt][b] += w5 * rest1
                continue
            # As in enumerate_raw: the product of the two third-card weights, expanded.
            weights = [c * w5 - a * m + mm for c, m, mm in
                       zip(counts, m1, m2[10 * c5:10 * c5 + 10])]
            weights[c5] -= w5
            _add_rotated(drew[3][pt], weights, b)
    out = dict(naturals)
    for who, grid in enumerate(drew):
        for pt, row in enumerate(grid):
            for bt, w in enumerate(row):
                if w:
                    out[(pt, bt, 2 + (who >> 1), 2 + (who & 1), False, False)] = w
    return out


def _add_rotated(row: list[int], weights: list[int], shift: int) -> None:
    """row[(shift + v) % 10] += weights[v]: a third card of value v moves a total by v."""
    row[:] = [r + w for r, w in zip(row, weights[-shift:] + weights[:-shift])] if shift \
        else [r + w for r, w in zip(row, weights)]


# The table in controller/rules/par_table.py: `value_facts` of a full shoe of d decks, each
# weight as a polynomial in d. Every weight sums products of six factors linear in d (a
# falling factorial of 16d or 4d cards of a value, or of the 52d - k cards left), so it is
# a polynomial of degree at most 6 with integer coefficients, and seven deck counts fix it.
TABLE_DECKS = tuple(range(1, 8))

# Which cards of a full shoe a table counts the sequences of, by cards per deck of value 0
# and of each value 1..9: every card (the 631a rounds), the cards of one given suit, of one
# given colour (the suit-aware coup space of the side wagers, side/combinatorics.py).
SHOE_PARTS = {"every card": (16, 4), "one suit": (4, 1), "one colour": (8, 2)}

FactKey = tuple[int, int, int, int, bool, bool]


def _part_facts(part: str, decks: int) -> dict[FactKey, int]:
    zero, other = SHOE_PARTS[part]
    return value_facts([zero * decks] + [other * decks] * 9, 52 * decks)


_K = TypeVar("_K")


def polynomials_in_decks(compute: Callable[[int], Mapping[_K, int]]) -> dict[_K, tuple[int, ...]]:
    """Each weight of `compute(decks)` as a polynomial in the number of decks (coefficients of
    d^0..d^6), interpolated exactly through TABLE_DECKS: right for every deck count when each
    weight is such a polynomial (products of six factors linear in d, as in a full shoe)."""
    size = len(TABLE_DECKS)
    # Inverse of the Vandermonde matrix V[i][j] = d_i^j, by Gauss-Jordan in exact fractions.
    rows = [[Fraction(d) ** j for j in range(size)] + [Fraction(int(i == r)) for i in range(size)]
            for r, d in enumerate(TABLE_DECKS)]
    for col in range(size):
        pivot = rows[col][col]
        rows[col] = [x / pivot for x in rows[col]]
        for r in range(size):
            if r != col and rows[r][col]:
                factor = rows[r][col]
                rows[r] = [x - factor * y for x, y in zip(rows[r], rows[col])]
    inverse = [row[size:] for row in rows]
    points = [compute(d) for d in TABLE_DECKS]
    out: dict[_K, tuple[int, ...]] = {}
    for key in sorted({key for point in points for key in point}):  # type: ignore[type-var]
        values = [point.get(key, 0) for point in points]
        coefficients = [sum((inverse[j][i] * values[i] for i in range(size)), Fraction(0))
                        for j in range(size)]
        assert all(c.denominator == 1 for c in coefficients), key
        out[key] = tuple(int(c) for c in coefficients)
    return out


def evaluate_in_decks(table: Mapping[_K, tuple[int, ...]], decks: int) -> dict[_K, int]:
    """The weights a table of `polynomials_in_decks` gives for `decks` decks (zeros left out)."""
    out: dict[_K, int] = {}
    for key, coefficients in table.items():
        w = 0
        for c in reversed(coefficients):
            w = w * decks + c
        if w:
            out[key] = w
    return out


def fact_polynomials() -> dict[str, dict[FactKey, tuple[int, ...]]]:
    """`value_facts` of each part of a full shoe as polynomials in the number of decks:
    what par_table.py holds."""
    return {part: polynomials_in_decks(lambda d, part=part: _part_facts(part, d))  # type: ignore[misc]
            for part in SHOE_PARTS}


def full_shoe_facts(decks: int, part: str = "every card") -> dict[FactKey, int]:
    """`value_facts` of a full shoe of `decks` decks (of one `SHOE_PARTS` part), from the
    table of polynomials (exact: tests/rules/test_par_sheets.py checks the table against
    the enumeration)."""
    from controller.rules.par_table import FACT_POLYNOMIALS

    return evaluate_in_decks(FACT_POLYNOMIALS[part], decks)


@dataclass(frozen=True, slots=True)
class RoundFacts:
    """The facts most 631a wagers need, collapsed from `RoundClass` (far fewer classes)."""

    player_total: int
    banker_total: int
    player_cards: int
    banker_cards: int
    player_natural: bool
    banker_natural: bool


def collapse(rounds: Mapping[RoundClass, int]) -> dict[RoundFacts, int]:
    out: dict[RoundFacts, int] = {}
    for rc, w in rounds.items():
        key = RoundFacts(rc.player_total, rc.banker_total, rc.player_cards, rc.banker_cards,
                         rc.player_natural, rc.banker_natural)
        out[key] = out.get(key, 0) + w
    return out
