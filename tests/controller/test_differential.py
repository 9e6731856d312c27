"""Differential: the same shoes dealt through the daemon and through `tablectl simulate`.

`controller.rules.simulate.deal_shoes` deals seeded shoes with the simulated
dealer committing irregularities (cards found face up, lost cards, new dealers,
cards drawn by accident to a finished 21 Baccarat hand; the shoe's own last-card
void), and says what the dealer did. The same actions are played to the daemon
(in this process, with stand-in devices emitting what the drivers would: a lost
card is a `shoe_index_gap` fault and an index jump, ruled on by a floor
supervisor), and the rounds it records must equal simulate's: cards and hands,
outcome, every settlement.

Default: 10 shoes of 631a Baccarat (8 decks) and 10 of 21 Baccarat (4 decks).
`TABLE_DIFFERENTIAL_SHOES=N` deals N of each; `TABLE_DIFFERENTIAL_SEED=S` picks
the seed (printed on failure).
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from typing import Any

import pytest

from cards import BackColour
from controller.control import ControlClient
from controller.daemon import Daemon
from controller.rules.dealing import Bet, Cover, Draw, Lock, NewDealer
from controller.rules.game import build_game
from controller.rules.simulate import SIM_SEAT, SimulationOptions, deal_shoes
from drivers.protocols import CardDrawn, CoverCardDrawn, DeviceFault, ShoeLoaded
from tests.controller.test_daemon import running
from tests.controller.test_daemon_discards import SUPERVISOR, Dealer, devices, table_config

SHOES = int(os.environ.get("TABLE_DIFFERENTIAL_SHOES", "10"))
SEED = int(os.environ.get("TABLE_DIFFERENTIAL_SEED", "2026"))


async def drained(daemon: Daemon) -> None:
    """Every device event emitted so far has been handled by the table."""
    await asyncio.sleep(0)  # the emit callback enqueues on the loop's next turn
    while daemon.intake.queue.qsize():
        await asyncio.sleep(0)
    await asyncio.sleep(0)


def simulated(record: dict[str, Any]) -> tuple[Any, ...]:
    return (record["round"], record["simulated"], record["void"],
            [(c["card"], c["hand"]) for c in record["cards"]
             if c["hand"] in ("player", "banker", "extra")],
            record["outcome"],
            [(SIM_SEAT, s["wager"], s["amount_cents"], s["outcome"], s["win_cents"],
              s["vigorish_cents"], s["net_cents"], s["section"]) for s in record["settlements"]])


def live(record: dict[str, Any]) -> tuple[Any, ...]:
    void = record["state"] == "void"
    return (record["round_no"], record["simulated"], void,
            [(c["card"], c["hand"]) for c in record["cards"]],
            "void" if void else record["result"]["winner"],
            [(s["seat"], s["wager"], s["amount_cents"], s["outcome"], s["win_cents"],
              s["vigorish_cents"], s["net_cents"], s["section"]) for s in record["settlements"]])


def assert_same_rounds(got: list[tuple[Any, ...]], expected: list[tuple[Any, ...]], seed: int
                       ) -> None:
    """The live records (`live`) equal simulate's (`simulated`), one by one; seed to replay."""
    assert len(got) == len(expected), f"seed {seed}: {len(got)} rounds live, {len(expected)} simulated"
    for n, (a, b) in enumerate(zip(got, expected)):
        assert a == b, f"seed {seed}: round record {n} differs:\n live {a}\n  sim {b}"


async def play(daemon: Daemon, client: ControlClient, dealer: Dealer, actions: list[Any]
               ) -> None:
    """The simulated dealer's actions, as the devices and the control API carry them."""
    shoe, lost = dealer.shoe, False
    for action in actions:
        match action:
            case Draw(lost=True):
                lost = True  # it leaves the shoe unseen: the next card's index jumps
            case Draw():
                if lost:  # drivers/shoe.py reports the jump as a fault before the card
                    shoe.emit(DeviceFault("shoe", "shoe_index_gap", "card index jumped",
                                          "Stop dealing"))
                shoe.emit(CardDrawn("shoe", action.index, action.card, BackColour.RED,
                                    action.face_up))
                if lost:
                    await drained(daemon)
                    await client.call("acknowledge_fault", auth=SUPERVISOR)
                    lost = False
            case Cover():
                shoe.emit(CoverCardDrawn("shoe", action.index))
            case Bet():
                await drained(daemon)
                for w in action.wagers:
                    await client.call("place_wager", seat=w.seat, wager=w.wager,
                                      amount_cents=w.amount_cents)
            case Lock():
                await drained(daemon)
                await client.call("no_more_bets")
            case NewDealer():
                await drained(daemon)
                await client.call("new_dealer", dealer="relief")
    await drained(daemon)


@pytest.mark.parametrize("rules_file", ["baccarat-8deck.toml", "21-baccarat-4deck.toml"])
async def test_the_daemon_and_simulate_record_the_same_rounds(rules_file, tmp_path):
    config = table_config(tmp_path, rules_file)
    game = build_game(config.submission)
    options = SimulationOptions(shoes=SHOES, seed=SEED, irregularities=1.0)
    shoes = list(deal_shoes(game, options))
    expected = [simulated(r) for _, _, records in shoes for r in records]
    stand_ins = devices()
    held: list[Daemon] = []
    async with running(config, stand_ins, prepare=held.append) as client:
        daemon = held[0]
        dealer = Dealer(client, stand_ins)
        dealer.shoe_cards = game.shoe_size
        await client.call("open")
        for shoe_no, actions, _ in shoes:
            if shoe_no > 1:
                await dealer.reach("end_of_shoe")
            await dealer.shuffle(game.shoe_size)
            await dealer.reach("cut")
            dealer.shoe.emit(ShoeLoaded("shoe", game.shoe_size, BackColour.RED))
            await dealer.reach("burn")
            dealer.index = 0
            await play(daemon, client, dealer, actions)
        recorded = await client.call("rounds", limit=100_000)
    got = [live(r) for r in recorded]
    # What the campaign covered, for the record (seeds to replay a failure).
    kinds = Counter(type(a).__name__ + ("(face up)" if getattr(a, "face_up", False) else "")
                    + ("(lost)" if getattr(a, "lost", False) else "")
                    for _, actions, _ in shoes for a in actions)
    voids = sum(1 for r in got if r[2])
    discards = sum(1 for _, _, records in shoes for r in records for c in r["cards"]
                   if c["hand"] == "discard")
    print(f"{rules_file}: seed {SEED}, {SHOES} shoes, {len(got)} rounds "
          f"({sum(1 for r in got if r[1])} simulated, {voids} void, {discards} cards "
          f"discarded), actions {dict(kinds)}")
    assert_same_rounds(got, expected, SEED)
    assert voids >= 1 and kinds["NewDealer"] >= 1 and kinds["Draw(face up)"] >= 1
    if game.config.is_21:  # 681a.7(c), 681a.9(a)-(b) discards were dealt and matched
        assert discards >= kinds["NewDealer"] + kinds["Draw(face up)"]
