"""The harness's pause (`TableHarness.play(until=...)`) as a test writer meets it.

A pause lands on the event its condition first holds on, noted and not acted on. When
that event is a prompt, the daemon then waits for the dealer: a second `play()` that did
not call `resync()` first used to wait for a prompt that never came and fail after
PROMPT_TIMEOUT_S. It now resyncs by itself, and the shoe goes on card for card.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hil.oracle import check_round
from hil.table_harness import HarnessResult, TableHarness

pytestmark = [pytest.mark.hil, pytest.mark.timeout(120)]

CONFIG = Path(__file__).parents[1] / "config" / "simulated-table.toml"


def at_a_deal_prompt_of_round(round_no: int):
    def holds(result: HarnessResult) -> bool:
        last = result.events[-1]
        return (len(result.rounds) == round_no - 1 and last["kind"] == "prompt"
                and last["payload"]["action"] == "deal")
    return holds


def test_play_after_a_pause_on_a_prompt_goes_on_without_a_resync(tmp_path):
    async def scenario():
        async with TableHarness(CONFIG, tmp_path, seed=31) as table:
            await table.play(until=at_a_deal_prompt_of_round(2))
            paused_on = table.result.events[-1]
            # No resync(): the next play() finds the table waiting for that card.
            await table.play(until=lambda r: len(r.rounds) >= 4)
            return paused_on, table.result, await table.call("rounds", limit=100)

    paused_on, result, stored = asyncio.run(scenario())
    assert paused_on["kind"] == "prompt" and paused_on["payload"]["action"] == "deal"
    settled = [r for r in stored if r["state"] == "settled"]
    assert [r["round_no"] for r in settled] == [1, 2, 3, 4]
    assert all(check_round(r) == [] for r in settled)  # the draws and every payout
    # Card for card: the paused-on card was drawn once, none skipped or drawn twice.
    indexes = [c["index"] for r in settled for c in r["cards"]]
    assert indexes == list(range(indexes[0], indexes[0] + len(indexes)))
    assert result.void_rounds == []
