"""631c.6 Must-Hit-By Mystery: a hidden CSPRNG trigger, committed at the reset and revealed at
the hit; the contribution that carries the meter past it wins 100% of the meter."""

from __future__ import annotations

import math
import random
import secrets
from collections.abc import Callable

import pytest

from controller.progressive.core import commitment, draw_trigger
from controller.progressive.system import ProgressiveSystem
from controller.rules.side.mystery import MUST_HIT_BY_CONFIGURATIONS
from controller.memory.store import Store
from drivers.protocols import LockedOut
from tests.progressive.conftest import HEAVENLY_9_MYSTERY, base, config

DRAWS = 20_000
BINS = 21
DOF = BINS - 1  # even, so the chi-square tail has an exact finite series (_chi_square_sf_even)
ALPHA_CSPRNG = 1e-6  # the real CSPRNG cannot be seeded: a false alarm once in a million runs
ALPHA_SEEDED = 0.01  # the seeded source is deterministic, so a usual significance is fine


def _chi_square_sf_even(x: float, dof: int) -> float:
    """Upper tail of the chi-square distribution for even degrees of freedom (exact series):
    P(X > x) = exp(-x/2) * sum_{i < dof/2} (x/2)^i / i!."""
    assert dof % 2 == 0
    half, term, total = x / 2, 1.0, 1.0
    for i in range(1, dof // 2):
        term *= half / i
        total += term
    return math.exp(-half) * total


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _chi_square(draws: list[int], low: int, high: int, bins: int) -> float:
    values = high - low + 1
    counts = [0] * bins
    for d in draws:
        counts[(d - low) * bins // values] += 1
    statistic = 0.0
    for b in range(bins):
        # Bin b holds the offsets v with v * bins // values == b: ceil((b+1)V/B) - ceil(bV/B).
        size = _ceil_div((b + 1) * values, bins) - _ceil_div(b * values, bins)
        expected = len(draws) * size / values
        statistic += (counts[b] - expected) ** 2 / expected
    return statistic


@pytest.mark.parametrize("source, alpha", [
    (random.Random(6316).randrange, ALPHA_SEEDED),
    (secrets.randbelow, ALPHA_CSPRNG),
], ids=["seeded", "csprng"])
def test_631c_6_c_3_trigger_is_uniform_between_minimum_and_maximum(
        source: Callable[[int], int], alpha: float) -> None:
    low, high = 10_000, 25_000  # configuration A-$5, in cents
    draws = [draw_trigger((low, high), source) for _ in range(DRAWS)]
    assert min(draws) >= low and max(draws) <= high
    statistic = _chi_square(draws, low, high, BINS)
    assert _chi_square_sf_even(statistic, DOF) > alpha, statistic


def test_chi_square_helper_rejects_a_biased_source() -> None:
    biased = [10_000 + (i % 7_000) for i in range(DRAWS)]  # never above $170
    assert _chi_square_sf_even(_chi_square(biased, 10_000, 25_000, BINS), DOF) < 1e-12


def test_every_configuration_draws_within_its_bounds() -> None:
    for cfg in MUST_HIT_BY_CONFIGURATIONS.values():
        bounds = (cfg.minimum_cents, cfg.maximum_cents)
        assert draw_trigger(bounds, lambda n: 0) == cfg.minimum_cents
        assert draw_trigger(bounds, lambda n: n - 1) == cfg.maximum_cents


def _system(store: Store, trigger_offsets: list[int]) -> ProgressiveSystem:
    """A system whose triggers are minimum + the given offsets, in order."""
    offsets = iter(trigger_offsets)
    return ProgressiveSystem(config({**HEAVENLY_9_MYSTERY, "wager_cents": 10_000}), store,
                             randbelow=lambda n: next(offsets), token_bytes=secrets.token_bytes)


def _lock(system: ProgressiveSystem, seats: list[int], round_id: int):
    return system.on_lock(LockedOut("button", 0.0, frozenset(seats)), base(seats), round_id)


def test_trigger_stays_secret_and_only_its_commitment_is_logged(store: Store) -> None:
    system = _system(store, [123])
    armed = store.events(kind="progressive_mystery_armed")
    assert len(armed) == 1 and "trigger_cents" not in armed[0].payload
    assert all("10123" not in str(e.payload) for e in store.events())
    meter = next(m for m in system.meters() if m["level"] == "mystery")
    assert meter["trigger_commitment"] == armed[0].payload["commitment"]


def test_631c_6_c_3_the_crossing_contribution_wins_and_the_reveal_verifies(store: Store) -> None:
    # Config A-$5: 1% of a $100 wager is 100 cents; trigger at $100.50 (offset 50).
    wins: list[tuple[int, bool]] = []
    system = _system(store, [50, 10_000])
    system.win_light = lambda seat, on: wins.append((seat, on))
    acceptance = _lock(system, [3, 5, 8], 1)  # seat order: 3 takes it to $101.00 > $100.50
    (award,) = acceptance.awards
    assert (award.seat, award.level, award.amount_cents) == (3, "mystery", 10_100)  # 631c.6(c)(7)
    assert wins == [(3, True)]
    mystery = next(m for m in system.meters() if m["level"] == "mystery")
    # 631c.6(c)(5)(iv): reset to the $100 minimum, then seats 5 and 8 contribute $1 each.
    assert mystery["amount_cents"] == 10_200
    reveal = store.events(kind="progressive_mystery_reveal")[0].payload
    assert reveal["trigger_cents"] == 10_050
    assert commitment("prog", "mystery", reveal["epoch"], reveal["trigger_cents"],
                      bytes.fromhex(reveal["nonce_hex"])) == reveal["commitment"]
    assert system.verify() == []


def test_two_mystery_hits_in_one_round_each_against_its_own_trigger(store: Store) -> None:
    system = _system(store, [0, 0, 10_000])  # each trigger at the $100 minimum
    acceptance = _lock(system, [1, 2, 4], 1)
    assert [(a.seat, a.amount_cents) for a in acceptance.awards] == [(1, 10_100), (2, 10_100)]
    assert [a.pay_order for a in acceptance.awards] == [1, 2]
    assert system.verify() == []


def test_a_tampered_reveal_is_reported(store: Store) -> None:
    system = _system(store, [0, 10_000])
    _lock(system, [1], 1)
    with store.transaction() as db:
        db.execute("UPDATE progressive_mystery SET trigger_cents = trigger_cents + 1 "
                   "WHERE state = 'hit'")
    assert any("does not match its commitment" in p for p in system.verify())


def test_631c_6_c_1_a_wager_below_the_mystery_minimum_does_not_contribute(store: Store) -> None:
    # Configuration A-$5 needs $5; a $5 Heavenly 9 wager qualifies, the meter takes 1%.
    system = ProgressiveSystem(config(HEAVENLY_9_MYSTERY), store,
                               randbelow=lambda n: n - 1)
    _lock(system, [1], 1)
    mystery = next(m for m in system.meters() if m["level"] == "mystery")
    assert mystery["amount_cents"] == 10_005 and mystery["wagers_count"] == 1


def test_a_meter_adjusted_past_its_trigger_still_hits(store: Store) -> None:
    system = _system(store, [0, 10_000])  # trigger at the $100 minimum
    system.adjust_meter("prog", "mystery", 500, supervisor="Dana Floor", reason="test fund")
    (award,) = _lock(system, [9], 1).awards
    assert (award.seat, award.amount_cents) == (9, 10_600)
    assert system.verify() == []
