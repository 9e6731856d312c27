"""Benchmark: par sheet time of every shipped configuration, beside a plain nested-loop enumeration.

    .venv/bin/python bench/bench_par_sheet.py

For each config/*.toml: the time of `compute_par_sheet` (every offered wager),
and the time of a reference that enumerates the same shoe the plain way
(nested loops over the six card values of a round, falling-factorial
weights, Banker/Player/Tie only), with the ratio. The reference's figures are
checked against the engine's so the comparison is of equal work done right.
"""

from __future__ import annotations

import sys
import time
from fractions import Fraction
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from controller.rules.baccarat import banker_draws_value, player_draws  # noqa: E402
from controller.rules.game import load_game  # noqa: E402
from controller.rules.par import ParContext, compute_par_sheet  # noqa: E402
from controller.rules.submission import GameConfig, SubmissionError  # noqa: E402


def reference_631a(decks: int) -> tuple[Fraction, Fraction, Fraction]:
    """Plain nested loops over card values with card removal; (banker, player, tie) probabilities."""
    counts = [16 * decks] + [4 * decks] * 9
    n = 52 * decks
    win = {"b": 0, "p": 0, "t": 0}
    den = n * (n - 1) * (n - 2) * (n - 3) * (n - 4) * (n - 5)

    def take(v: int) -> int:
        c = counts[v]
        counts[v] -= 1
        return c

    for p1 in range(10):
        w1 = take(p1)
        for b1 in range(10):
            w2 = w1 * take(b1)
            for p2 in range(10):
                w3 = w2 * take(p2)
                for b2 in range(10):
                    w4 = w3 * take(b2)
                    pt, bt = (p1 + p2) % 10, (b1 + b2) % 10
                    if w4:
                        if player_draws(pt, bt):
                            for p3 in range(10):
                                w5 = w4 * take(p3)
                                pf = (pt + p3) % 10
                                if banker_draws_value(bt, pt, p3):
                                    for b3 in range(10):
                                        w6 = w5 * counts[b3]
                                        bf = (bt + b3) % 10
                                        win["b" if bf > pf else "p" if pf > bf else "t"] += w6
                                else:
                                    w6 = w5 * (n - 5)
                                    win["b" if bt > pf else "p" if pf > bt else "t"] += w6
                                counts[p3] += 1
                        elif banker_draws_value(bt, pt, None):
                            for b3 in range(10):
                                w6 = w4 * counts[b3] * (n - 5)
                                bf = (bt + b3) % 10
                                win["b" if bf > pt else "p" if pt > bf else "t"] += w6
                        else:
                            w6 = w4 * (n - 4) * (n - 5)
                            win["b" if bt > pt else "p" if pt > bt else "t"] += w6
                    counts[b2] += 1
                counts[p2] += 1
            counts[b1] += 1
        counts[p1] += 1
    return Fraction(win["b"], den), Fraction(win["p"], den), Fraction(win["t"], den)


def reference_681a(decks: int) -> float:
    """Plain recursion over every card sequence of a 681a round (one-card rule); returns seconds."""
    from controller.rules.par21 import TwentyOneEnumeration

    started = time.perf_counter()
    TwentyOneEnumeration(decks)._recursive_totals()
    return time.perf_counter() - started


def main() -> int:
    ref_cache: dict[tuple[str, int], float] = {}
    print(f"{'configuration':<44} {'par sheet':>10} {'reference':>10} {'ratio':>8}")
    # Core Banker/Player/Tie analysis, 8 decks.
    started = time.perf_counter()
    ctx = ParContext(GameConfig(family="baccarat", decks=8))
    facts = ctx.round_facts
    core = time.perf_counter() - started
    started = time.perf_counter()
    b, p, t = reference_631a(8)
    ref = time.perf_counter() - started
    den = ctx.six_card_denominator
    assert Fraction(sum(w for f, w in facts.items() if f.banker_total > f.player_total), den) == b
    assert Fraction(sum(w for f, w in facts.items() if f.banker_total == f.player_total), den) == t
    ref_cache[("631a", 8)] = ref
    print(f"{'core B/P/T, 8 decks':<44} {core:>9.3f}s {ref:>9.3f}s {ref / core:>7.1f}x")
    for path in sorted((REPO / "config").glob("*.toml")):
        try:
            game = load_game(path)
        except SubmissionError as exc:
            print(f"{path.name:<44} invalid: {exc.errors[0]}")
            continue
        started = time.perf_counter()
        sheet = compute_par_sheet(game)
        elapsed = time.perf_counter() - started
        fam = "681a" if game.config.is_21 else "631a"
        key = (fam, game.config.decks)
        if key not in ref_cache:
            if fam == "631a":
                started = time.perf_counter()
                reference_631a(game.config.decks)
                ref_cache[key] = time.perf_counter() - started
            else:
                ref_cache[key] = reference_681a(game.config.decks)
        ref = ref_cache[key]
        note = f"  ({len(sheet.wagers)} wagers" + (f", {len(sheet.missing)} not analysed)"
                                                   if sheet.missing else ")")
        print(f"{path.name:<44} {elapsed:>9.3f}s {ref:>9.3f}s {ref / elapsed:>7.1f}x{note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
