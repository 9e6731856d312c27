"""Through the daemon: two aces against an ace and a king (681a.1, 681a.3(d), 681a.7(f)(2)).

The default reading (docs/rulings.md, "How a natural compares"): both hands are naturals;
two aces are a soft 12, so the ace-king wins, the Tie loses, and the two aces take the
Bonus-only card because 12 is under 17. The dealing engine and the par sheet share
`controller.rules.hand21`, so the daemon deals and settles what the par sheet assumes.
"""

from __future__ import annotations

from tests.controller.test_daemon import running
from tests.controller.test_daemon_discards import Dealer, devices, hands, table_config


async def test_two_aces_lose_to_ace_king_and_take_the_bonus_card(tmp_path):
    table = devices()
    async with running(table_config(tmp_path, "21-baccarat-4deck.toml"), table) as c:
        dealer = Dealer(c, table)
        dealer.shoe_cards = 208
        await dealer.open_to_betting(("2♣",))  # 681a.7(c)
        for wager in ("player", "tie", "bonus_player"):
            await c.call("place_wager", seat=1, wager=wager, amount_cents=1000)
        await c.call("place_wager", seat=2, wager="banker", amount_cents=1000)
        await c.call("no_more_bets")
        # 681a.7(e): Player A♠ A♣, Banker A♥ K♦; 681a.7(f)(2): one Bonus card to the aces.
        await dealer.draw("A♠", "A♥", "A♣", "K♦", "9♠")
        await dealer.reach("betting_open")
        (record,) = await c.call("rounds", limit=1)
    assert hands(record) == (["A♠", "A♣"], ["A♥", "K♦"], "banker")
    assert (record["result"]["player_total"], record["result"]["banker_total"]) == (12, 21)
    assert record["result"]["extra"] == ["9♠"]
    assert [c["slot"] for c in record["cards"]][-1] == "player_bonus_extra"
    assert {(s["seat"], s["wager"]): (s["outcome"], s["net_cents"], s["label"])
            for s in record["settlements"]} == {
        (1, "player"): ("lose", -1000, "Banker wins"),            # 681a.7(i)(2)(ii)
        (1, "tie"): ("lose", -1000, "No tie"),                     # 681a.7(k)(1)(ii)
        (1, "bonus_player"): ("win", 5000, "Three-card 21"),      # 681a.3(e)(4), 681a.8(c) A
        (2, "banker"): ("win", 1000, "Banker wins"),              # 681a.7(j)(2)(i)
    }
