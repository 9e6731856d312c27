"""Faults a technician meets, injected into the simulated devices while the daemon plays.

Each runs through the daemon process and the real links: the table must stop
with a fault that names the device and what to do, settle nothing from
incomplete data, and recover by itself when the device does.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hil.oracle import check_round
from hil.table_harness import TableHarness

pytestmark = [pytest.mark.hil, pytest.mark.timeout(300)]

CONFIG = Path(__file__).parents[1] / "config" / "simulated-table.toml"
SUPERVISOR = {"supervisor": "floor", "pin": "2468"}  # config/simulated-table.toml


def rounds_settled(n: int):
    return lambda result: len([r for r in result.rounds if not r.get("simulated")]) >= n


def run(coro):
    return asyncio.run(coro)


def test_shoe_unplugged_between_rounds_stops_then_resumes_by_itself(tmp_path):
    async def scenario():
        async with TableHarness(CONFIG, tmp_path, seed=5) as table:
            await table.play(until=rounds_settled(2))
            await table.wait_for_state("betting_open")
            await table.shoe.unplug()
            status = await table.wait_for_state("device_fault")
            await table.shoe.replug()
            resumed = await table.wait_for_state("betting_open")
            await table.resync()
            await table.play(until=rounds_settled(5))
            stored = await table.call("rounds", limit=100)
            return status, resumed, stored

    status, resumed, stored = run(scenario())
    assert status["fault"]["device"] == "shoe"
    assert status["fault"]["action"]  # says what to do
    assert resumed["fault"] is None
    assert all(check_round(r) == [] for r in stored)
    assert len([r for r in stored if r["state"] == "settled"]) >= 5


def test_garbage_on_the_shoe_line_is_counted_and_play_goes_on(tmp_path):
    async def scenario():
        async with TableHarness(CONFIG, tmp_path, seed=6) as table:
            await table.play(until=rounds_settled(1))
            table.shoe.garbage(bytes(range(1, 200)) + b"\x00\xff\x00")
            await table.play(until=rounds_settled(4))
            devices = {d["device"]: d for d in await table.call("devices")}
            return devices, await table.call("status"), await table.call("rounds", limit=100)

    devices, status, stored = run(scenario())
    counters = devices["shoe"]["counters"]
    assert sum(v for k, v in counters.items() if "crc" in k or "resync" in k or "bad" in k) > 0
    assert status["fault"] is None
    assert all(check_round(r) == [] for r in stored)


def test_a_misread_card_voids_the_round_after_the_supervisor_rules(tmp_path):
    async def scenario():
        async with TableHarness(CONFIG, tmp_path, seed=7) as table:
            await table.play(until=rounds_settled(1))
            await table.wait_for_state("betting_open")
            await table.call("place_wager", seat=3, wager="banker", amount_cents=2500)
            await table.call("no_more_bets")
            await table.shoe.draw()
            table.shoe.misread_next()
            await table.shoe.draw()
            fault = await table.wait_for_state("device_fault")
            with pytest.raises(Exception, match="needs a floor supervisor"):
                await table.call("acknowledge_fault")
            await table.client.call("acknowledge_fault", auth=SUPERVISOR)
            after = await table.wait_for_state("end_of_shoe")
            return fault, after, (await table.call("rounds", limit=2))[-1]

    fault, after, voided = run(scenario())
    assert fault["fault"]["code"] == "shoe_misread"
    assert "not read" in fault["fault"]["action"]
    assert voided["state"] == "void"
    assert voided["settlements"][-1]["net_cents"] == 0
    assert after["fault"] is None


def test_a_card_found_face_up_opens_a_simulated_round_631a_15_d(tmp_path):
    async def scenario():
        async with TableHarness(CONFIG, tmp_path, seed=8) as table:
            await table.play(until=rounds_settled(1))
            await table.wait_for_state("betting_open")
            await table.call("place_wager", seat=1, wager="player", amount_cents=1000)
            table.shoe.face_up_next()
            await table.shoe.draw()
            await table.resync()
            await table.play(until=lambda r: any(x.get("simulated") for x in r.rounds))
            await table.wait_for_state("betting_open")
            return await table.call("status"), await table.call("rounds", limit=3)

    status, stored = run(scenario())
    simulated = [r for r in stored if r["simulated"]]
    assert len(simulated) == 1 and simulated[0]["wagers"] == []
    # The player's wager waits on the layout for the next live round.
    assert status["round"]["wagers"] == [{"seat": 1, "wager": "player", "amount_cents": 1000}]
