"""Issue 7's HIL scenario: Heavenly 9 progressive wagers from the seat sensors, through the daemon.

The harness puts chips on seat sensors and presses the lock-out at random
instants among them (through the GPIO bridge into the daemon's mock pins);
only chips placed before the lock, at seats holding a base wager, may count.
Meters are checked against the test's own arithmetic (631c.2(i): $10,000 reset,
10% of each wager; 631c.6(c)(4) mystery A, $5: $100 reset, 1%), after SIGKILL
restarts too, and a forced jackpot is paid once, after a supervisor validates.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest

from controller.control import ControlError
from cards import Card
from hil.table_harness import PlayerPlan, PowerCuts, TableHarness

pytestmark = [pytest.mark.hil, pytest.mark.timeout(600)]

CONFIG = Path(__file__).parents[1] / "config" / "progressive-heavenly9-mystery.toml"
SUPERVISOR = {"supervisor": "floor", "pin": "2468"}
WAGER_CENTS = 500  # [progressive.heavenly9] wager_cents; 631c.2(c): at least $5
RESET_CENTS, RATE_PERCENT = 1_000_000, 10  # 631c.2(i)
MYSTERY_RESET_CENTS, MYSTERY_RATE_PERCENT = 10_000, 1  # 631c.6(c)(4), configuration A, $5
PLAYERS = PlayerPlan(seats=(1, 2, 4, 6, 8, 10), progressive=0.6, progressive_without_base=(9,))
# A suited three-card 9 tie (631c.2(g)(1)): Player A♠ 2♠ 6♠ = 9; Banker A♠ 3♠ = 4 draws on
# the Player's 6 (631a.11, Table 1 row 4, column 6) and takes 5♠ = 9.
SUITED_NINE_TIE = [Card.parse(c) for c in ("A♠", "A♠", "2♠", "3♠", "6♠", "5♠")]


def accepted_sets(events) -> list[frozenset[int]]:
    return [frozenset(w["seat"] for w in e["payload"]["accepted"])
            for e in events if e["kind"] == "progressive_accepted"]


def chattering_at_each_lock(events) -> list[frozenset[int]]:
    """Seats whose sensor the panel had disabled for chatter when each round locked.

    The simulated table deals a round every few tenths of a second, so a chip going
    on and off every round trips the panel's chatter rule (drivers/seats.py); such a
    seat's chips are refused, correctly, until its sensor is quiet again.
    """
    chattering: set[int] = set()
    at_lock = []
    for e in events:
        code = e["payload"].get("code", "")
        if e["kind"] == "device_fault" and code.startswith("seat_sensor_chatter:"):
            chattering.add(int(code.rsplit(":", 1)[1]))
        elif e["kind"] == "device_fault_cleared" and code.startswith("seat_sensor_chatter:"):
            chattering.discard(int(code.rsplit(":", 1)[1]))
        elif e["kind"] == "progressive_accepted":
            at_lock.append(frozenset(chattering))
    return at_lock


def meter(meters, level: str) -> dict:
    return next(m for m in meters if m["level"] == level)


def mystery_hits(events) -> int:
    return sum(1 for e in events if e["kind"] == "prompt" and e["payload"]["action"] == "jackpot"
               and e["payload"]["level"] == "mystery")


def test_only_pre_lock_chips_count_and_meters_add_up_631c_2_d_2(tmp_path):
    async def scenario():
        async with TableHarness(CONFIG, tmp_path, seed=17, players=PLAYERS) as table:
            await table.play(until=lambda r: len(r.rounds) >= 25)
            return table.result, await table.call("meters"), await table.call("status")

    result, meters, status = asyncio.run(scenario())
    accepted = accepted_sets(result.events)
    # The daemon accepted exactly the chips that went on before the lock, round by round.
    expected = [pressed - chatter for pressed, chatter in
                zip(result.progressive_expected, chattering_at_each_lock(result.events))]
    assert accepted == expected
    assert result.sensor_presses_after_lock > 0  # the race really happened
    assert any(e["kind"] == "late_sensor_change" for e in result.events)
    assert all(9 not in seats for seats in accepted)  # no base wager, no progressive wager
    wagers = sum(len(seats) for seats in accepted)
    assert wagers > 10
    main = meter(meters, "progressive")
    assert main["amount_cents"] == RESET_CENTS + wagers * WAGER_CENTS * RATE_PERCENT // 100
    assert main["wagers_count"] == wagers
    if mystery_hits(result.events) == 0:
        assert meter(meters, "mystery")["amount_cents"] == (
            MYSTERY_RESET_CENTS + wagers * WAGER_CENTS * MYSTERY_RATE_PERCENT // 100)
    assert status["out_of_order"] is None


def test_a_forced_jackpot_is_paid_once_after_the_supervisor_validates_631c_6_c_5(tmp_path):
    async def scenario():
        async with TableHarness(CONFIG, tmp_path, seed=23,
                                players=PlayerPlan(seats=(1, 3), progressive=0.0)) as table:
            await table.play(until=lambda r: len(r.rounds) >= 2)
            await table.wait_for_state("betting_open")
            before = meter(await table.call("meters"), "progressive")["amount_cents"]
            await table.call("place_wager", seat=4, wager="tie", amount_cents=500)
            table.pins.press(3)  # seat 2's sensor: no base wager, refused
            table.pins.press(5)  # seat 4's sensor
            table._press_lockout()
            table.pins.release(3)
            table.pins.release(5)
            table.shoe.insert_next(SUITED_NINE_TIE)
            await table.resync()
            await table.play(until=lambda r: any(
                e["kind"] == "prompt" and e["payload"]["action"] == "jackpot"
                for e in r.events))
            awards = await table.call("awards")
            with pytest.raises(ControlError, match="needs a floor supervisor"):
                await table.call("validate_award", award_id=awards[0]["award_id"])
            with pytest.raises(ControlError, match="needs a floor supervisor"):
                await table.client.call("validate_award", auth={**SUPERVISOR, "pin": "1111"},
                                        award_id=awards[0]["award_id"])
            paid = await table.client.call("validate_award", auth=SUPERVISOR,
                                           award_id=awards[0]["award_id"])
            with pytest.raises(ControlError, match="not awaiting validation: it was paid"):
                await table.client.call("validate_award", auth=SUPERVISOR,
                                        award_id=awards[0]["award_id"])
            after = meter(await table.call("meters"), "progressive")
            log = await table.call("events", limit=100_000)
            return before, awards, paid, after, log

    before, awards, paid, after, log = asyncio.run(scenario())
    (award,) = awards
    # The hit round's own contribution went on the meter before the result (631c.2(i)).
    assert award["seat"] == 4
    assert award["amount_cents"] == before + WAGER_CENTS * RATE_PERCENT // 100
    assert (paid["state"], paid["validated_by"]) == ("paid", "floor")
    assert after["amount_cents"] == RESET_CENTS  # reset at the hit
    assert after["awards_count"] == 1 and after["cumulative_paid_cents"] == award["amount_cents"]
    assert [e["payload"]["supervisor"] for e in log if e["kind"] == "jackpot_validated"] == [
        "floor"]


def test_meters_survive_power_cuts_to_the_cent(tmp_path):
    tallies: list[tuple[int, int]] = []

    async def check(table: TableHarness) -> None:
        status = await table.call("status")
        assert status["state"] != "out_of_order", status["out_of_order"]  # verify() passed
        events = await table.call("events", limit=100_000)
        wagers = sum(len(s) for s in accepted_sets(events))
        amount = meter(await table.call("meters"), "progressive")["amount_cents"]
        assert amount == RESET_CENTS + wagers * WAGER_CENTS * RATE_PERCENT // 100
        tallies.append((wagers, amount))

    cuts = PowerCuts(random.Random(77), rate=0.08, limit=8, checks=[check])

    async def scenario():
        async with TableHarness(CONFIG, tmp_path, seed=29, players=PLAYERS) as table:
            while cuts.done < cuts.limit:
                await table.play(shoes=1, power_cuts=cuts)
            await check(table)

    asyncio.run(scenario())
    assert len(tallies) == cuts.limit + 1
    assert tallies[-1][0] > 0
