"""A HIL-like night at a Heavenly 9 + Mystery table, driven through the facade.

Shoes are dealt by the rules engine; at every round players drop and lift
progressive chips at random instants and the dealer locks at a random instant,
so only the chips on the sensors at the lock count (631c.2(d)(2)). After every
round each meter must equal its reset plus the accepted contributions minus
the awards plus the reseeds, to the cent and sub-cent, computed here by an
independent model; and so after a power cut in the middle of a lock-out.
"""

from __future__ import annotations

import contextlib
import random
import sqlite3
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

from controller.progressive.ledger import PENDING
from controller.progressive.system import ProgressiveSystem
from controller.memory.store import Store
from drivers.protocols import LockedOut
from tests.progressive.conftest import HEAVENLY_9_MYSTERY, Shoe, config, view

SEATS = 14
ROUNDS = 120  # about one and a half eight-deck shoes
CARDS_TO_FINISH_A_COUP = 6  # a coup takes at most six cards (631a.9-631a.11)
SUITED_NINES = view("2S 3S 4S", "AS 4S 4S")  # forced now and then: the meter line is rare
BETTING_WINDOW_S = 30.0  # simulated seconds between "place your bets" and the latest lock
H9_RATE, MYSTERY_RATE = Fraction(10, 100), Fraction(1, 100)  # 631c.2(i), 631c.6(c)(4) A-$5


@dataclass
class Model:
    """What the meters must be, kept independently of the ledger."""

    progressive: Fraction = Fraction(1_000_000)
    mystery: Fraction = Fraction(10_000)
    paid: list[int] = field(default_factory=list)


def _round_inputs(rng: random.Random) -> tuple[LockedOut, list[dict], set[int]]:
    lock_at = rng.uniform(0, BETTING_WINDOW_S)
    on_sensor: set[int] = set()
    for seat in range(1, SEATS + 1):
        if rng.random() < 0.5:
            placed = rng.uniform(0, BETTING_WINDOW_S)
            lifted = rng.uniform(placed, BETTING_WINDOW_S * 1.5) if rng.random() < 0.2 else None
            # Present at the lock only if placed before it and not lifted before it; a chip
            # placed after the lock is a LateSensorChange the table never passes on.
            if placed < lock_at and (lifted is None or lifted > lock_at):
                on_sensor.add(seat)
    wagers = [{"seat": s, "wager": rng.choice(["banker", "player", "tie"]), "amount_cents": 2500}
              for s in range(1, SEATS + 1) if rng.random() < 0.8]
    with_base = {w["seat"] for w in wagers}
    return LockedOut("button", lock_at, frozenset(on_sensor)), wagers, on_sensor & with_base


def _check(system: ProgressiveSystem, model: Model) -> None:
    meters = {m["level"]: m for m in system.meters()}
    for level, expected in (("progressive", model.progressive), ("mystery", model.mystery)):
        got = meters[level]["amount_cents"] + Fraction(meters[level]["sub_cent"])
        assert got == expected, (level, got, expected)
    assert system.verify() == []


def _apply(model: Model, system: ProgressiveSystem, round_id: int, accepted: set[int],
           acceptance_awards: tuple, round_view) -> None:
    for seat in sorted(accepted):  # 631c.6(c)(3): contributions in seat order
        model.progressive += H9_RATE * 500
        model.mystery += MYSTERY_RATE * 500
        hit = next((a for a in acceptance_awards if a.seat == seat), None)
        if hit is not None:
            assert hit.amount_cents == int(model.mystery)  # 631c.6(c)(7): 100% of the meter
            model.mystery += 10_000 - hit.amount_cents  # 631c.6(c)(5)(iv): reset to $100
            model.paid.append(hit.amount_cents)
    awards = system.on_round_result(round_id, round_view, [])
    for award in (a for a in awards if a.level == "progressive"):
        assert award.amount_cents == int(model.progressive)
        model.progressive += 1_000_000 - award.amount_cents  # 631c.2(i) reseed
        model.paid.append(award.amount_cents)
    for award in awards:
        if award.state == PENDING:
            system.validate_award(award.award_id, "Dana Floor")


def _draws(rng: random.Random):
    return lambda n: rng.randrange(n)


def test_hil_like_night_with_a_power_cut(tmp_path: Path) -> None:
    rng = random.Random(20261121)
    path = tmp_path / "table.sqlite"
    store = Store(path)
    cfg = config(HEAVENLY_9_MYSTERY)
    system = ProgressiveSystem(cfg, store, randbelow=_draws(rng))
    model = Model()
    shoe = Shoe(rng)
    crash_round = ROUNDS // 2
    round_id = 0
    while round_id < ROUNDS:
        round_id += 1
        system.open_betting()
        locked, wagers, expected = _round_inputs(rng)
        if round_id == crash_round:
            # Power cut inside the lock-out transaction: nothing of it may survive.
            transaction = store.transaction()
            transaction.__enter__()
            system.on_lock(locked, wagers, round_id)
            store.close()
            with contextlib.suppress(sqlite3.ProgrammingError):  # the step, abandoned:
                cut = SystemExit("power cut")  # the dead connection cannot roll back: the file does
                transaction.__exit__(SystemExit, cut, None)
            store = Store(path)
            system = ProgressiveSystem(cfg, store, randbelow=_draws(rng))
            assert system.recover() == []
            _check(system, model)
        acceptance = system.on_lock(locked, wagers, round_id)
        assert acceptance.accepted_seats == expected
        if len(shoe.cards) < CARDS_TO_FINISH_A_COUP:
            shoe = Shoe(rng)  # the next shoe
        round_view = SUITED_NINES if rng.random() < 0.05 else shoe.coup()
        _apply(model, system, round_id, expected, acceptance.awards, round_view)
        _check(system, model)
    assert model.paid, "the night should have produced at least one award"
    meters = {m["level"]: m for m in system.meters()}
    assert meters["mystery"]["awards_count"] + meters["progressive"]["awards_count"] == \
        len(model.paid)
    store.verify_chain()
    store.close()
