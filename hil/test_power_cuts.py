"""Issues 6 and 13: SIGKILL the daemon at random instants during HIL shoes, restart it,
check everything.

The table is a progressive one (Heavenly 9 with a Must-Hit-By mystery level, chips on
the seat sensors at random instants around the lock-out). Two kinds of cut:

* the harness's SIGKILL at a random instant right after the dealer acted;
* the daemon's own SIGKILL inside a store commit, between the transaction's writes and
  its COMMIT (controller/crash_points.py, ``TABLE_CRASH_IN_COMMIT``): the cuts an outside
  kill almost never lands on. The test reports how many there were.

After every restart the test compares the store (through the control socket) with what
it saw and did itself: every round it saw close is stored with the same settlements and
none twice, every stored round re-settles the same under hil/oracle.py, seat totals are
the sum of the closed rounds, the daemon's boot check passed, and the progressive meters
equal the test's own arithmetic from the accepted progressive wagers and hits. At the end
the whole chain verifies (the critical-memory check, full, on the stopped daemon's store). At the end every wager the daemon acknowledged is in a
stored round or still on the layout, and nothing else is (a wager in flight when the
daemon died may be either).

The shoe is a protocol 1.2 shoe with the card commit acknowledgement (docs/protocol.md
6.6): a card whose frame the link acknowledged before a cut is sent again after the
restart, so no round is voided for a card the shoe delivered (counted and asserted), and
every cover card the shoe drew is recorded once, at its index (6.6 [M-6.6e]; a 1.1 shoe's
can be lost).
`TABLE_POWER_CUT_SHOE=1.1` runs a 1.1 shoe instead, which loses such cards and voids their
rounds by the lost-card ruling (docs/rulings.md C7; counted, not asserted).

A kill keeps what the daemon wrote but did not flush, so a restart may find the log ending
in cards no seal covers yet (docs/rulings.md C29): the test counts the starts that did. It
loses what had not been written: a round's cards and prompts wait in memory for the next
step that writes (C31). The test counts the entries it saw that a restarted log no longer
held, and asserts that each is of a kind that may wait (`GROUPED_KINDS`).
With the 1.2 shoe, the first CardsCommitted the shoe takes after each restart (the replay
of its kept cards comes then, several frames in one read) is checked against what a power
cut at that moment would leave on the disk: the last card it covers must be there
(docs/protocol.md 6.6 [M-6.6a]; hil/unflushed.py, `card_indexes_on_disk`).
`TABLE_POWER_CUT_SEAL_EVERY_STEP=1` runs the table with `[store] seal_every_step = true`
(C29's option), and then asserts that no start found one.

Soak: `TABLE_POWER_CUTS=1000 ./run-tests hil/test_power_cuts.py` (default 20). The seeds
are random and printed; `TABLE_POWER_CUT_SEED=N` replays a run's choices.
"""

from __future__ import annotations

import asyncio
import collections
import os
import random
from pathlib import Path

import pytest

from controller.crash_points import CRASH_ENV
from controller.memory.store import FLUSH_TRACE_ENV, GROUPED_KINDS
from hil.oracle import check_round
from hil.soak import all_events, wager_discrepancies
from hil.table_harness import PlayerPlan, PowerCuts, TableHarness
from hil.unflushed import AcksAgainstTheDisk

pytestmark = [pytest.mark.hil, pytest.mark.slow, pytest.mark.timeout(3600 * 6)]

CONFIG = Path(__file__).parents[1] / "config" / "progressive-heavenly9-mystery.toml"
POWER_CUTS = int(os.environ.get("TABLE_POWER_CUTS", "20"))
SEED = int(os.environ.get("TABLE_POWER_CUT_SEED") or random.SystemRandom().randrange(2**32))
CRASH_IN_COMMIT = 0.0003  # per COMMIT (a round commits ~40 times): about one round in eighty
WAGER_CENTS = 500  # [progressive.heavenly9] wager_cents
LEVELS = {  # level: (reset, percent of each wager): 631c.2(i); 631c.6(c)(4), configuration A
    "progressive": (1_000_000, 10), "mystery": (10_000, 1)}
PLAYERS = PlayerPlan(seats=(1, 2, 4, 6, 8, 10), progressive=0.5)
SHOE_PROTOCOL = os.environ.get("TABLE_POWER_CUT_SHOE", "1.2")
if SHOE_PROTOCOL not in ("1.1", "1.2"):
    raise ValueError(f"TABLE_POWER_CUT_SHOE = {SHOE_PROTOCOL!r}: allowed are 1.2 (default) and 1.1")
LOST_CARD = "left the shoe unseen"  # the void reason of the lost-card ruling (C7)
_SEAL_EVERY_STEP = os.environ.get("TABLE_POWER_CUT_SEAL_EVERY_STEP", "0")
if _SEAL_EVERY_STEP not in ("0", "1"):
    raise ValueError(f"TABLE_POWER_CUT_SEAL_EVERY_STEP = {_SEAL_EVERY_STEP!r}: allowed are 0 "
                     "(default: ruling C29) and 1 ([store] seal_every_step = true)")
SEAL_EVERY_STEP = _SEAL_EVERY_STEP == "1"


def expected_meters(events) -> dict[str, tuple[int, int]]:
    """(amount, wagers) per level from the log alone: each accepted progressive wager adds
    its percentage; a hit (a jackpot prompt) resets the level (its award was the amount)."""
    amounts = {level: reset for level, (reset, _) in LEVELS.items()}
    wagers = 0
    for e in events:
        if e["kind"] == "progressive_accepted":
            for _ in e["payload"]["accepted"]:
                wagers += 1
                for level, (_, percent) in LEVELS.items():
                    amounts[level] += WAGER_CENTS * percent // 100
        elif e["kind"] == "prompt" and e["payload"]["action"] == "jackpot":
            level = e["payload"]["level"]
            amounts[level] = LEVELS[level][0]
    return {level: (amount, wagers) for level, amount in amounts.items()}


class Tally:
    """What the test itself saw committed, independent of the daemon's own totals."""

    def __init__(self) -> None:
        self.checked_restarts = 0
        self.chain_entries = 0

    async def check(self, harness: TableHarness) -> None:
        # The daemon's boot check (the critical-memory verification from its checkpoint)
        # passed, or the table would be out of order; the whole chain is verified offline
        # at the end (verify_whole_chain). Not live: a full check racing the table's own
        # writes reported a broken link that the file did not have (seed 2915962864,
        # reported to issue 11), and that is not what this test is about.
        status = await harness.call("status")
        assert status["state"] != "out_of_order", status["out_of_order"]
        log = await all_events(harness)
        assert log[-1]["seq"] >= harness.last_seq  # the harness follows the log as it stands
        lost = {event["kind"] for event in harness.result.lost}
        assert lost <= GROUPED_KINDS, f"entries of {sorted(lost - GROUPED_KINDS)} were lost"
        stored = await harness.call("rounds", limit=100_000)
        ids = [r["round_id"] for r in stored]
        assert len(ids) == len(set(ids))
        for record in stored:
            assert check_round(record) == [], record["round_id"]
        # Rounds the test saw settle or void, keyed by id: never twice.
        seen: dict[int, dict] = {}
        for event in harness.result.events:
            if event["kind"] in ("round_settled", "round_void"):
                assert event["round_id"] not in seen, f"round {event['round_id']} closed twice"
                seen[event["round_id"]] = event["payload"]
        # The store may be ahead of what the test saw by what committed in the instant
        # before the kill (caught up after the restart): compare id by id.
        closed = {r["round_id"]: r for r in stored if r["state"] in ("settled", "void")}
        for round_id, payload in seen.items():
            assert round_id in closed, f"round {round_id} closed in the log but not in the store"
            assert closed[round_id]["settlements"] == payload["settlements"]
        expected: dict[str, int] = {}
        for record in closed.values():
            for s in record["settlements"]:
                expected[str(s["seat"])] = expected.get(str(s["seat"]), 0) + s["net_cents"]
        totals = await harness.call("seat_totals")
        assert {seat: t["net_cents"] for seat, t in totals.items()} == expected
        meters = {m["level"]: m for m in await harness.call("meters")}
        for level, (amount, wagers) in expected_meters(log).items():
            assert meters[level]["wagers_count"] == wagers, (level, meters[level])
            if level == "mystery" and any(
                    e["kind"] == "prompt" and e["payload"]["action"] == "jackpot"
                    and e["payload"]["level"] == "mystery" for e in log):
                # A must-hit-by hit lands inside an acceptance: which of that round's
                # wagers fed the old meter and which the reset one is not in the log.
                assert meters[level]["amount_cents"] >= LEVELS[level][0], meters[level]
                continue
            assert meters[level]["amount_cents"] == amount, (level, meters[level])
        self.checked_restarts += 1


def verify_whole_chain(harness: TableHarness) -> int:
    """The critical-memory check, full (every entry's MAC from entry 1), on the stopped
    daemon's store; returns the entries verified."""
    from controller.memory.lifecycle import load_key_for, paths_for, verify_file

    path = harness.store_path
    verified = verify_file(path, load_key_for(path), paths_for(path), full=True)
    assert (verified.from_seq, verified.entries) == (1, verified.log_seq)
    assert verified.log_seq >= harness.last_seq
    return verified.entries


async def acknowledged_wagers_are_stored(harness: TableHarness) -> None:
    stored = await harness.call("rounds", limit=100_000)
    lost, unexplained = wager_discrepancies(harness.result, stored, await harness.call("status"))
    assert lost == collections.Counter(), "acknowledged wagers lost"
    assert unexplained == collections.Counter(), "wagers stored that were never placed"


def test_power_cuts_at_random_instants_lose_and_duplicate_nothing(tmp_path, monkeypatch):
    print(f"power cuts: {POWER_CUTS}, seed {SEED} (replay: TABLE_POWER_CUT_SEED={SEED}), "
          f"protocol {SHOE_PROTOCOL} shoe"
          f"{', [store] seal_every_step = true' if SEAL_EVERY_STEP else ''}")
    rng = random.Random(SEED)
    monkeypatch.setenv(CRASH_ENV, f"{CRASH_IN_COMMIT}:{rng.randrange(2**32)}")
    trace = tmp_path / "flushes.txt"
    if SHOE_PROTOCOL == "1.2":  # the acknowledgements' tally reads the flushes traced
        monkeypatch.setenv(FLUSH_TRACE_ENV, str(trace))
    tally = Tally()
    cuts = PowerCuts(random.Random(rng.randrange(2**32)), rate=0.12, limit=POWER_CUTS,
                     checks=[tally.check])

    async def run() -> tuple[TableHarness, list[int], AcksAgainstTheDisk | None, list[int]]:
        async with TableHarness(CONFIG, tmp_path, seed=rng.randrange(2**32),
                                players=PLAYERS, card_commit=SHOE_PROTOCOL == "1.2",
                                extra_overrides=["store.seal_every_step=true"]
                                if SEAL_EVERY_STEP else []) as table:
            acks = (AcksAgainstTheDisk(table, trace, tmp_path / "at-last-flush",
                                       first_after_each_restart=True)
                    if SHOE_PROTOCOL == "1.2" else None)
            while cuts.done < POWER_CUTS:
                await table.play(shoes=1, power_cuts=cuts)
            await table.wait_for_state("betting_open", "end_of_shoe", "cut", "burn",
                                       "shuffling")
            await tally.check(table)
            await acknowledged_wagers_are_stored(table)
            # What each start's check found after the sealed entry (C29), kept in the log.
            starts = await table.call("events", after_seq=0, kind="critical_memory_verified",
                                      limit=100_000)
            return (table, [e["payload"].get("unsealed", 0) for e in starts], acks,
                    await table.cover_cards_recorded())

    table, unsealed, acks, covers_recorded = asyncio.run(run())
    tally.chain_entries = verify_whole_chain(table)
    result = table.result
    settled = [r for r in result.rounds if not r.get("simulated")]
    print(f"seed {SEED}: {result.power_cuts} power cuts + {result.crash_kills} kills inside "
          f"commits, {result.shoes_completed} shoes, {len(settled)} rounds settled, "
          f"{len(result.void_rounds)} void, {len(result.wagers_placed)} wagers acknowledged, "
          f"{len(result.wagers_in_doubt)} in doubt, chain {tally.chain_entries} entries verified")
    lost_card_voids = [v for v in result.void_rounds if LOST_CARD in v["reason"]]
    print(f"protocol {SHOE_PROTOCOL} shoe: {len(lost_card_voids)} rounds void for a lost card, "
          f"{table.shoe.replayed} cards sent again after a handshake, "
          f"{table.shoe.lost_reports} reports lost; cover cards drawn "
          f"{len(table.shoe.covers_drawn)}, sent again {len(table.shoe.replayed_covers)}, "
          f"recorded by the table {len(covers_recorded)}")
    print(f"starts {len(unsealed)}, of which found the log ending in entries no seal covers "
          f"(C29) {sum(1 for n in unsealed if n)}, {sum(unsealed)} entries in all")
    lost_kinds = collections.Counter(event["kind"] for event in result.lost)
    print(f"entries seen and lost with a kill (C31, all of kinds that may wait): "
          f"{len(result.lost)} ({', '.join(f'{n} {k}' for k, n in sorted(lost_kinds.items()))})")
    assert len(unsealed) >= POWER_CUTS + 1  # the first start and one after every cut
    if SEAL_EVERY_STEP:
        assert sum(unsealed) == 0, unsealed
    assert result.power_cuts == POWER_CUTS
    # One check per restart, the last one after play; a crash point firing during a check
    # restarts the daemon and checks again.
    assert POWER_CUTS + 1 <= tally.checked_restarts <= POWER_CUTS + result.crash_kills + 1
    assert len(settled) > POWER_CUTS  # play went on between the cuts
    if SHOE_PROTOCOL == "1.2":  # 6.6: every card the shoe dealt reached the table
        assert lost_card_voids == []
        # [M-6.6e]: and every cover card, once each (M-6.6d), at the index it came out at.
        assert covers_recorded == table.shoe.covers_drawn
        assert acks is not None
        ahead = acks.ahead_of_the_disk()
        print(f"first card acknowledgements after a restart checked against the disk: "
              f"{len(acks.seen)}, ahead of it: {len(ahead)}")
        assert ahead == []
        assert len(acks.seen) >= POWER_CUTS // 2  # most restarts acknowledge a card again
