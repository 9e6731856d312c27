"""Property: whatever configuration validates and whatever the shoe deals, every round's
record is the sum of its logged settlements, and nothing throws.

Each example is a Rules Submission generated from the submission schema
(`controller.rules.submission` and the wager registry): a game family of the four
chapters (631a Baccarat, Minibaccarat with the 631c/627b side wagers, 21 Baccarat of
681a) and variant, a deck count the family allows, every paytable letter a wager
accepts (one letter per ONE_PAYTABLE_GROUPS group), and the game and wager options the
parser accepts (rounding, vigorish collection and rounding, Tie odds, 631a.15(c)
disposition, cut, 681a drawing and naturals rules, House Money ride, Lucky Six 6-6 tie,
Heavenly 9 mystery, Royal 9 denomination, mystery and suited-tie reading, Harmony
reseed, Majestic Match without a base wager, the Rising Phoenix Banker). Wager limits
are random within what validation allows (a Royal 9 limit is its denomination,
627b.3(f)-(g); a Heavenly 9 minimum at least $5, 631c.2(c)).

A random shoe is then dealt to the live table (`controller.table.table.Table` on a real
store) and, card for card, to `tablectl simulate`'s engine
(`controller.rules.dealing.ShoeDealing`): a few rounds with random wagers at random
seats and amounts within the limits (base wager first, docs/rulings.md C15/C21),
"no more bets" or the first card locking (C1), and at most one irregularity: a card
lost mid-round (C7: an index gap, or a `shoe_index_gap` fault the supervisor
acknowledges), a card found face up (631a.15(d), 681a.9(a)), or the shoe's last card
before the round is complete (631a.15(e): the shoe is numbered so that its end comes
within a few rounds). Then:

- no step throws, every wager the configuration allows is accepted, and the table
  ends between rounds (`betting_open`) or at the end of the shoe, never wedged;
- every round's stored settlements are its logged ones: `settled_first_four_cards`
  then `settled_end_of_round` (= `round_settled`) for a settled round;
  `settled_first_four_cards` then a return (`push`) for every other wager
  (= `round_void`) for a void one, so a settlement made at the first four cards
  stands (C7);
- every wager of a round is settled exactly once, and the seat totals are the sums of
  the rounds' settlements;
- simulate's engine records the same rounds (cards, outcome, every settlement).

Runs 40 examples, derandomized (the same every run, a few seconds). A longer run:
`TABLE_PROPERTY_EXAMPLES=2000 .venv/bin/python -m pytest -q
tests/controller/test_property_rounds.py`; `TABLE_PROPERTY_SEED=N` draws other
examples (N is printed with a failure and replays it).
"""

from __future__ import annotations

import os
import random
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, event, given, seed, settings
from hypothesis import strategies as st

from cards import BackColour, shoe_of
from controller.rules.dealing import Bet, Draw, Lock, ShoeDealing
from controller.rules.game import Game, build_game
from controller.rules.money import Rounding
from controller.rules.procedure import BASE_WAGERS, BASE_WAGERS_21
from controller.rules.registry import REGISTRY
from controller.rules.settlement import PlacedWager
from controller.rules.side.royal9 import ROYAL_9_MINIMUM_RESETS
from controller.rules.submission import (
    COMMON_WAGER_KEYS, DECKS, DISCLOSED_THIRD, DRAW_RULES, FAMILIES, MIN_COVER_FROM_BOTTOM, MIN_CUT_CARDS,
    NATURAL_RULES, ONE_PAYTABLE_GROUPS, SEATS, VARIANTS, VIG_COLLECTION, parse_submission,
)
from controller.memory.store import Store
from controller.table.machine import TableState
from controller.table.rules_seam import RulesAdapter
from controller.table.table import Table
from drivers.protocols import CardDrawn, DeviceFault, ShuffleComplete

EXAMPLES = int(os.environ.get("TABLE_PROPERTY_EXAMPLES", "40"))
SEED = os.environ.get("TABLE_PROPERTY_SEED")
ROUNDINGS = [r.value for r in Rounding]
IRREGULARITIES = ("none", "gap", "gap_in_fault", "face_up", "shoe_runs_out")
BETWEEN_ROUNDS = (TableState.BETTING_OPEN, TableState.END_OF_SHOE)


def _limits(draw: st.DrawFn, key: str, options: dict[str, Any]) -> dict[str, int]:
    if key == "royal_9_progressive":  # 627b.3(f)-(g): exactly the denomination
        denomination = options["denomination_dollars"] * 100
        return {"min_cents": denomination, "max_cents": denomination}
    low = draw(st.sampled_from([100, 500, 1000, 2500]))
    if key == "heavenly_9_progressive":  # 631c.2(c): no less than $5
        low = max(low, 500)
    return {"min_cents": low, "max_cents": low * draw(st.sampled_from([1, 3, 40, 2000]))}


def _options(draw: st.DrawFn, key: str, family: str, decks: int) -> dict[str, Any]:
    """Values for the wager's own options (the registry's `WagerSpec.options`)."""
    if key == "house_money":
        return {"ride_percent": draw(st.sampled_from([1, 50, 100]))}
    if key == "lucky_six":
        return {"six_six_tie": draw(st.sampled_from(["loses", "returned"]))}
    if key == "banker" and family == "minibaccarat" and decks in (6, 8):  # 627b.4(f)
        return {"rising_phoenix": draw(st.booleans())}
    if key in ("majestic_match_player", "majestic_match_banker"):
        return {"without_base_wager": draw(st.booleans())}
    if key == "harmony_progressive":
        return draw(st.sampled_from([{}, {"reseed_cents": 50_000}]))
    if key == "heavenly_9_progressive":
        mystery = draw(st.sampled_from([None, "A", "B", "C", "D"]))
        return {} if mystery is None else {
            "mystery": mystery, "mystery_wager_dollars": draw(st.sampled_from([1, 2, 5]))}
    if key == "royal_9_progressive":
        dollars = draw(st.sampled_from([1, 5]))
        meters = {level: {"reset_cents": floor, "increment_percent": "0.5"}
                  for level, floor in ROYAL_9_MINIMUM_RESETS[dollars * 100].items()}
        options: dict[str, Any] = {
            "denomination_dollars": dollars, "meters": meters,
            "suited_tie_over_personal": draw(st.booleans())}
        mystery = draw(st.sampled_from([None, 1, 2, 3]))
        if mystery is not None:
            options["mystery"] = mystery
        return options
    return {}


@st.composite
def submissions(draw: st.DrawFn) -> dict[str, Any]:
    """A Rules Submission the parser accepts, drawn from its schema."""
    family = draw(st.sampled_from(FAMILIES))
    is21 = family == "21-baccarat"
    variant = "standard" if is21 else draw(st.sampled_from(VARIANTS))
    decks = draw(st.sampled_from(DECKS[family]))
    lo, hi = SEATS[family]
    game: dict[str, Any] = {
        "family": family, "decks": decks, "variant": variant,
        "payout_rounding": draw(st.sampled_from(ROUNDINGS)), "squeeze": draw(st.booleans()),
        "cut": {"min_cut_cards": draw(st.integers(MIN_CUT_CARDS, 100)),
                "cover_card_from_bottom": draw(st.integers(MIN_COVER_FROM_BOTTOM[family], 200))}}
    if is21:
        game["drawing"] = {"rule": draw(st.sampled_from(DRAW_RULES))}
        game["naturals"] = {"rule": draw(st.sampled_from(NATURAL_RULES))}
    else:
        game["irregularities"] = {"disclosed_player_third": draw(st.sampled_from(DISCLOSED_THIRD))}
        if variant == "standard":
            game["vigorish"] = {"rate_percent": 5,
                                "collection": draw(st.sampled_from(VIG_COLLECTION)),
                                "round_up_to_25c": draw(st.booleans()),
                                "rounding": draw(st.sampled_from(ROUNDINGS))}
        tie_odds = ["8 to 1"] if variant == "commission-free" else ["8 to 1", "9 to 1"]
        game["tie"] = {"odds": draw(st.sampled_from(tie_odds))}
    letters: dict[str, str] = {}
    for keys, sections in ONE_PAYTABLE_GROUPS:
        spec = REGISTRY.lookup(keys[0], family, variant)
        if family in sections and spec is not None:
            letter = draw(st.sampled_from(spec.allowed_paytables(decks)))
            letters.update({key: letter for key in keys})
    wagers: dict[str, dict[str, Any]] = {}
    for key in REGISTRY.keys_for(family, variant):
        if key not in ("player", "banker") and not draw(st.booleans()):
            continue
        if key.startswith("rising_phoenix_") and decks not in (6, 8):
            continue  # 627b.4(f): Rising Phoenix is played with six or eight decks
        spec = REGISTRY.lookup(key, family, variant)
        assert spec is not None
        options = {name: value for name, value in _options(draw, key, family, decks).items()
                   if name in spec.options or name in COMMON_WAGER_KEYS}
        wager: dict[str, Any] = {**options, **_limits(draw, key, options)}
        allowed = spec.allowed_paytables(decks)
        if allowed:
            wager["paytable"] = letters.get(key) or draw(st.sampled_from(allowed))
        wagers[key] = wager
    game["fully_automated"] = "lucky_nines" in wagers or draw(st.booleans())  # 631c.4(a)
    return {"table": {"id": "PROP", "seats": draw(st.integers(lo, min(hi, 10)))},
            "game": game, "wagers": wagers}


def round_wagers(draw: st.DrawFn, game: Game) -> list[PlacedWager]:
    """Wagers at one to three seats, each seat's base wager first (C15, C21)."""
    submission = game.submission
    base = BASE_WAGERS_21 if game.config.is_21 else BASE_WAGERS
    offered = list(game.wager_rules)
    placed: list[PlacedWager] = []
    for seat in draw(st.lists(st.integers(1, submission.table.seats), max_size=3, unique=True)):
        keys = draw(st.lists(st.sampled_from(offered), min_size=1, max_size=4))
        bases = [k for k in keys if k in base]
        others = [k for k in keys if k not in base]
        if not bases and not all(game.submission.wager(k).without_base_wager for k in others):
            bases = [draw(st.sampled_from(sorted(base & set(offered))))]
        for key in bases + others:
            wc = submission.wager(key)
            assert wc is not None and wc.min_cents is not None and wc.max_cents is not None
            placed.append(PlacedWager(seat, key, draw(st.integers(wc.min_cents, wc.max_cents))))
    return placed


class Dealing:
    """One shoe dealt to the live table and to simulate's engine, card for card."""

    def __init__(self, table: Table, sim: ShoeDealing, stack: list[Any], start: int) -> None:
        self.table, self.sim, self.stack, self.index = table, sim, stack, start
        self.shoe_size = sim.game.shoe_size

    @property
    def cards_left(self) -> bool:
        return self.index < self.shoe_size

    def card(self, face_up: bool = False) -> None:
        card = self.stack[self.index]
        self.table.handle(CardDrawn("shoe", self.index, card, BackColour.RED, face_up))
        self.sim.apply(Draw(self.index, card, face_up))
        self.index += 1

    def lose_a_card(self, in_fault: bool) -> None:
        """C7: a card leaves the shoe unseen; the next one shows the gap."""
        self.sim.apply(Draw(self.index, self.stack[self.index], lost=True))
        self.index += 1
        if not self.cards_left:
            return
        if in_fault:  # what drivers/shoe.py reports, then the supervisor's ruling
            self.table.handle(DeviceFault("shoe", "shoe_index_gap", "card index jumped",
                                          "Stop dealing"))
            self.card()
            self.table.cmd_acknowledge_fault("floor")
        else:
            self.card()


def deal(data: st.DataObject, table: Table, sim: ShoeDealing, game: Game) -> None:
    irregularity = data.draw(st.sampled_from(IRREGULARITIES), label="irregularity")
    stack = shoe_of(game.config.decks)
    random.Random(data.draw(st.integers(0, 2**32), label="shuffle")).shuffle(stack)
    start = (game.shoe_size - data.draw(st.integers(12, 40), label="cards left")
             if irregularity == "shoe_runs_out" else 0)
    dealing = Dealing(table, sim, stack, start)
    table.cmd_open()
    table.cmd_shuffle(game.config.decks)
    table.handle(ShuffleComplete("shuffler", BackColour.RED, game.shoe_size, 0, 0, 0))
    table.on_shoe_loaded()
    while table.state is TableState.BURN and dealing.cards_left:
        dealing.card()
    rounds = data.draw(st.integers(1, 5), label="rounds")
    odd_round = data.draw(st.integers(1, rounds), label="irregular round")
    # Mostly after the first four cards, where a void meets settlements already made (C7).
    odd_card = data.draw(st.sampled_from([0, 1, 2, 3, 4, 4, 4, 5, 5]),
                         label="cards before the irregularity")
    for n in range(1, rounds + 1):
        if table.state is not TableState.BETTING_OPEN or not dealing.cards_left:
            break
        wagers = round_wagers(data.draw, game)
        for w in wagers:
            table.cmd_place_wager(w.seat, w.wager, w.amount_cents)  # refused: a failure
        sim.apply(Bet(tuple(wagers)))
        if not wagers or data.draw(st.booleans(), label="no more bets"):
            table.cmd_no_more_bets()
            sim.apply(Lock())
        dealt = 0
        while dealing.cards_left and (dealt == 0 or table.state not in BETWEEN_ROUNDS):
            if n == odd_round and dealt == odd_card and irregularity in ("gap", "gap_in_fault"):
                dealing.lose_a_card(in_fault=irregularity == "gap_in_fault")
                irregularity = "done"
            elif n == odd_round and dealt == odd_card and irregularity == "face_up":
                dealing.card(face_up=True)
                irregularity = "done"
            else:
                dealing.card()
            dealt += 1


def logged_settlements(store: Store) -> dict[int, dict[str, list[dict[str, Any]]]]:
    by_round: dict[int, dict[str, list[dict[str, Any]]]] = {}
    for kind in ("settled_first_four_cards", "settled_end_of_round", "round_settled",
                 "round_void"):
        for entry in store.events(kind=kind, limit=100_000):
            assert entry.round_id is not None
            by_round.setdefault(entry.round_id, {}).setdefault(kind, []).extend(
                entry.payload["settlements"])
    return by_round


def check_records(store: Store) -> None:
    records = store.rounds(limit=100_000)
    logged = logged_settlements(store)
    for record in records:
        assert record["state"] in ("settled", "void"), record
        log = logged.get(record["round_id"], {})
        first_four = log.get("settled_first_four_cards", [])
        event(f"{record['state']} round" + (" with first-four settlements" if first_four
                                              else ""))
        if record["state"] == "settled":
            assert record["settlements"] == log["round_settled"]
            assert record["settlements"] == first_four + log.get("settled_end_of_round", [])
        else:
            assert record["settlements"] == log["round_void"]
            assert record["settlements"][:len(first_four)] == first_four  # C7: they stand
            assert all(s["outcome"] == "push" and s["net_cents"] == 0
                       for s in record["settlements"][len(first_four):])
        if not record["result"] or not record["result"].get("wagers_stand"):
            assert Counter((s["seat"], s["wager"], s["amount_cents"])
                           for s in record["settlements"]) == Counter(
                (w["seat"], w["wager"], w["amount_cents"]) for w in record["wagers"])
    net: Counter[int] = Counter()
    wagered: Counter[int] = Counter()
    for record in records:
        for s in record["settlements"]:
            net[s["seat"]] += s["net_cents"]
            wagered[s["seat"]] += s["amount_cents"]
    totals = store.seat_totals()
    assert {seat: (t["net_cents"], t["wagered_cents"]) for seat, t in totals.items()} == {
        seat: (net[seat], wagered[seat]) for seat in totals}
    assert set(totals) == set(net)


def live_round(record: dict[str, Any]) -> tuple[Any, ...]:
    void = record["state"] == "void"
    return (record["round_no"], record["simulated"], void,
            [(c["card"], c["hand"]) for c in record["cards"]],
            "void" if void else record["result"]["winner"],
            [(s["wager"], s["amount_cents"], s["outcome"], s["win_cents"], s["vigorish_cents"],
              s["net_cents"] - s["vig_marked_cents"], s["section"])
             for s in record["settlements"]])


def simulated_round(record: dict[str, Any]) -> tuple[Any, ...]:
    return (record["round"], record["simulated"], record["void"],
            [(c["card"], c["hand"]) for c in record["cards"]
             if c["hand"] in ("player", "banker", "extra")],
            record["outcome"],
            [(s["wager"], s["amount_cents"], s["outcome"], s["win_cents"], s["vigorish_cents"],
              s["net_cents"], s["section"]) for s in record["settlements"]])


def _settings(test: Any) -> Any:
    configured = settings(max_examples=EXAMPLES, deadline=None, derandomize=SEED is None,
                          suppress_health_check=[HealthCheck.too_slow,
                                                 HealthCheck.data_too_large],
                          print_blob=True)(test)
    return seed(int(SEED))(configured) if SEED is not None else configured


@_settings
@given(rules=submissions(), data=st.data())
def test_every_round_record_is_its_logged_settlements_and_nothing_throws_631a_15_e(
        rules: dict[str, Any], data: st.DataObject) -> None:
    """631a.15(e), 631a.15(d), 681a.9, docs/rulings.md C7: see the module's docstring."""
    submission = parse_submission(rules, "generated.toml")  # the generator's: must validate
    event(f"{submission.game.family} {submission.game.variant}")
    game = build_game(submission)
    vigorish = submission.game.vigorish
    with tempfile.TemporaryDirectory(prefix="table-property-") as folder:
        store = Store(Path(folder) / "table.sqlite")
        try:
            table = Table(table_id="PROP", seats=submission.table.seats, store=store,
                          rules=RulesAdapter(game),
                          vig_collection=vigorish.collection if vigorish else "at-payout")
            sim = ShoeDealing(game, 1)
            deal(data, table, sim, game)
            assert table.state in BETWEEN_ROUNDS, table.state
            check_records(store)
            sim_records = [simulated_round(r) for r in sim.records]
            assert [live_round(r) for r in store.rounds(limit=100_000)] == sim_records
        finally:
            store.close()
