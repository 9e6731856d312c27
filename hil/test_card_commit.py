"""Protocol 1.2's card commit acknowledgement (docs/protocol.md 6.6) against a power cut in
the one window it closes, forced: the daemon dies after the link acknowledged a card's frame
and before the table's step for that card committed (controller/crash_points.py,
TABLE_CRASH_AT_CARD: the kill just before that step's COMMIT).

* A 1.2 shoe (CAP_CARD_COMMIT) still holds the card, sends it again after the restarted
  daemon's handshake [M-6.6c], and the round goes on with it: settled, no void, every card
  of the round the one the shoe dealt at that index.
* A 1.1 shoe forgot the card when its frame was acknowledged: the table sees the next
  index and voids the round by the lost-card ruling (docs/rulings.md C7), as before.

The harness's seed and the card index are fixed so that the card is the third card of a
round (a card inside a round, whose step is grouped: the ack must wait for a flush).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from controller.crash_points import CARD_CRASH_ENV
from hil.table_harness import HarnessResult, TableHarness

pytestmark = [pytest.mark.hil, pytest.mark.slow, pytest.mark.timeout(600)]

CONFIG = Path(__file__).parents[1] / "config" / "simulated-table.toml"
SEED = 7
CUT_AT = 13  # the shoe's card index whose step the daemon dies in (a round's third card)


def rounds_with(result: HarnessResult, index: int) -> list[dict[str, Any]]:
    return [r for r in result.rounds + result.void_rounds
            if any(c["index"] == index for c in r.get("cards", []))]


async def cut_at_card(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *,
                      card_commit: bool) -> tuple[TableHarness, list[dict[str, Any]]]:
    monkeypatch.setenv(CARD_CRASH_ENV, f"{CUT_AT}:{tmp_path / 'cut-once'}")

    def round_closed_after_cut(result: HarnessResult) -> bool:
        return result.crash_kills > 0 and any(
            e["kind"] in ("round_settled", "round_void") for e in result.events[cut_seen[0]:])

    cut_seen = [10**9]

    def until(result: HarnessResult) -> bool:
        if result.crash_kills and cut_seen[0] == 10**9:
            cut_seen[0] = len(result.events)
        return round_closed_after_cut(result)

    async with TableHarness(CONFIG, tmp_path / "table", seed=SEED,
                            card_commit=card_commit) as table:
        await table.play(shoes=1, until=until)
        stored = await table.call("rounds", limit=100_000)
        return table, stored


def test_a_1_2_shoe_replays_the_card_the_cut_lost_and_the_round_goes_on(tmp_path, monkeypatch):
    table, stored = asyncio.run(cut_at_card(tmp_path, monkeypatch, card_commit=True))
    assert table.result.crash_kills == 1
    assert (tmp_path / "cut-once").read_text() == f"{CUT_AT}\n"
    assert table.shoe.replayed >= 1  # [M-6.6c]: the kept card went out again
    assert table.result.void_rounds == []
    stack, _ = table.result.stacks[0]
    [record] = [r for r in stored if any(c["index"] == CUT_AT for c in r["cards"])]
    assert record["state"] == "settled"
    indexes = [c["index"] for c in record["cards"]]
    assert indexes[2] == CUT_AT  # the round's third card
    assert indexes == list(range(indexes[0], indexes[0] + len(indexes)))
    # Exact cards: each is the one the shoe dealt at its index (no misreads here, so the
    # index is the card's position in the stack).
    assert [c["card"] for c in record["cards"]] == [str(stack[i]) for i in indexes]


def test_a_1_1_shoe_loses_the_card_and_the_round_is_void_by_the_ruling(tmp_path, monkeypatch):
    table, stored = asyncio.run(cut_at_card(tmp_path, monkeypatch, card_commit=False))
    assert table.result.crash_kills == 1
    assert table.shoe.replayed == 0
    [void] = table.result.void_rounds
    assert f"card(s) {CUT_AT} left the shoe unseen" in void["reason"]  # C7
    [record] = [r for r in stored if r["round_id"] == void["round_id"]]
    assert record["state"] == "void"
    assert CUT_AT not in [c["index"] for c in record["cards"]]
