"""Through the daemon: disclosed cards at a 631a table (631a.15(c)-(d)).

A floor supervisor declares that the last card out of the shoe was a Player third
card dealt in error and disclosed (631a.15(c)); the table applies the Rules
Submission's (c)(1) or (c)(2) procedure. A card found face up after "no more bets"
opens a simulated round (631a.15(d)) and the locked round is closed, never left open
(docs/rulings.md C19, C20). Stand-in shoe and control API as in test_daemon_discards.
"""

from __future__ import annotations

from typing import Any

import pytest

from controller.control import ControlError
from tests.controller.test_daemon import running
from tests.controller.test_daemon_discards import SUPERVISOR, Dealer, devices, hands, table_config


def settled(record: dict[str, Any]) -> list[tuple[int, str, str, int]]:
    return [(s["seat"], s["wager"], s["outcome"], s["net_cents"]) for s in record["settlements"]]


async def no_round_open(c: Any) -> bool:
    return all(r["state"] != "open" for r in await c.call("rounds", limit=50))


async def test_a_disclosed_player_third_card_is_discarded_with_one_more_631a_15_c_1(tmp_path):
    """Player 6 and Banker 7 both stand; the dealer gives the Player a third card anyway and
    shows it. The default Rules Submission discards it and one more card (631a.15(c)(1))."""
    table = devices()
    async with running(table_config(tmp_path), table) as c:
        dealer = Dealer(c, table)
        await dealer.open_to_betting(("A♣", "2♣"))
        await c.call("place_wager", seat=1, wager="banker", amount_cents=2000)
        await c.call("no_more_bets")
        await dealer.draw("6♠", "7♣", "K♦", "K♥")  # cards 2-5: Player 6, Banker 7
        await dealer.reach("betting_open")
        await c.call("place_wager", seat=2, wager="player", amount_cents=1000)
        await dealer.draw("5♥")  # card 6, to the Player in error: it opened round 2 (C1)
        assert await dealer.state() == "dealing"
        reply = await c.call("disclosed_player_third", auth=SUPERVISOR)
        assert reply["state"] == "betting_open"
        await dealer.draw("9♣")  # card 7: the additional card, face down, to the discard bucket
        assert await dealer.state() == "betting_open"
        await c.call("no_more_bets")
        await dealer.draw("8♠", "2♦", "K♣", "3♥")  # Player 8 natural, Banker 5
        await dealer.reach("betting_open")
        first, withdrawn, third = await c.call("rounds", limit=3)
        (declared,) = await dealer.events("player_third_disclosed")
        (discarded,) = await dealer.events("card_discarded")
        prompts = [p for p in await dealer.events("prompt") if p.get("action") == "discard"]
        betting = [p["round_no"] for p in await dealer.events("prompt")
                   if p.get("action") == "place_bets"]
        assert await no_round_open(c)
    assert reply["ruling"] == {
        "action": "discard_with_one_more", "section": "631a.15(c)(1)", "changed": True,
        "card": "5♥", "decision": "discard the card and one more card drawn face down, "
                                  "undisclosed (631a.15(c)(1))"}
    assert hands(first) == (["6♠", "K♦"], ["7♣", "K♥"], "banker")
    assert settled(first) == [(1, "banker", "win", 1900)]  # 5% vigorish on $20.00
    # The round the card had opened is void; the Player wager stood for the next round.
    assert withdrawn["state"] == "void" and [c["card"] for c in withdrawn["cards"]] == ["5♥"]
    assert settled(withdrawn) == [(2, "player", "push", 0)]
    assert (withdrawn["round_no"], third["round_no"]) == (2, 3)
    assert hands(third) == (["8♠", "K♣"], ["2♦", "3♥"], "player")
    assert settled(third) == [(2, "player", "win", 1000)]
    assert (declared["supervisor"], declared["index"], declared["card"], declared["section"],
            declared["changed"]) == ("floor", 6, "5♥", "631a.15(c)(1)", True)
    assert (discarded["index"], discarded["card"], discarded["ruling"]) == (
        7, "9♣", "the additional card drawn face down with a disclosed Player third card: "
                 "discarded without being disclosed (631a.15(c)(1))")
    # The dealer is shown the disclosed card, never the additional one.
    assert [p["card"] for p in prompts] == ["5♥", ""]
    assert betting == [1, 2, 3, 4]  # betting reopened for round 3 after the withdrawn round 2


async def test_a_disclosed_player_third_card_opens_a_simulated_round_631a_15_c_2(tmp_path):
    table = devices()
    async with running(table_config(tmp_path, "baccarat-6deck-marked-vig.toml"), table) as c:
        dealer = Dealer(c, table)
        dealer.shoe_cards = 312
        await dealer.open_to_betting(("A♣", "2♣"))
        await c.call("place_wager", seat=3, wager="player", amount_cents=10000)
        await c.call("no_more_bets")
        await dealer.draw("7♠", "6♣", "K♦", "K♥")  # Player 7 v Banker 6: both stand
        await dealer.reach("betting_open")
        await c.call("place_wager", seat=4, wager="player", amount_cents=10000)
        await dealer.draw("4♥")  # the Player's third card in error, shown: opened round 2
        reply = await c.call("disclosed_player_third", auth=SUPERVISOR)
        # 631a.15(c)(2): the simulated round goes on from 4♥ as its Player's first card.
        await dealer.draw("2♣", "5♦", "Q♠")  # Player 4+5 = 9, Banker 2+Q = 2: natural
        await dealer.reach("betting_open")
        await c.call("no_more_bets")
        await dealer.draw("2♠", "9♣", "6♦", "K♣")  # Player 8, Banker 9
        await dealer.reach("betting_open")
        first, withdrawn, simulated, last = await c.call("rounds", limit=4)
        assert await no_round_open(c)
    assert (reply["ruling"]["action"], reply["ruling"]["section"], reply["ruling"]["changed"]) \
        == ("simulated_round", "631a.15(c)(2)", True)
    assert settled(first) == [(3, "player", "win", 10000)]
    assert withdrawn["state"] == "void" and settled(withdrawn) == [(4, "player", "push", 0)]
    assert simulated["simulated"] and simulated["state"] == "settled"
    assert hands(simulated) == (["4♥", "5♦"], ["2♣", "Q♠"], "player")
    assert settled(simulated) == []  # no wager is accepted in a simulated round
    assert hands(last) == (["2♠", "6♦"], ["9♣", "K♣"], "banker")
    assert settled(last) == [(4, "player", "lose", -10000)]


async def test_a_disclosed_card_the_banker_had_to_draw_stays_its_third_card_631a_15_c(tmp_path):
    """Player 7 stands, Banker 5 must draw (631a.11(c)(1)): the card meant for the Player is
    the Banker's third card, which is where the table already put it."""
    table = devices()
    async with running(table_config(tmp_path), table) as c:
        dealer = Dealer(c, table)
        await dealer.open_to_betting(("A♣", "2♣"))
        await c.call("place_wager", seat=1, wager="player", amount_cents=1000)
        await c.call("no_more_bets")
        await dealer.draw("K♠", "2♣", "7♦", "3♥", "4♦")
        await dealer.reach("betting_open")
        reply = await c.call("disclosed_player_third", auth=SUPERVISOR)
        (record,) = await c.call("rounds", limit=1)
    assert reply["state"] == "betting_open"
    assert (reply["ruling"]["action"], reply["ruling"]["section"], reply["ruling"]["changed"]) \
        == ("use_as_banker_third", "631a.15(c)", False)
    assert hands(record) == (["K♠", "7♦"], ["2♣", "3♥", "4♦"], "banker")
    assert settled(record) == [(1, "player", "lose", -1000)]


async def test_a_card_that_cannot_be_a_player_third_card_is_refused_631a_15_c(tmp_path):
    table = devices()
    async with running(table_config(tmp_path), table) as c:
        dealer = Dealer(c, table)
        await dealer.open_to_betting(("A♣", "2♣"))
        with pytest.raises(ControlError, match="the last card out of the shoe is not the card "
                                               "after a round's first four cards"):
            await c.call("disclosed_player_third", auth=SUPERVISOR)
        await c.call("no_more_bets")
        # Player 3+2 = 5 draws K (631a.11(b)); Banker 4 stands on a Player's third card of 0.
        await dealer.draw("3♠", "K♣", "2♦", "4♥", "K♦")
        await dealer.reach("betting_open")
        await dealer.draw("6♣")  # the next round's first card
        with pytest.raises(ControlError, match=r"the Player's Hand it followed has 3 cards: a "
                                               r"third card was authorised \(631a.11\(b\)\)"):
            await c.call("disclosed_player_third", auth=SUPERVISOR)
        await dealer.draw("8♣")
        with pytest.raises(ControlError, match=r"index 8, was neither the first card after a settled round nor its Banker's third card"):
            await c.call("disclosed_player_third", auth=SUPERVISOR)
        assert await dealer.state() == "dealing"  # nothing changed
        assert await dealer.events("player_third_disclosed") == []


async def test_a_card_face_up_after_no_more_bets_leaves_no_round_open_631a_15_d(tmp_path):
    """The round locked by "no more bets" has no card when a card is found face up: it is not
    dealt; it is closed void and its wagers stand for the next live round (C19)."""
    table = devices()
    async with running(table_config(tmp_path), table) as c:
        dealer = Dealer(c, table)
        await dealer.open_to_betting(("A♣", "2♣"))
        await c.call("place_wager", seat=1, wager="banker", amount_cents=2500)
        await c.call("no_more_bets")
        await dealer.draw("7♣", face_up=True)  # 631a.15(d): a simulated round
        await dealer.draw("K♠", "Q♥", "9♦")  # Player 7, Banker 9: natural
        await dealer.reach("betting_open")
        assert await no_round_open(c)
        await c.call("no_more_bets")
        await dealer.draw("9♠", "K♣", "K♦", "Q♥")  # Player 9 natural, Banker 0
        await dealer.reach("betting_open")
        locked, simulated, live = await c.call("rounds", limit=3)
        assert await no_round_open(c)
        totals = await c.call("seat_totals")
    assert (locked["state"], locked["cards"], settled(locked)) == (
        "void", [], [(1, "banker", "push", 0)])
    # The same wager is in the live round: the void record says it stood again (C19).
    assert locked["result"]["wagers_stand"] is True
    assert [(w["seat"], w["wager"], w["amount_cents"]) for w in live["wagers"]] == [
        (1, "banker", 2500)]
    assert simulated["simulated"] and settled(simulated) == []
    assert hands(simulated) == (["7♣", "Q♥"], ["K♠", "9♦"], "banker")
    assert hands(live) == (["9♠", "K♦"], ["K♣", "Q♥"], "player")
    assert settled(live) == [(1, "banker", "lose", -2500)]
    assert totals["1"]["net_cents"] == -2500


async def test_a_player_third_card_found_face_up_is_discarded_not_simulated_631a_15_c_1(tmp_path):
    """631a.15(c) covers a Player third card "found face up in the dealing shoe": the shoe's
    face-up report opened a 631a.15(d) simulated round; the floor's declaration puts the
    card and one more in the discard bucket instead, and the waiting wager stands."""
    table = devices()
    async with running(table_config(tmp_path), table) as c:
        dealer = Dealer(c, table)
        await dealer.open_to_betting(("A♣", "2♣"))
        await c.call("place_wager", seat=1, wager="player", amount_cents=1000)
        await c.call("no_more_bets")
        await dealer.draw("7♠", "6♣", "K♦", "K♥")  # Player 7 v Banker 6: both stand
        await dealer.reach("betting_open")
        await c.call("place_wager", seat=2, wager="banker", amount_cents=1000)
        await dealer.draw("3♥", face_up=True)  # opened a simulated round (631a.15(d))
        reply = await c.call("disclosed_player_third", auth=SUPERVISOR)
        await dealer.draw("Q♣")  # the additional card, discarded undisclosed
        await c.call("no_more_bets")
        await dealer.draw("2♠", "9♣", "6♦", "K♣")  # Player 8, Banker 9
        await dealer.reach("betting_open")
        first, simulated, live = await c.call("rounds", limit=3)
        discarded = [(d["index"], d["card"]) for d in await dealer.events("card_discarded")]
        assert await no_round_open(c)
    assert (reply["ruling"]["section"], reply["ruling"]["changed"]) == ("631a.15(c)(1)", True)
    assert settled(first) == [(1, "player", "win", 1000)]
    assert (simulated["simulated"], simulated["state"], settled(simulated)) == (True, "void", [])
    assert "wagers_stand" not in simulated["result"]  # a simulated round held no wager
    assert discarded == [(7, "Q♣")]
    assert hands(live) == (["2♠", "6♦"], ["9♣", "K♣"], "banker")
    assert settled(live) == [(2, "banker", "win", 950)]
