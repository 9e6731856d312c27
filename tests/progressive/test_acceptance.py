"""Which progressive wagers exist: sensor at the lock-out + base wager + minimum (pure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.progressive.core import (
    REFUSED_BELOW_MINIMUM, REFUSED_NO_BASE_WAGER, REFUSED_NOT_DENOMINATION, REFUSED_NOT_ON_SENSOR,
    REFUSED_UNAVAILABLE,
    accept_progressive_wagers, betting_leds,
)
from drivers.protocols import LedState, LockedOut
from tests.progressive.conftest import HARMONY, HEAVENLY_9, ROYAL_9, base, config


def _locked(*seats: int, cause: str = "button") -> LockedOut:
    return LockedOut(cause, 100.0, frozenset(seats))


def test_631c_2_d_2_only_sensor_seats_at_the_lock_are_wagers() -> None:
    spec = config(HEAVENLY_9).progressives[0]
    result = accept_progressive_wagers(_locked(1, 3), base([1, 2, 3]), spec, 14)
    assert result.accepted_seats == {1, 3}
    assert result.leds[1] is LedState.LOCKED and result.leds[2] is LedState.OFF
    assert result.total_cents == 1000


def test_631c_2_a_a_progressive_wager_needs_a_baccarat_wager() -> None:
    spec = config(HEAVENLY_9).progressives[0]
    result = accept_progressive_wagers(_locked(1, 2), base([1]) + base([2], "dragon_bonus"),
                                       spec, 14)
    assert result.accepted_seats == {1}
    assert [(r.seat, r.reason) for r in result.refused] == [(2, REFUSED_NO_BASE_WAGER)]


@pytest.mark.parametrize("wager", ["banker", "player", "tie"])
def test_631a_8_a_each_main_wager_qualifies(wager: str) -> None:
    spec = config(HEAVENLY_9).progressives[0]
    assert accept_progressive_wagers(_locked(4), base([4], wager), spec, 14).accepted_seats == {4}


def test_631c_2_c_minimum_five_dollars_when_an_amount_is_entered() -> None:
    spec = config(HEAVENLY_9).progressives[0]
    wagers = base([1, 2]) + [{"seat": 1, "wager": "heavenly_9_progressive", "amount_cents": 400},
                             {"seat": 2, "wager": "heavenly_9_progressive", "amount_cents": 2500}]
    result = accept_progressive_wagers(_locked(1, 2), wagers, spec, 14)
    assert [(w.seat, w.amount_cents) for w in result.accepted] == [(2, 2500)]
    assert result.refused[0].reason.startswith(REFUSED_BELOW_MINIMUM)


def test_an_entered_wager_without_the_sensor_is_refused() -> None:
    spec = config(HEAVENLY_9).progressives[0]
    wagers = base([5]) + [{"seat": 5, "wager": "heavenly_9_progressive", "amount_cents": 500}]
    result = accept_progressive_wagers(_locked(), wagers, spec, 14)
    assert not result.accepted and result.refused[0].reason == REFUSED_NOT_ON_SENSOR


def test_627b_3_a_2_royal_9_locks_at_the_first_card() -> None:
    spec = config(ROYAL_9).progressives[0]
    result = accept_progressive_wagers(_locked(2, 9, cause="first-card"), base([2, 9], "player"),
                                       spec, 14)
    assert [(w.seat, w.amount_cents) for w in result.accepted] == [(2, 500), (9, 500)]


def test_627b_6_a_harmony_rides_on_a_minibaccarat_wager() -> None:
    spec = config(HARMONY).progressives[0]
    result = accept_progressive_wagers(_locked(1, 2), base([1], "tie"), spec, 14)
    assert result.accepted_seats == {1}


def test_unavailable_refuses_every_sensor_seat_and_shows_unavailable() -> None:
    spec = config(HEAVENLY_9).progressives[0]
    result = accept_progressive_wagers(_locked(1, 2), base([1, 2]), spec, 14,
                                       unavailable_reason="link down")
    assert not result.accepted
    assert all(r.reason == f"{REFUSED_UNAVAILABLE}: link down" for r in result.refused)
    assert set(result.leds.values()) == {LedState.UNAVAILABLE}
    assert set(betting_leds(14, "link down").values()) == {LedState.UNAVAILABLE}
    assert set(betting_leds(14, None).values()) == {LedState.AWAITING}


def test_627b_3_f_a_royal_9_wager_other_than_its_denomination_is_refused(tmp_path: Path) -> None:
    """docs/progressive.md, "Which wagers count": Royal 9 takes exactly its denomination; a
    $10 entered on the $5 wager's spot is refused and feeds no meter."""
    from controller.memory.store import Store
    from controller.progressive.system import ProgressiveSystem

    cfg = config(ROYAL_9)
    wagers = base([1, 2], "player") + [
        {"seat": 1, "wager": "royal_9_progressive", "amount_cents": 1000}]
    result = accept_progressive_wagers(_locked(1, 2), wagers, cfg.progressives[0], 14)
    assert [(w.seat, w.amount_cents) for w in result.accepted] == [(2, 500)]
    assert [(r.seat, r.reason) for r in result.refused] == [
        (1, f"{REFUSED_NOT_DENOMINATION} (1000 cents, not 500; 627b.3(f)-(g))")]
    assert result.leds[1] is LedState.OFF and result.leds[2] is LedState.LOCKED
    store = Store(tmp_path / "table.sqlite")
    try:
        system = ProgressiveSystem(cfg, store)
        system.on_lock(_locked(1, 2), wagers, 1)
        meters = {m["level"]: (m["amount_cents"], m["sub_cent"], m["wagers_cents"])
                  for m in system.meters()}
        # Only seat 2's 500 cents: 2% to the Mega, 1.5% (7.5 cents) to the Major and Minor.
        assert meters == {"mega": (5_000_010, "0", 500), "major": (45_007, "1/2", 500),
                          "minor": (45_007, "1/2", 500)}
        assert system.verify() == []
        system.close()
    finally:
        store.close()
