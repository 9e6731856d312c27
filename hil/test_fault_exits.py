"""Issue 13's wedges, replayed through the daemon process and the simulated shuffler.

Each scenario once needed a daemon restart; each must now leave its fault by the exit
docs/faults.md gives it, with the table going on to the cut by itself.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hil.table_harness import TableHarness

pytestmark = [pytest.mark.hil, pytest.mark.timeout(300)]

CONFIG = Path(__file__).parents[1] / "config" / "simulated-table.toml"
SUPERVISOR = {"supervisor": "floor", "pin": "2468"}  # config/simulated-table.toml


async def shuffle_fault(table: TableHarness, **shuffle_args: str) -> dict:
    await table.call("open")
    await table.call("shuffle", **shuffle_args)
    return await table.wait_for_state("device_fault")


async def acknowledge(table: TableHarness) -> dict:
    """The floor supervisor's acknowledgement: what it cleared and what still holds."""
    assert table.client is not None
    return (await table.client.call("acknowledge_fault", auth=SUPERVISOR))["acknowledgement"]


@pytest.mark.parametrize("exit_", ["technician", "supervisor"])
def test_681a_3_b_a_shuffle_asked_for_the_batch_not_in_the_shuffler_has_two_exits(
        tmp_path, exit_):
    """`tablectl test shuffler --shuffle red` while the shuffler holds blue: the technician's
    re-run with blue, or the supervisor's acknowledgement (the table then shuffles the batch
    the shuffler holds), ends the fault and the table reaches the cut."""
    async def scenario():
        async with TableHarness(CONFIG, tmp_path, seed=3) as table:
            assert table.shuffler("STATUS").startswith("held=BLUE")
            fault = await shuffle_fault(table, back="red")
            if exit_ == "technician":
                await table.call("shuffle", back="blue")
                answer = None
            else:
                answer = await acknowledge(table)
            cut = await table.wait_for_state("cut")
            return fault, answer, cut

    fault, answer, cut = asyncio.run(scenario())
    assert (fault["fault"]["device"], fault["fault"]["code"]) == (
        "shuffler", "shuffler_batch_missing")
    if answer is not None:
        assert [f["code"] for f in answer["cleared"]] == ["shuffler_batch_missing"]
        assert answer["still_held"] == []
    assert cut["fault"] is None
    assert cut["batches"]["shuffled"] == "blue"


def test_681a_9_c_an_incomplete_cycle_is_acknowledged_and_the_table_reshuffles(tmp_path):
    """The field wedge: after the fault the table sat in SHUFFLING with nothing running."""
    async def scenario():
        async with TableHarness(CONFIG, tmp_path, seed=4) as table:
            table.shuffler("INCOMPLETE 30")
            fault = await shuffle_fault(table)
            answer = await acknowledge(table)
            cut = await table.wait_for_state("cut")
            return fault, answer, cut, await table.call("events", kind="prompt", limit=5)

    fault, answer, cut, prompts = asyncio.run(scenario())
    assert fault["fault"]["code"] == "shuffler_cycle_incomplete"
    assert [f["code"] for f in answer["cleared"]] == ["shuffler_cycle_incomplete"]
    assert [p["payload"]["action"] for p in prompts][-2:] == ["reshuffle", "cut"]
    assert cut["fault"] is None


def test_681a_9_c_a_jam_held_after_the_acknowledgement_says_what_clears_it(tmp_path):
    async def scenario():
        async with TableHarness(CONFIG, tmp_path, seed=5) as table:
            table.shuffler("JAM 25")
            fault = await shuffle_fault(table)
            answer = await acknowledge(table)
            still = await table.call("status")
            table.shuffler("CLEAR_JAM")
            cut = await table.wait_for_state("cut")
            return fault, answer, still, cut

    fault, answer, still, cut = asyncio.run(scenario())
    assert fault["fault"]["code"] == "shuffler_jam"
    assert answer["cleared"] == []
    assert answer["still_held"] == [{
        "device": "shuffler", "code": "shuffler_jam",
        "clears": "clear the jam (the shuffler reports it cleared), then the batch is "
                  "reshuffled (681a.9(c)); or a technician's verified shuffle"}]
    assert still["state"] == "device_fault"
    assert cut["fault"] is None
