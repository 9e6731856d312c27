"""Issue 2's first HIL scenario: one full 8-deck shoe through the daemon process.

The daemon runs as its own process, opening the simulated shoe's
pseudo-terminal with pyserial, the simulated shuffler through pyusb and the
lock-out button through gpiozero's mock pins. Everything asserted here is
recomputed from the regulation independently of the rules engine
(hil/oracle.py types Table 1 in again and recomputes every payout).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cards import Card
from controller.rules.card_values import burn_value
from hil.oracle import check_round, expected_draws, expected_net, points
from hil.table_harness import TableHarness

pytestmark = [pytest.mark.hil, pytest.mark.timeout(600)]

CONFIG = Path(__file__).parents[1] / "config" / "simulated-table.toml"

@pytest.fixture(scope="module")
def played_shoe(tmp_path_factory):
    import asyncio

    workdir = tmp_path_factory.mktemp("full-shoe")

    async def play():
        async with TableHarness(CONFIG, workdir, seed=2026) as table:
            result = await table.play(shoes=1)
            rounds = await table.call("rounds", limit=1000)
            chain = await table.call("verify_chain")
            return result, rounds, chain, (await table.call("status"))["storage"]

    return asyncio.run(play())


def played(rounds: list[dict]) -> list[tuple[object, object, object]]:
    """What a shoe's stored rounds were: each one's cards, result and settlements."""
    return [(r["cards"], r["result"], r["settlements"]) for r in rounds]


def test_every_card_the_shoe_dealt_is_accounted_for_631a_5_f_631a_10_d(played_shoe):
    result, rounds, _, _ = played_shoe
    (stack, cover_at), = result.stacks
    burn = [e["payload"] for e in result.events if e["kind"] in ("burn_first_card", "burn_card")]
    first = burn[0]["card"]
    burned = 1 + burn[0]["burn"]
    assert len(burn) == burned == 1 + burn_value(Card.parse(first))  # 631a.5(f)
    dealt = [c["card"] for r in rounds for c in r["cards"]]
    # The cards in play are exactly the stack after the burn, in order, none skipped.
    assert [str(c) for c in stack[:burned]][0] == first
    assert dealt == [str(c) for c in stack[burned:burned + len(dealt)]]
    assert result.cards_drawn_by_shoe == [burned + len(dealt)]
    # 631a.10(d): the round in which the cover card appeared, then exactly one more.
    cards_before_cover = cover_at - burned
    cumulative, round_of_cover = 0, None
    for number, r in enumerate(rounds, start=1):
        cumulative += len(r["cards"])
        if round_of_cover is None and cumulative >= cards_before_cover:
            round_of_cover = number if cumulative > cards_before_cover else number + 1
    assert len(rounds) == round_of_cover + 1
    assert len(rounds) > 60  # a full 8-deck shoe, not a short run


def test_every_round_draws_by_table_1_631a_11(played_shoe):
    _, rounds, _, _ = played_shoe
    for r in rounds:
        assert check_round(r) == []
        player = [c["card"] for c in r["cards"] if c["hand"] == "player"]
        banker = [c["card"] for c in r["cards"] if c["hand"] == "banker"]
        # 631a.9(c): P, B, P, B, then the Player's third before the Banker's.
        assert [c["hand"] for c in r["cards"][:4]] == ["player", "banker", "player", "banker"]
        assert expected_draws(player, banker) == (len(player) == 3, len(banker) == 3), r
        assert r["result"]["player_total"] == points(player)
        assert r["result"]["banker_total"] == points(banker)


def test_every_payout_recomputed_and_the_table_balances_to_the_cent(played_shoe):
    result, rounds, _, _ = played_shoe
    placed = sorted((seat, wager, amount) for _, seat, wager, amount in result.wagers_placed)
    settled = sorted((s["seat"], s["wager"], s["amount_cents"])
                     for r in rounds for s in r["settlements"])
    assert settled == placed  # every accepted wager settled once, none invented
    table_total = seats_total = 0
    for r, live in zip(rounds, result.rounds, strict=True):
        p, b = r["result"]["player_total"], r["result"]["banker_total"]
        for s in r["settlements"]:
            net, vig = expected_net(s["wager"], s["amount_cents"], p, b)
            assert (s["net_cents"], s["vigorish_cents"]) == (net, vig), (r["round_id"], s)
            seats_total += s["net_cents"]
        assert live["table_net_cents"] == -sum(s["net_cents"] for s in r["settlements"])
        table_total += live["table_net_cents"]
    assert table_total + seats_total == 0
    assert seats_total != 0  # the shoe really moved money


def test_the_event_log_chain_verifies(played_shoe):
    _, _, chain, _ = played_shoe
    assert chain["entries"] > 500


def test_a_dealer_drawing_the_first_four_cards_at_once_plays_the_same_shoe_631a_9_c(
        played_shoe, tmp_path):
    """deal_ahead (the shoe benchmark's dealer): at a round's first 'deal' prompt the four
    cards 631a.9(c) deals in a fixed order come out together; the daemon places them as it
    places cards drawn prompt by prompt, so the same seed plays the same shoe to the cent."""
    import asyncio

    _, rounds, _, _ = played_shoe
    drawn_at_prompt: list[tuple[int, int]] = []  # (round, cards out of the shoe) at B1's prompt

    async def play():
        table = TableHarness(CONFIG, tmp_path, seed=2026, deal_ahead=True, on_event=lambda e: (
            drawn_at_prompt.append((e["round_id"], table.shoe.drawn))
            if e["kind"] == "prompt" and e["payload"].get("next") == "banker_first" else None))
        async with table:
            await table.play(shoes=1)
            assert not table._dealt_ahead  # every card drawn ahead met its prompt
            return await table.call("rounds", limit=1000)

    ahead = asyncio.run(play())
    assert played(ahead) == played(rounds)
    assert len(drawn_at_prompt) == len(rounds)
    for r, (round_id, drawn) in zip(ahead, drawn_at_prompt, strict=True):
        assert round_id == r["round_id"]
        # When the prompt for the Banker's first card is read, all four are out already.
        assert drawn >= r["cards"][3]["index"] + 1


def test_a_table_whose_flush_runs_in_a_thread_of_its_own_plays_the_same_shoe_C30(
        played_shoe, tmp_path):
    """docs/rulings.md C30: by default the daemon's event loop flushes on its own thread;
    `[store] flush_in = "thread"` gives the flush a thread of its own (each flush's thread is
    tests/controller/test_group_commit.py's), and the same seed plays the same shoe to the
    cent, its chain whole."""
    import asyncio

    _, rounds, _, storage = played_shoe
    # The loop's own thread, unless a flush as slow as 500 ms (a loaded machine's disk
    # once took 523 ms) moved the later ones to a thread: then the status says so.
    assert storage["flush_in"] == ("thread" if "flush_moved_after_ms" in storage else "loop")
    assert storage.get("flush_moved_after_ms", 500.0) >= 500.0

    async def play():
        async with TableHarness(CONFIG, tmp_path, seed=2026,
                                extra_overrides=["store.flush_in=thread"]) as table:
            await table.play(shoes=1)
            return (await table.call("rounds", limit=1000), await table.call("verify_chain"),
                    (await table.call("status"))["storage"])

    threaded, chain, storage = asyncio.run(play())
    assert storage["flush_in"] == "thread"
    assert played(threaded) == played(rounds)
    assert chain["entries"] > 500


@pytest.mark.parametrize(("player", "banker", "draws"), [
    (["2♣", "3♥", "8♣"], ["3♦", "K♠"], (True, False)),  # Table 1 row 3, column 8: S
    (["2♣", "3♥", "9♣"], ["3♦", "K♠"], (True, True)),  # row 3, column 9: D
    (["2♣", "4♥"], ["3♦", "2♠", "5♣"], (False, True)),  # 631a.11(c)(1): Banker 5 draws
    (["9♣", "K♥"], ["3♦", "2♠"], (False, False)),  # 631a.11(a): a Natural stops both
])
def test_the_independent_oracle_itself_631a_11(player, banker, draws):
    """The checks above can fail: the oracle disagrees with a wrong draw."""
    assert expected_draws(player, banker) == draws
    assert expected_draws(player, banker) != (not draws[0], draws[1])


def test_the_independent_payout_oracle_631a_13():
    assert expected_net("banker", 1000, 6, 7) == (950, 50)
    assert expected_net("banker", 1010, 6, 7) == (959, 51)  # 50.5¢ of vigorish rounds up
    assert expected_net("player", 1000, 6, 7) == (-1000, 0)
    assert expected_net("tie", 500, 4, 4) == (4000, 0)
    assert expected_net("banker", 500, 4, 4) == (0, 0)
