"""Through the daemon: cards the dealer must discard (681a.7(c), 681a.9) and lost cards (631a.15).

The daemon runs in this process with a stand-in shoe that emits what the real
driver would; the simulated dealer uses the control API, and each round is read
back with the `rounds` command, exactly as `tablectl rounds` shows it.
"""

from __future__ import annotations

import asyncio
import tomllib
from pathlib import Path
from typing import Any

from cards import BackColour, Card
from controller.config import parse_config
from tests.controller.test_daemon import CONFIG, StandInDevice, running

from drivers.protocols import CardDrawn, DeviceFault, ShoeLoaded, ShuffleComplete

ROOT = Path(__file__).parents[2]
SUPERVISOR = {"supervisor": "floor", "pin": "2468"}  # the simulated table's supervisor


def table_config(tmp_path: Path, rules_file: str | None = None) -> Any:
    """The simulated table's devices with the Rules Submission of `rules_file`, if given."""
    data = tomllib.loads(CONFIG.read_text(encoding="utf-8"))
    if rules_file is not None:
        rules = tomllib.loads((ROOT / "config" / rules_file).read_text(encoding="utf-8"))
        data.update({k: rules[k] for k in ("table", "game", "wagers")})
        # The simulated table wires ten seats: a larger layout is played on those ten.
        seats = data["table"]["seats"] = min(data["table"]["seats"], len(data["gpio"]["seats"]))
        data["gpio"]["seats"] = {k: v for k, v in data["gpio"]["seats"].items()
                                 if int(k) <= seats}
    data["store"] = {**data.get("store", {}), "path": str(tmp_path / "table.sqlite")}
    data["control"] = {**data.get("control", {}), "socket": str(tmp_path / "control.sock")}
    return parse_config(data, "test-table.toml")


class StandInShuffler(StandInDevice):
    """Takes shuffle requests; the test reports each count as the shuffler would."""

    def __init__(self) -> None:
        super().__init__("shuffler")
        self.requests: list[tuple[BackColour, int]] = []

    @property
    def held_batch(self) -> BackColour | None:
        return None

    async def shuffle(self, back: BackColour, expected_cards: int) -> None:
        self.requests.append((back, expected_cards))


def devices() -> dict[str, Any]:
    return {"shoe": StandInDevice("shoe"), "shuffler": StandInShuffler()}


class Dealer:
    """Draws cards from the stand-in shoe, numbered as the shoe numbers them."""

    def __init__(self, client: Any, devices: dict[str, Any]) -> None:
        self.client, self.shoe, self.shuffler = client, devices["shoe"], devices["shuffler"]
        self.index = 0

    async def shuffle(self, cards: int, missing: int = 0) -> None:
        """The shuffler counts the batch (681a.3(b)(3)); the table waits for the cut."""
        await self.client.call("shuffle", back="red")
        for _ in range(500):
            if self.shuffler.requests:
                break
            await asyncio.sleep(0.01)
        self.shuffler.requests.clear()
        self.shuffler.emit(ShuffleComplete("shuffler", BackColour.RED, cards, missing, 0, 0))

    async def state(self) -> str:
        return str((await self.client.call("status"))["state"])

    async def reach(self, state: str) -> None:
        for _ in range(500):
            if await self.state() == state:
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"the table never reached {state}; it is {await self.state()}")

    async def draw(self, *cards: str, face_up: bool = False) -> None:
        for text in cards:
            self.shoe.emit(CardDrawn("shoe", self.index, Card.parse(text), BackColour.RED,
                                     face_up))
            self.index += 1
        await self.client.call("status")  # the loop has handled what was queued before
        await asyncio.sleep(0.02)

    shoe_cards: int | None = None

    async def open_to_betting(self, burn: tuple[str, ...]) -> None:
        await self.client.call("open")
        await self.shuffle(416 if self.shoe_cards is None else self.shoe_cards)
        await self.reach("cut")
        self.shoe.emit(ShoeLoaded("shoe", self.shoe_cards or 416, BackColour.RED))
        await self.reach("burn")
        await self.draw(*burn)
        await self.reach("betting_open")

    async def events(self, kind: str) -> list[dict[str, Any]]:
        return [e["payload"] for e in await self.client.call("events", kind=kind, limit=1000)]


def hands(record: dict[str, Any]) -> tuple[list[str], list[str], str]:
    return record["result"]["player"], record["result"]["banker"], record["result"]["winner"]


async def test_a_card_drawn_by_accident_to_a_17_is_discarded_681a_9_b(tmp_path):
    """The round the issue describes: physically K-6-4 = 20 against 9-9 = 18, a Player win."""
    table = devices()
    async with running(table_config(tmp_path, "21-baccarat-4deck.toml"), table) as c:
        dealer = Dealer(c, table)
        dealer.shoe_cards = 208
        await dealer.open_to_betting(("2♣",))  # 681a.7(c): only the first card is burned
        await c.call("place_wager", seat=1, wager="banker", amount_cents=1000)
        await c.call("no_more_bets")
        await dealer.draw("K♠", "Q♣", "7♦", "8♥")  # Player 17 stands, Banker 18
        await dealer.reach("betting_open")
        await dealer.draw("5♣")  # the dealer drew to the Player's 17 by accident
        assert await dealer.state() == "betting_open"  # no round was opened by it
        await c.call("place_wager", seat=1, wager="player", amount_cents=1000)
        await c.call("no_more_bets")
        await dealer.draw("K♥", "9♠", "6♦", "9♣", "4♥")
        await dealer.reach("betting_open")
        first, second = await c.call("rounds", limit=2)
        discarded = await dealer.events("card_discarded")
    assert hands(first) == (["K♠", "7♦"], ["Q♣", "8♥"], "banker")
    assert hands(second) == (["K♥", "6♦", "4♥"], ["9♠", "9♣"], "player")
    assert [(s["seat"], s["wager"], s["outcome"], s["net_cents"])
            for s in second["settlements"]] == [(1, "player", "win", 1000)]
    assert [(d["index"], d["card"], d["ruling"]) for d in discarded] == [
        (5, "5♣", "drawn by accident to a hand of 17 (681a.9(b))")]


async def test_a_new_dealers_burn_card_goes_to_the_discard_rack_681a_7_c(tmp_path):
    table = devices()
    async with running(table_config(tmp_path, "21-baccarat-4deck.toml"), table) as c:
        dealer = Dealer(c, table)
        dealer.shoe_cards = 208
        await dealer.open_to_betting(("2♣",))
        await c.call("new_dealer", dealer="D-17")
        await dealer.draw("A♠")  # the new dealer's burn card
        assert await dealer.state() == "betting_open"
        await c.call("place_wager", seat=2, wager="player", amount_cents=2000)
        await c.call("no_more_bets")
        await dealer.draw("10♠", "9♣", "8♦", "9♥")  # Player 18, Banker 18: a tie
        await dealer.reach("betting_open")
        (record,) = await c.call("rounds", limit=1)
        discarded = await dealer.events("card_discarded")
        new_dealer = await dealer.events("new_dealer")
    assert hands(record) == (["10♠", "8♦"], ["9♣", "9♥"], "tie")
    assert [c["index"] for c in record["cards"]] == [2, 3, 4, 5]
    assert [(d["index"], d["card"], d["ruling"]) for d in discarded] == [
        (1, "A♠", "a new dealer's first card goes to the discard rack (681a.7(c))")]
    assert new_dealer == [{"dealer": "D-17", "burn": True}]


async def test_a_card_found_face_up_in_the_shoe_is_not_used_681a_9_a(tmp_path):
    table = devices()
    async with running(table_config(tmp_path, "21-baccarat-4deck.toml"), table) as c:
        dealer = Dealer(c, table)
        dealer.shoe_cards = 208
        await dealer.open_to_betting(("2♣",))
        await c.call("place_wager", seat=3, wager="banker", amount_cents=1000)
        await dealer.draw("9♦", face_up=True)  # before the round: no simulated round (631a)
        assert await dealer.state() == "betting_open"
        await c.call("no_more_bets")
        await dealer.draw("10♠", "10♣")
        await dealer.draw("4♥", face_up=True)  # mid-round: set aside, the round goes on
        await dealer.draw("7♠", "9♣")  # Player 17, Banker 19
        await dealer.reach("betting_open")
        rounds = await c.call("rounds", limit=10)
        discarded = await dealer.events("card_discarded")
    assert len(rounds) == 1 and not rounds[0]["simulated"]
    assert hands(rounds[0]) == (["10♠", "7♠"], ["10♣", "9♣"], "banker")
    assert [(s["wager"], s["outcome"], s["net_cents"]) for s in rounds[0]["settlements"]] == [
        ("banker", "win", 1000)]
    assert [(d["index"], d["card"], d["ruling"]) for d in discarded] == [
        (1, "9♦", "found face up in the shoe: not used in this round (681a.9(a))"),
        (4, "4♥", "found face up in the shoe: not used in this round (681a.9(a))")]


async def test_lost_cards_void_the_round_and_are_reconciled_at_the_shuffle_631a_15(tmp_path):
    """The shoe was unplugged mid-round: cards 6 and 7 left it unseen. Nothing is settled on
    the cards around them; the supervisor's acknowledgement voids the round, and the
    shuffler's count of the batch accounts for the lost cards (docs/rulings.md)."""
    table = devices()
    async with running(table_config(tmp_path), table) as c:
        dealer = Dealer(c, table)
        await dealer.open_to_betting(("3♠", "2♣", "2♣", "2♣"))
        await c.call("place_wager", seat=2, wager="banker", amount_cents=2500)
        await c.call("place_wager", seat=5, wager="player", amount_cents=1000)
        await c.call("no_more_bets")
        await dealer.draw("2♣", "3♦")  # cards 4 and 5
        # What drivers/shoe.py reports when the next card's index skips: a fault first.
        dealer.shoe.emit(DeviceFault("shoe", "shoe_index_gap", "card index 8 arrived where 6 was "
                              "expected: 2 card(s) unaccounted for", "Stop dealing"))
        dealer.index = 8
        await dealer.draw("9♥", "K♣")  # 8 and 9: seen, but the round is already lost
        assert await dealer.state() == "device_fault"
        await c.call("acknowledge_fault", auth=SUPERVISOR)
        await dealer.reach("end_of_shoe")
        (record,) = await c.call("rounds", limit=1)
        gap = await dealer.events("card_gap")
        await dealer.shuffle(416)
        await dealer.reach("cut")
        (reconciled,) = await dealer.events("shoe_reconciled")
    assert record["state"] == "void"
    assert [c["card"] for c in record["cards"]] == ["2♣", "3♦"]
    assert [(s["seat"], s["wager"], s["outcome"], s["net_cents"])
            for s in record["settlements"]] == [(5, "player", "push", 0),
                                                 (2, "banker", "push", 0)]
    assert [(g["expected_index"], g["received_index"], g["lost_indexes"]) for g in gap] == [
        (6, 8, [6, 7])]
    assert (reconciled["shoe_no"], reconciled["lost_indexes"], reconciled["cards_drawn"],
            reconciled["cards_counted"], reconciled["missing"], reconciled["accounted"]) == (
        1, [6, 7], 10, 416, 0, True)


async def test_a_gap_while_betting_discards_the_card_and_opens_no_round_631a_15(tmp_path):
    table = devices()
    async with running(table_config(tmp_path), table) as c:
        dealer = Dealer(c, table)
        await dealer.open_to_betting(("A♣", "2♣"))
        await c.call("place_wager", seat=1, wager="tie", amount_cents=500)
        dealer.index += 1  # card 2 left the shoe unseen: it may be on the layout already
        await dealer.draw("8♠")
        assert await dealer.state() == "betting_open"
        await c.call("no_more_bets")
        await dealer.draw("9♠", "9♣", "K♦", "K♥")
        await dealer.reach("betting_open")
        (record,) = await c.call("rounds", limit=5)
        (discarded,) = await dealer.events("card_discarded")
    assert hands(record) == (["9♠", "K♦"], ["9♣", "K♥"], "tie")
    assert [(s["wager"], s["outcome"], s["net_cents"]) for s in record["settlements"]] == [
        ("tie", "win", 4000)]
    assert (discarded["index"], discarded["card"]) == (3, "8♠")
