"""Differential through the devices: the daemon process on the simulators against `simulate`.

`tests/controller/test_differential.py` plays `tablectl simulate`'s shoes to a
daemon in the test's own process with stand-in devices. Here the same shoes go
through the daemon *process* and the HIL simulators (hil/table_harness.py): the
pty shoe is loaded with exactly the stack simulate dealt, the cover card where
simulate put it; the dealer's irregularities are the simulators' own fault hooks
(`face_up_next()`; a lost card is one drawn while the shoe's cable is out, so the
driver sees the index jump and the floor supervisor rules on the gap); "no more
bets" is the lock-out button through the GPIO bridge; wagers and `new_dealer`
go through the control socket; the USB shuffler simulator counts every batch.
The rounds the daemon stores (`rounds`) must equal simulate's records (same
normalisers as the in-process test): cards and hands, outcome, every settlement.

Default: 2 shoes of 631a Baccarat (baccarat-8deck.toml) and 2 of 21 Baccarat
(21-baccarat-8deck.toml: the simulated shuffler holds 8-deck batches, so the
4-deck submission would be refused as short at every shuffle).
`TABLE_DIFFERENTIAL_SHOES=N` deals N of each (the long version: N >= 10);
`TABLE_DIFFERENTIAL_SEED=S` picks the seed (default 15; printed, with the figures).
Long version (at least 20 shoes): `TABLE_DIFFERENTIAL_SHOES=10 ./run-tests -s
hil/test_differential_hil.py`.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from cards import BackColour, Card, shoe_of
from controller.control import ControlClient
from controller.rules.dealing import Bet, Cover, Draw, Lock, NewDealer
from controller.rules.game import build_game
from controller.rules.simulate import SimulationOptions, deal_shoes
from hil.table_harness import TableHarness
from tests.controller.test_daemon_discards import SUPERVISOR, table_config
from tests.controller.test_differential import assert_same_rounds, live, simulated

pytestmark = [pytest.mark.hil, pytest.mark.timeout(3600)]

ROOT = Path(__file__).parents[1]
SHOES = int(os.environ.get("TABLE_DIFFERENTIAL_SHOES", "2"))
# Seed 15's first two shoes of each family hold every kind of irregularity (face up, lost,
# new dealer); the in-process test defaults to 2026, which needs more shoes for that.
SEED = int(os.environ.get("TABLE_DIFFERENTIAL_SEED", "15"))
EVENT_TIMEOUT_S = 30.0  # no event for this long: the daemon is stuck, fail loudly
# Every card the table handles commits one of these, with the shoe's index.
CARD_KINDS = frozenset({"burn_first_card", "burn_card", "card", "cover_card", "card_face_up",
                        "simulated_round", "card_discarded", "card_during_fault", "card_gap"})


def table_file(rules_file: str, workdir: Path) -> Path:
    """The simulated table's devices (config/simulated-table.toml from [shoe] on) under the
    Rules Submission of `rules_file`, its layout cut to the ten wired seats."""
    rules = (ROOT / "config" / rules_file).read_text(encoding="utf-8")
    seats = min(int(re.search(r"(?m)^seats = (\d+)", rules)[1]), 10)  # type: ignore[index]
    rules = re.sub(r"(?m)^seats = \d+", f"seats = {seats}", rules)
    devices = (ROOT / "config" / "simulated-table.toml").read_text(encoding="utf-8")
    devices = "".join(line for line in devices.splitlines(keepends=True)  # unwired seats
                      if not (m := re.match(r"(\d+)\s*= \{ sensor", line)) or int(m[1]) <= seats)
    path = workdir / "table.toml"
    path.write_text(rules + "\n" + devices[devices.index("[shoe]"):], encoding="utf-8")
    return path


def stack_of(actions: list[Any], decks: int) -> tuple[list[Card], int]:
    """The shoe simulate dealt: its drawn cards in order, then the ones never drawn
    (their order cannot matter); and how many cards come out before the cover card."""
    drawn = [a.card for a in actions if isinstance(a, Draw)]
    rest = Counter(shoe_of(decks))
    rest.subtract(drawn)
    cover = next((a.index for a in actions if isinstance(a, Cover)), len(drawn))
    return drawn + [card for card, n in rest.items() for _ in range(n)], cover


class Watch:
    """The daemon's committed events as they arrive (a subscription, not polling)."""

    def __init__(self, stream: ControlClient, after_seq: int) -> None:
        self.events: list[dict[str, Any]] = []
        self.pos = 0  # events before this were matched already (shoe indexes restart)
        self.arrived = asyncio.Event()
        self._task = asyncio.create_task(self._follow(stream, after_seq))

    async def _follow(self, stream: ControlClient, after_seq: int) -> None:
        async for event in stream.subscribe(after_seq):
            self.events.append(event)
            self.arrived.set()

    async def until(self, what: str, test: Any) -> dict[str, Any]:
        seen = self.pos
        while True:
            for at in range(seen, len(self.events)):
                if test(self.events[at]):
                    self.pos = at + 1
                    return self.events[at]
            seen = len(self.events)
            self.arrived.clear()
            try:
                await asyncio.wait_for(self.arrived.wait(), EVENT_TIMEOUT_S)
            except TimeoutError:
                raise AssertionError(f"seed {SEED}: no event for {what} in "
                                     f"{EVENT_TIMEOUT_S:g} s") from None

    async def card(self, index: int) -> dict[str, Any]:
        """The table has handled the card with this shoe index."""
        return await self.until(f"card {index}", lambda e: e["kind"] in CARD_KINDS
                                and e["payload"].get("index") == index)

    def close(self) -> None:
        self._task.cancel()


async def no_fault(table: TableHarness) -> None:
    """On a loaded machine a link can drop by itself (keepalive silence) and come back: the
    dealer waits for the table to resume, as at a real table, before the next action."""
    deadline = asyncio.get_running_loop().time() + EVENT_TIMEOUT_S
    while True:
        status = await table.call("status")
        if status["fault"] is None and table.shoe.host_connected:
            return
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"seed {SEED}: the table stayed in a fault: {status['fault']}")
        await asyncio.sleep(0.01)


async def play(table: TableHarness, watch: Watch, actions: list[Any]) -> dict[str, int]:
    """Simulate's dealer, acting on the devices; returns the faults it injected by kind."""
    injected: Counter[str] = Counter()
    lost = False
    for action in actions:
        if not lost:
            await no_fault(table)
        match action:
            case Draw(lost=True):
                # 631a.15: the card leaves the shoe while its cable is out; the driver
                # notices the index jump at the next card.
                await table.shoe.unplug()
                await table.wait_for_state("device_fault")
                await table.shoe.draw()
                await table.shoe.replug()
                # The table resumes by itself once the link is back (the link_down fault
                # clears); only then is the next card reported.
                await table.wait_for_state("betting_open", "no_more_bets", "dealing",
                                           "third_cards", "burn")
                while not table.shoe.host_connected:
                    await asyncio.sleep(0.01)
                injected["lost card (unplugged)"] += 1
                lost = True
            case Draw():
                if action.face_up:
                    table.shoe.face_up_next()  # 631a.15(d), 681a.9(a)
                    injected["face up"] += 1
                await table.shoe.draw()
                if lost:  # the supervisor rules on the gap (ruling C7)
                    await table.wait_for_state("device_fault")
                    await table.call("acknowledge_fault", auth=SUPERVISOR)
                    lost = False
                await watch.card(action.index)
            case Cover():
                assert await table.shoe.draw() is None, f"seed {SEED}: no cover card at {action}"
                await watch.card(action.index)
            case Bet():
                for w in action.wagers:
                    await table.call("place_wager", seat=w.seat, wager=w.wager,
                                     amount_cents=w.amount_cents)
            case Lock():
                table._press_lockout()  # the dealer's button, through the GPIO bridge
                await table.wait_for_state("no_more_bets")
            case NewDealer():
                await table.call("new_dealer", dealer="relief")  # 681a.7(c)
                injected["new dealer"] += 1
    return dict(injected)


@pytest.mark.parametrize("rules_file", ["baccarat-8deck.toml", "21-baccarat-8deck.toml"])
def test_the_daemon_on_the_simulators_and_simulate_record_the_same_rounds(rules_file: str,
                                                                          tmp_path: Path) -> None:
    game = build_game(table_config(tmp_path, rules_file).submission)
    shoes = list(deal_shoes(game, SimulationOptions(shoes=SHOES, seed=SEED, irregularities=1.0)))
    expected = [simulated(r) for _, _, records in shoes for r in records]
    started = time.monotonic()

    async def scenario() -> tuple[list[dict[str, Any]], dict[str, int]]:
        injected: Counter[str] = Counter()
        async with TableHarness(table_file(rules_file, tmp_path), tmp_path / "run") as table:
            stream = await ControlClient(table.socket).connect()
            watch = Watch(stream, 0)
            try:
                await table.call("open")
                for shoe_no, actions, _ in shoes:
                    await table.wait_for_state("opening" if shoe_no == 1 else "end_of_shoe")
                    await table.call("shuffle")  # the USB simulator counts the batch
                    done = await watch.until("the shuffle", lambda e: e["kind"] == "shuffle_complete")
                    table.back = BackColour[done["payload"]["back"].upper()]
                    await table.wait_for_state("cut")
                    stack, cover_at = stack_of(actions, game.config.decks)
                    table.shoe.load(stack, table.back, cover_at)
                    await table.wait_for_state("burn")
                    injected.update(await play(table, watch, actions))
                await table.wait_for_state("end_of_shoe", "betting_open")
                return await table.call("rounds", limit=100_000), dict(injected)
            finally:
                watch.close()
                await stream.close()

    recorded, injected = asyncio.run(scenario())
    got = [live(r) for r in recorded]
    voids = sum(1 for r in got if r[2])
    print(f"{rules_file}: seed {SEED}, {SHOES} shoes through the daemon process and the "
          f"simulators, {len(got)} rounds ({sum(1 for r in got if r[1])} simulated, "
          f"{voids} void), injected {injected}, {time.monotonic() - started:.0f} s")
    assert_same_rounds(got, expected, SEED)
    # Every irregularity simulate's dealer committed went through the devices, and the run
    # covered each kind (a seed that deals none of one says so: pick another or more shoes).
    dealt = [a for _, actions, _ in shoes for a in actions]
    committed = {"face up": sum(1 for a in dealt if isinstance(a, Draw) and a.face_up),
                 "lost card (unplugged)": sum(1 for a in dealt if isinstance(a, Draw) and a.lost),
                 "new dealer": sum(1 for a in dealt if isinstance(a, NewDealer))}
    assert injected == {k: n for k, n in committed.items() if n}, f"seed {SEED}: injected {injected}, dealt {committed}"
    for kind in ("face up", "lost card (unplugged)", "new dealer"):
        assert injected.get(kind, 0) >= 1, f"seed {SEED}: no {kind} in {SHOES} shoes"
    assert voids >= 1  # a lost card in a round voids it (631a.15, ruling C7)
