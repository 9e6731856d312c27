"""605a.7 meters: exact increments with the sub-cent carried, never lowered except by an award
or an audited adjustment, every change logged and recomputable (verify_meters)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from controller.progressive.errors import MeterError
from controller.progressive.ledger import INCREMENT, MeterLedger, verify_meters
from controller.progressive.system import ProgressiveSystem
from controller.memory.store import Store
from drivers.protocols import LockedOut
from tests.progressive.conftest import HARMONY, HEAVENLY_9, ROYAL_9, base, config


def _lock(system: ProgressiveSystem, seats: list[int], round_id: int, cents: int | None = None,
          key: str = "heavenly_9_progressive") -> None:
    wagers = base(seats)
    if cents is not None:
        wagers += [{"seat": s, "wager": key, "amount_cents": cents} for s in seats]
    system.on_lock(LockedOut("button", float(round_id), frozenset(seats)), wagers, round_id)


def _meter(system: ProgressiveSystem, level: str = "progressive") -> dict:
    return next(m for m in system.meters() if m["level"] == level)


def test_631c_2_i_seed_and_ten_percent_increment(store: Store) -> None:
    system = ProgressiveSystem(config(HEAVENLY_9), store)
    assert _meter(system)["amount_cents"] == 1_000_000  # 631c.2(i): $10,000 seed
    _lock(system, [1, 2, 3], 1)
    assert _meter(system)["amount_cents"] == 1_000_150  # 3 x 10% of $5
    assert _meter(system)["wagers_count"] == 3 and _meter(system)["wagers_cents"] == 1500
    assert system.verify() == []


def test_fractional_cents_are_carried_exactly(store: Store) -> None:
    # 627b.6(j) paytable B: 19% of a 3-cent wager is 0.57 cents; 100 such wagers are 57 cents.
    system = ProgressiveSystem(config({**HARMONY, "wager_cents": 3}), store)
    for round_id in range(1, 101):
        _lock(system, [1], round_id)
    meter = _meter(system)
    assert meter["amount_cents"] == 500_000 + 57 and meter["sub_cent"] == "0"
    reserve = _meter(system, "reserve")  # 5% of 3 cents x 100 = 15 cents
    assert reserve["amount_cents"] == 15
    assert system.verify() == []


def test_sub_cent_remainder_survives_between_rounds(store: Store) -> None:
    system = ProgressiveSystem(config({**HARMONY, "wager_cents": 7}), store)
    _lock(system, [1], 1)  # 19% of 7 = 1.33 cents
    meter = _meter(system)
    assert (meter["amount_cents"], Fraction(meter["sub_cent"])) == (500_001, Fraction(33, 100))


def test_royal_9_each_level_has_its_own_rate(store: Store) -> None:
    system = ProgressiveSystem(config(ROYAL_9), store)
    _lock(system, [1, 2], 1)
    amounts = {m["level"]: (m["amount_cents"], Fraction(m["sub_cent"])) for m in system.meters()}
    # 2% and 1.5% of two $5 wagers: 20 cents and 15 cents.
    assert amounts == {"mega": (5_000_020, 0), "major": (45_015, 0), "minor": (45_015, 0)}
    assert _meter(system, "mega")["personal_combinations"][1] == "KC9C"


def test_a_meter_never_decreases_except_by_award_or_adjustment(store: Store) -> None:
    system = ProgressiveSystem(config(HEAVENLY_9), store)
    with pytest.raises(MeterError, match="only an award or an audited adjustment"):
        with store.transaction():
            system.ledger.change("prog", "progressive", Fraction(-1), INCREMENT)
    with pytest.raises(MeterError, match="supervisor"):
        system.adjust_meter("prog", "progressive", -100, supervisor="", reason="typo")
    after = system.adjust_meter("prog", "progressive", -100, supervisor="Dana Floor",
                                reason="meter test at installation")
    assert after["amount_cents"] == 999_900 and after["adjustments_cents"] == -100
    adjustment = store.events(kind="progressive_meter")[-1]
    assert adjustment.payload["supervisor"] == "Dana Floor"
    assert system.verify() == []


def test_verify_names_a_meter_edited_outside_the_ledger(store: Store) -> None:
    system = ProgressiveSystem(config(HEAVENLY_9), store)
    _lock(system, [1], 1)
    with store.transaction() as db:
        db.execute("UPDATE progressive_meters SET amount_cents = amount_cents + 500")
    problems = verify_meters(store)
    assert any("prog/progressive" in p and "1000550" in p for p in problems), problems


def test_verify_names_a_logged_decrease(store: Store) -> None:
    system = ProgressiveSystem(config(HEAVENLY_9), store)
    with store.transaction():
        store.append_entry("progressive_meter", {
            "progressive": "prog", "level": "progressive", "change": "increment",
            "delta_num": -5, "delta_den": 1, "amount_cents": 0, "frac_num": 0, "frac_den": 1,
            "version": 99})
    assert any("lowers it" in p for p in system.verify())


def test_every_change_is_one_transaction_with_its_log_entry(store: Store) -> None:
    system = ProgressiveSystem(config(HEAVENLY_9), store)
    before = len(store.events())
    with pytest.raises(RuntimeError):
        with store.transaction():
            _lock(system, [1, 2], 1)
            raise RuntimeError("power cut before the commit")
    assert len(store.events()) == before
    assert _meter(system)["amount_cents"] == 1_000_000
    assert system.verify() == []


def test_meters_survive_reopening_the_store(tmp_path) -> None:
    path = tmp_path / "t.sqlite"
    first = Store(path)
    _lock(ProgressiveSystem(config(HEAVENLY_9), first), [1], 1)
    first.close()
    again = Store(path)
    system = ProgressiveSystem(config(HEAVENLY_9), again)
    assert _meter(system)["amount_cents"] == 1_000_050  # seeded once, not twice
    row = MeterLedger(again).meter("prog", "progressive")
    assert row is not None and row.version == 2
    assert system.verify() == []
    again.close()


def test_a_replayed_lock_books_nothing_twice(store: Store) -> None:
    system = ProgressiveSystem(config(HEAVENLY_9), store)
    _lock(system, [1, 2], 7)
    again = system.on_lock(LockedOut("button", 7.0, frozenset({1, 2})), base([1, 2]), 7)
    assert again.accepted_seats == {1, 2}
    assert _meter(system)["amount_cents"] == 1_000_100


def test_627b_3_h_royal_9_mystery_configuration_two(store: Store) -> None:
    # 627b.3(h) configuration 2: reseed $100, must hit by $500, 5%.
    system = ProgressiveSystem(config({**ROYAL_9, "mystery": 2}), store, randbelow=lambda n: n - 1)
    _lock(system, [1, 2], 1)
    mystery = _meter(system, "mystery")
    assert mystery["trigger_range_cents"] == [10_000, 50_000]
    assert mystery["amount_cents"] == 10_000 + 50  # 5% of two $5 wagers
    assert system.verify() == []


def test_display_amounts_feed_the_progressive_display(store: Store) -> None:
    system = ProgressiveSystem(config(ROYAL_9), store)
    assert system.display_amounts() == {"prog/mega": 5_000_000, "prog/major": 45_000,
                                        "prog/minor": 45_000}
