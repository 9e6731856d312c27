"""Must-Hit-By Mystery (631c.6) clauses the compliance matrix listed without a test: paying the
bonus, the payment method the Rules Submission names, and the display feed saying it is offered."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from controller.progressive.errors import ProgressiveConfigError
from controller.progressive.ledger import PAID, PENDING
from controller.progressive.system import ProgressiveSystem
from controller.memory.store import Store
from drivers.protocols import LockedOut
from tests.progressive.conftest import HEAVENLY_9, HEAVENLY_9_MYSTERY, base, config

# Configuration A-$5 (631c.6(c)(4)): $100 minimum, 1% of each wager. With $100 wagers each
# contribution is 100 cents; a trigger offset of 50 puts the hidden trigger at $100.50.
WAGER_CENTS = 10_000
TRIGGER_OFFSET = 50


def _mystery_system(store: Store, **options: object) -> tuple[ProgressiveSystem, list]:
    offsets: Iterator[int] = iter([TRIGGER_OFFSET, 10_000])
    lights: list[tuple[int, bool]] = []
    system = ProgressiveSystem(
        config({**HEAVENLY_9_MYSTERY, "wager_cents": WAGER_CENTS, **options}), store,
        randbelow=lambda n: next(offsets), win_light=lambda seat, on: lights.append((seat, on)))
    return system, lights


def _mystery_meter(system: ProgressiveSystem) -> dict:
    return next(m for m in system.meters() if m["level"] == "mystery")


@pytest.mark.parametrize("payment,by_system,by_attendant", [
    ("table-inventory", 10_100, 0), ("jackpot-slip", 0, 10_100)])
def test_the_mystery_bonus_is_paid_once_validated_631c_6_c_5_iii_631c_6_c_6(
        store: Store, payment: str, by_system: int, by_attendant: int) -> None:
    """631c.6(c)(5)(iii): the validated bonus is paid (100% of the meter, $101.00);
    631c.6(c)(6): through the table inventory or a jackpot slip as the submission says."""
    system, lights = _mystery_system(store, payment=payment)
    (award,) = system.on_lock(LockedOut("button", 0.0, frozenset({3})), base([3], cents=2500),
                              1).awards
    assert (award.seat, award.amount_cents, award.state, award.paid_via) == \
        (3, 10_100, PENDING, None)
    assert _mystery_meter(system)["pending_awards_cents"] == 10_100
    paid = system.validate_award(award.award_id, "Dana Floor")
    assert (paid.state, paid.amount_cents, paid.validated_by, paid.paid_via) == \
        (PAID, 10_100, "Dana Floor", payment)
    meter = _mystery_meter(system)
    assert (meter["pending_awards_cents"], meter["cumulative_paid_cents"],
            meter["paid_by_system_cents"], meter["paid_by_attendant_cents"]) == \
        (0, 10_100, by_system, by_attendant)
    assert system.pending_awards() == []
    assert lights == [(3, True), (3, False)]  # lit for the dealer, off once paid
    assert system.verify() == []


def test_the_mystery_bonus_is_paid_exactly_once_631c_6_c_5_iii(store: Store) -> None:
    """631c.6(c)(5)(iii): a second validation of the same bonus pays nothing more."""
    system, _ = _mystery_system(store)
    (award,) = system.on_lock(LockedOut("button", 0.0, frozenset({5})), base([5]), 1).awards
    system.validate_award(award.award_id, "Dana Floor")
    again = system.validate_award(award.award_id, "Dana Floor")
    assert (again.state, again.amount_cents) == (PAID, 10_100)
    assert _mystery_meter(system)["cumulative_paid_cents"] == 10_100
    assert len([e for e in store.events(kind="progressive_award")
                if e.payload["state"] == PAID]) == 1


def test_the_payment_method_must_be_one_the_submission_may_name_631c_6_c_6() -> None:
    """631c.6(c)(6): table inventory (the default) or a progressive jackpot slip, nothing else."""
    assert config(HEAVENLY_9_MYSTERY).progressives[0].payment == "table-inventory"
    assert config({**HEAVENLY_9_MYSTERY, "payment": "jackpot-slip"}).progressives[0].payment == \
        "jackpot-slip"
    with pytest.raises(ProgressiveConfigError,
                       match=r"progressive\.prog\.payment = 'cash': not allowed; allowed: "
                             r"'table-inventory', 'jackpot-slip' \(631c\.6\(c\)\(6\)\)"):
        config({**HEAVENLY_9, "payment": "cash"})


def test_the_display_feed_shows_the_mystery_meter_only_when_offered_631c_6_b(
        store: Store, tmp_path) -> None:
    """631c.6(b): the progressive system's display says the Must-Hit-By Mystery bonus is
    offered: its meter is in the display feed beside the Heavenly 9 meter, and absent from a
    table without it. The hidden trigger is never shown, only the meter."""
    system, _ = _mystery_system(store)
    assert system.display_amounts() == {"prog/progressive": 1_000_000, "prog/mystery": 10_000}
    plain_store = Store(tmp_path / "plain.sqlite")
    try:
        plain = ProgressiveSystem(config(HEAVENLY_9), plain_store)
        assert plain.display_amounts() == {"prog/progressive": 1_000_000}
    finally:
        plain_store.close()
