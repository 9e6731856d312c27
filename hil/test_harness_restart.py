"""The harness's restart when a crash point kills the daemon inside the step of the very card
the restart's own resume draws (found by a 1.1-shoe power-cut campaign, seed 20261243, which
waited forever after its first such kill).

The link writes a card's ACK after the card's step (firmware_bridge/aio.py,
`AsyncLink._service`), so a daemon that dies in that step never acknowledges the card: the
simulated shoe keeps the report for the next daemon, and the dealer's draw waits for an
acknowledgement that only a restart can bring. Every action of the dealer is watched for the
daemon's death (`TableHarness._while_alive`); the resume after a restart is an action too.
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

import pytest

from controller.crash_points import CARD_CRASH_ENV
from hil.table_harness import HarnessResult, TableHarness

pytestmark = [pytest.mark.hil, pytest.mark.timeout(300)]

CONFIG = Path(__file__).parents[1] / "config" / "simulated-table.toml"
SEED = 7


def _at_a_deal_prompt(result: HarnessResult) -> bool:
    """The first round's second card is due (its first drawn): a restart resumes by drawing."""
    last: dict[str, Any] = result.events[-1] if result.events else {}
    return (last.get("kind") == "prompt" and last["payload"].get("action") == "deal"
            and last["payload"].get("next") == "banker_first")


async def _killed_in_the_resumes_card(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                      ) -> tuple[int, list[dict[str, Any]], HarnessResult]:
    async with TableHarness(CONFIG, tmp_path / "table", seed=SEED) as table:
        await table.play(shoes=1, until=_at_a_deal_prompt)
        index = table.shoe.drawn  # the card the resume draws (no cover card, no misread yet)
        monkeypatch.setenv(CARD_CRASH_ENV, f"{index}:{tmp_path / 'fired'}")
        await table.stop_daemon(signal.SIGKILL)
        # Without the resume watched, this waited for the card's ACK for ever.
        client = await asyncio.wait_for(table._restart(killed=False, power_cuts=None), 120)
        await client.close()
        before = len(table.result.rounds)
        await table.play(shoes=1, until=lambda result: len(result.rounds) > before)
        cards = [e for e in await table.call("events", after_seq=0, limit=100_000)
                 if e["kind"] == "card"]
        return index, cards, table.result


def test_a_crash_in_the_step_of_the_card_the_resume_draws_restarts_again(tmp_path, monkeypatch):
    index, cards, result = asyncio.run(_killed_in_the_resumes_card(tmp_path, monkeypatch))
    assert (tmp_path / "fired").read_text() == f"{index}\n"  # the crash point fired, once
    assert result.crash_kills == 1
    # The card whose step the kill interrupted was sent again and taken once: no gap, no
    # repeat, and the round it belongs to settled.
    indexes = [card["payload"]["index"] for card in cards]
    assert indexes.count(index) == 1
    assert indexes == list(range(indexes[0], indexes[0] + len(indexes)))
    assert result.void_rounds == []
    assert len(result.rounds) >= 1
