"""Through the daemon: a wager the rules do not allow never reaches the layout.

681a.6(c)-(d): at 21 Baccarat a player takes part with a Player or Banker wager, and
the Tie and Bonus wagers are options offered to such a player (docs/rulings.md C21).
627b.3(f)-(g): a Royal 9 wager is exactly its denomination; a configuration whose
limits allow any other amount is refused before the table starts.
"""

from __future__ import annotations

import tomllib

import pytest

from controller.config import ConfigError, parse_config
from controller.control import ControlError
from tests.controller.test_daemon import CONFIG, running
from tests.controller.test_daemon_discards import ROOT, Dealer, devices, table_config


async def test_21_baccarat_refuses_a_tie_or_bonus_without_a_player_or_banker_wager_681a_6_c_d(
        tmp_path):
    """The repro: seat 2's Tie $5.00 alone, then a Bonus on top of only a Tie, were accepted;
    both are refused, and accepted once the seat has a Player wager. Cards 9♠ 9♥ 9♦ 9♣:
    18 against 18, a tie (681a.7(j)); the Tie pays 10 to 1 (681a.8(b)), the Player's pair of
    nines 3 to 1 (681a.8(c), paytable A), the Player wager is returned."""
    table = devices()
    async with running(table_config(tmp_path, "21-baccarat-4deck.toml"), table) as c:
        dealer = Dealer(c, table)
        dealer.shoe_cards = 208
        await dealer.open_to_betting(("2♣",))  # 681a.7(c): only the first card is burned
        with pytest.raises(ControlError, match=r"seat 2 must first place a Player or Banker "
                           r"wager before the optional wager 'tie' \(681a.6\(c\)-\(d\)\)"):
            await c.call("place_wager", seat=2, wager="tie", amount_cents=500)
        await c.call("place_wager", seat=3, wager="banker", amount_cents=1000)
        with pytest.raises(ControlError, match=r"seat 2 must first place a Player or Banker "
                           r"wager before the optional wager 'bonus_player'"):
            await c.call("place_wager", seat=2, wager="bonus_player", amount_cents=500)
        assert (await c.call("status"))["round"]["wagers"] == [
            {"seat": 3, "wager": "banker", "amount_cents": 1000}]
        await c.call("place_wager", seat=2, wager="player", amount_cents=1000)
        await c.call("place_wager", seat=2, wager="tie", amount_cents=500)
        await c.call("place_wager", seat=2, wager="bonus_player", amount_cents=500)
        await c.call("no_more_bets")
        await dealer.draw("9♠", "9♥", "9♦", "9♣")
        await dealer.reach("betting_open")
        (record,) = await c.call("rounds", limit=1)
    assert record["result"]["winner"] == "tie"
    assert sorted((s["seat"], s["wager"], s["outcome"], s["net_cents"])
                  for s in record["settlements"]) == [
        (2, "bonus_player", "win", 1500), (2, "player", "push", 0), (2, "tie", "win", 5000),
        (3, "banker", "push", 0)]


def test_a_royal_9_limit_other_than_its_denomination_is_refused_627b_3_f_g(tmp_path):
    """`max_cents = 600` on a $5 Royal 9 let a $6.00 wager onto the layout, and the first
    four cards then raised an error and left the table in `first_four_settled`."""
    data = tomllib.loads(CONFIG.read_text(encoding="utf-8"))
    rules = tomllib.loads((ROOT / "config" / "minibaccarat-royal9.toml").read_text(
        encoding="utf-8"))
    data.update({k: rules[k] for k in ("table", "game", "wagers")})
    data["table"]["seats"] = 9
    data["gpio"]["seats"] = {k: v for k, v in data["gpio"]["seats"].items() if int(k) <= 9}
    for bound, value in (("max_cents", 600), ("min_cents", 100)):
        wrong = {**data, "wagers": {**data["wagers"], "royal_9_progressive": {
            **data["wagers"]["royal_9_progressive"], bound: value}}}
        with pytest.raises(ConfigError) as refused:
            parse_config(wrong, "royal9.toml")
        assert (f"wagers.royal_9_progressive.{bound} = {value}: allowed: 500 only; a Royal 9 "
                "wager is exactly its $5 denomination (627b.3(f)-(g))") in str(refused.value)


async def test_a_royal_9_wager_above_its_denomination_is_refused_at_the_table_627b_3_f_g(
        tmp_path):
    """With the shipped limits a $6.00 Royal 9 wager is refused; the $5.00 one settles at
    the first four cards (627b.3(d)): K♥ 9♥ is a suited Royal 9 ($50, 627b.3(f)(1)) and a
    Player natural 9 ends the round."""
    table = devices()
    async with running(table_config(tmp_path, "minibaccarat-royal9.toml"), table) as c:
        dealer = Dealer(c, table)
        await dealer.open_to_betting(("3♠", "2♣", "2♣", "2♣"))
        await c.call("place_wager", seat=4, wager="banker", amount_cents=1000)
        with pytest.raises(ControlError, match="above the table maximum of 500 cents"):
            await c.call("place_wager", seat=4, wager="royal_9_progressive", amount_cents=600)
        await c.call("place_wager", seat=4, wager="royal_9_progressive", amount_cents=500)
        await c.call("no_more_bets")
        await dealer.draw("K♥", "2♦", "9♥", "4♣")  # P 9 natural, B 6
        await dealer.reach("betting_open")
        (record,) = await c.call("rounds", limit=1)
    assert [(s["wager"], s["outcome"], s["net_cents"], s["label"])
            for s in record["settlements"]] == [
        ("royal_9_progressive", "win", 5000, "Any Suited Royal 9"),
        ("banker", "lose", -1000, "Player wins")]
