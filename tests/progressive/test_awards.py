"""Awards (631c.6(c)(5)): win light, supervisor validation, payment, reset; several hits in one
round in the documented order; an award interrupted by a crash completes exactly once."""

from __future__ import annotations

import pytest

from controller.progressive.errors import AwardError
from controller.progressive.ledger import PAID, PENDING, VALIDATED
from controller.progressive.system import ProgressiveSystem
from controller.memory.store import Store
from drivers.protocols import LockedOut
from tests.progressive.conftest import HARMONY, HEAVENLY_9, ROYAL_9, base, config, view

SUITED_NINES = view("2S 3S 4S", "AS 4S 4S")  # 631c.2(g)(1): 3-card 9 tie, all spades
BANKER_NINE = view("2S 3H", "AS 4S 4D")  # 631c.2(g)(4): a fixed line, not the meter


class Lights:
    def __init__(self) -> None:
        self.calls: list[tuple[int, bool]] = []

    def __call__(self, seat: int, on: bool) -> None:
        self.calls.append((seat, on))


def _play(system: ProgressiveSystem, seats: list[int], round_id: int, round_view, key="banker"):
    system.on_lock(LockedOut("button", 0.0, frozenset(seats)), base(seats, key), round_id)
    return system.on_round_result(round_id, round_view, [])


def _meter(system: ProgressiveSystem, level: str = "progressive") -> dict:
    return next(m for m in system.meters() if m["level"] == level)


def test_631c_2_g_1_suited_tie_pays_the_meter_and_lights_the_seat(store: Store) -> None:
    lights = Lights()
    system = ProgressiveSystem(config(HEAVENLY_9), store, win_light=lights)
    (award,) = _play(system, [4], 1, SUITED_NINES)
    assert (award.seat, award.amount_cents, award.state) == (4, 1_000_050, PENDING)
    assert lights.calls == [(4, True)]  # 631c.6(c)(5)(i)
    assert _meter(system)["amount_cents"] == 1_000_000  # reset at the hit: 631c.2(i) reseed
    assert _meter(system)["pending_awards_cents"] == 1_000_050
    paid = system.validate_award(award.award_id, "Dana Floor")  # 631c.6(c)(5)(ii)-(iii)
    assert (paid.state, paid.validated_by, paid.paid_via) == (PAID, "Dana Floor", "table-inventory")
    assert lights.calls[-1] == (4, False)
    meter = _meter(system)
    assert (meter["awards_count"], meter["cumulative_paid_cents"], meter["paid_by_system_cents"],
            meter["paid_by_attendant_cents"]) == (1, 1_000_050, 1_000_050, 0)
    assert system.verify() == []


def test_a_fixed_line_creates_no_award(store: Store) -> None:
    system = ProgressiveSystem(config(HEAVENLY_9), store)
    assert _play(system, [1], 1, BANKER_NINE) == []


def test_two_meter_hits_in_one_round_highest_seat_first_then_the_reset_meter(store: Store) -> None:
    system = ProgressiveSystem(config({**HEAVENLY_9, "payment": "jackpot-slip"}), store)
    awards = _play(system, [2, 7], 1, SUITED_NINES)
    # docs/progressive.md: highest seat first (631a.12's order); the next winner gets the meter
    # as reset by the first award.
    assert [(a.seat, a.amount_cents, a.pay_order) for a in awards] == [
        (7, 1_000_100, 1), (2, 1_000_000, 2)]
    for award in awards:
        system.validate_award(award.award_id, "Dana Floor")
    meter = _meter(system)
    assert meter["paid_by_attendant_cents"] == 2_000_100 and meter["awards_count"] == 2
    assert system.verify() == []


def test_validation_needs_a_supervisor(store: Store) -> None:
    system = ProgressiveSystem(config(HEAVENLY_9), store)
    (award,) = _play(system, [1], 1, SUITED_NINES)
    with pytest.raises(AwardError, match="631c.6"):
        system.validate_award(award.award_id, "  ")
    with pytest.raises(AwardError, match="does not exist"):
        system.validate_award(999, "Dana Floor")


def test_result_replayed_after_a_crash_pays_nothing_twice(store: Store) -> None:
    system = ProgressiveSystem(config(HEAVENLY_9), store)
    first = _play(system, [1], 1, SUITED_NINES)
    again = system.on_round_result(1, SUITED_NINES, [])
    assert [a.award_id for a in again] == [a.award_id for a in first]
    assert _meter(system)["awards_count"] == 1


def test_an_award_interrupted_after_validation_is_paid_once_after_restart(tmp_path) -> None:
    path = tmp_path / "t.sqlite"
    store = Store(path)
    system = ProgressiveSystem(config(HEAVENLY_9), store)
    (award,) = _play(system, [3], 1, SUITED_NINES)
    with store.transaction():  # the validation step committed, then the power went
        system.ledger.advance_award(award.award_id, VALIDATED, supervisor="Dana Floor")
    store.close()
    store = Store(path)
    lights = Lights()
    system = ProgressiveSystem(config(HEAVENLY_9), store, win_light=lights)
    assert system.recover() == []
    assert system.ledger.award(award.award_id).state == PAID
    assert system.recover() == []
    again = system.validate_award(award.award_id, "Dana Floor")
    assert again.state == PAID and _meter(system)["paid_by_system_cents"] == 1_000_050
    assert len([e for e in store.events(kind="progressive_award")
                if e.payload["state"] == PAID]) == 1
    assert system.verify() == []
    store.close()


def test_a_pending_award_is_relit_after_restart(tmp_path) -> None:
    path = tmp_path / "t.sqlite"
    store = Store(path)
    (award,) = _play(ProgressiveSystem(config(HEAVENLY_9), store), [6], 1, SUITED_NINES)
    store.close()
    store = Store(path)
    lights = Lights()
    system = ProgressiveSystem(config(HEAVENLY_9), store, win_light=lights)
    assert [a.award_id for a in system.recover()] == [award.award_id]
    assert lights.calls == [(6, True)]
    store.close()


def test_627b_6_harmony_six_of_a_kind_reseeds_with_the_reserve(store: Store) -> None:
    system = ProgressiveSystem(config(HARMONY), store)
    six_fives = view("5S 5H 5D", "5C 5S 5H")  # 627b.6(g)(1)
    awards = _play(system, [1, 2], 1, six_fives)
    # Paytable B, $3 wagers: 19% -> 57 cents each to the meter, 5% -> 15 cents each to the
    # reserve. Seat 2 wins the meter; seat 1 wins the reseed: the seed plus the reserve.
    assert [(a.seat, a.amount_cents) for a in awards] == [(2, 500_000 + 114), (1, 500_000 + 30)]
    assert _meter(system)["amount_cents"] == 500_000 and _meter(system, "reserve")["amount_cents"] == 0
    assert system.verify() == []


@pytest.mark.parametrize("player, banker, level", [
    ("KC 9C", "KC 9C", "mega"),  # 627b.3(e)(6)
    ("2H 3H", "9C KC", "major"),  # 627b.3(e)(7)
    ("KC 9C", "2H 3H", "minor"),  # 627b.3(e)(8)
])
def test_627b_3_personal_king_9_pays_its_level(store: Store, player: str, banker: str,
                                               level: str) -> None:
    system = ProgressiveSystem(config(ROYAL_9), store)
    system.on_lock(LockedOut("first-card", 0.0, frozenset({1, 2})), base([1, 2]), 1)
    awards = system.on_round_result(1, view(player, banker), [])
    assert [(a.seat, a.level) for a in awards] == [(1, level)]  # seat 1 holds KC9C
    reset = {"mega": 5_000_000, "major": 45_000, "minor": 45_000}[level]
    rate = {"mega": 2, "major": 1.5, "minor": 1.5}[level]
    assert awards[0].amount_cents == reset + int(2 * 500 * rate / 100)
    assert system.verify() == []


def test_631a_15_e_a_void_round_returns_the_wagers_and_keeps_the_meter(store: Store) -> None:
    system = ProgressiveSystem(config(HEAVENLY_9), store)
    system.on_lock(LockedOut("button", 0.0, frozenset({2, 5})), base([2, 5]), 1)
    assert system.on_round_void(1, "card found face up") == [(2, 500), (5, 500)]
    assert system.on_round_result(1, SUITED_NINES, []) == []  # a void round has no hits
    assert _meter(system)["amount_cents"] == 1_000_100
    assert system.verify() == []


def test_awards_and_acceptances_serialise_for_the_control_socket(store: Store) -> None:
    import json

    system = ProgressiveSystem(config(HEAVENLY_9), store)
    acceptance = system.on_lock(LockedOut("button", 0.0, frozenset({1})), base([1]), 1)
    (award,) = system.on_round_result(1, SUITED_NINES, [])
    assert json.loads(json.dumps(acceptance.as_dict()))["leds"]["1"] == "locked"
    assert json.loads(json.dumps(award.as_dict()))["amount_cents"] == 1_000_050


# Dealt P, B, P, B (627b.3(c)): the Player K♠ 9♠ is seat 1's personal King 9 (627b.3(e)(8)),
# the Banker Q♠ 9♠ a suited Royal 9: a Suited Royal 9 Tie Hand (627b.3(e)(4)) as well.
SUITED_TIE_WITH_PERSONAL_MINOR = view("KS 9S", "QS 9S")


@pytest.mark.parametrize("reading,award_at_reset", [("greater", None), ("meter", 45_007),
                                                    ("fixed", None)])
def test_627b_3_f_1_suited_tie_with_a_personal_king_9_reads_the_live_meter(
        store: Store, reading: str, award_at_reset: int | None) -> None:
    """627b.3(e)(4) and (e)(8) both hit for seat 1 (docs/rulings.md, Royal 9). With the
    default reading the Minor meter is paid once it stands at $1,500 or more, and the fixed
    $1,500 of 627b.3(f)(1) (no meter award) below it; 'meter' always pays the meter, 'fixed'
    never. Each $5 wager adds 1.5% = 7.5 cents to the Minor meter (627b.3(f)(2))."""
    cfg = config({**ROYAL_9, "personal_combinations": {"1": "KS9S"},
                  "suited_tie_personal": reading}, seats=1)
    system = ProgressiveSystem(cfg, store)
    first = _play(system, [1], 1, SUITED_TIE_WITH_PERSONAL_MINOR)
    # 45,000 + 7.5 cents: the $1,500 outranks a meter of $450.07 except under 'meter', which
    # pays its 45,007 whole cents and keeps the half cent.
    assert [a.amount_cents for a in first] == ([award_at_reset] if award_at_reset else [])
    before = _meter(system, "minor")["amount_cents"]
    system.adjust_meter("prog", "minor", 200_000 - before,
                        supervisor="Dana Floor", reason="test: the meter has grown")
    second = _play(system, [1], 2, SUITED_TIE_WITH_PERSONAL_MINOR)
    if reading == "fixed":
        assert second == []
        assert _meter(system, "minor")["amount_cents"] == 200_008  # 200,000.5 + 7.5, not paid
    else:
        # 200,000 and the half cent carried + 7.5 cents = 200,008 cents paid; the Minor
        # resets to 45,000 (docs/progressive.md).
        (award,) = second
        assert (award.seat, award.level, award.amount_cents) == (1, "minor", 200_008)
        assert _meter(system, "minor")["amount_cents"] == 45_000
    assert system.verify() == []
