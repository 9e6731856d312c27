"""`tablectl replay`: recorded cards dealt through the table's rules with chosen wagers, the
rounds in the simulate format (docs/simulate-format.md), a recorded round compared with what
the table settled; clear errors and exit codes (controller/cli/exitcodes.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from controller.cli import exitcodes
from controller.memory.store import Store
from tests.controller.test_table import betting

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "config"


def replay(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "controller.cli", "replay", *argv],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)


def records(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def money(record: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(s["seat"], s["wager"], s["amount_cents"], s["outcome"], s["win_cents"],
             s["net_cents"], s["section"]) for s in record["settlements"]]


def card_file(tmp_path: Path, *cards: str) -> str:
    path = tmp_path / "cards.txt"
    path.write_text("# the round in dispute\n" + "\n".join(cards) + "\n", encoding="utf-8")
    return str(path)


def test_681a_replay_of_9s_9h_9d_9c_pays_the_tie_and_the_bonus(tmp_path: Path) -> None:
    """681a.7: P 9♠ 9♦ = 18, B 9♥ 9♣ = 18, a tie at 10 to 1 (681a.8(b)); the Bonus on the
    Player's pair of nines pays 3 to 1 (681a.3(e)(5), paytable A); the Player wager is
    returned on equal totals (681a.7(i)(4))."""
    out = replay(str(CONFIG / "21-baccarat-4deck.toml"), "--cards",
                 card_file(tmp_path, "9♠", "9♥", "9♦", "9♣"), "--wager", "2:player:1000",
                 "--wager", "2:tie:500", "--wager", "2:bonus_player:500", "--json")
    assert out.returncode == exitcodes.OK, out.stderr
    (record,) = records(out.stdout)
    assert [(c["card"], c["hand"]) for c in record["cards"]] == [
        ("9♠", "player"), ("9♥", "banker"), ("9♦", "player"), ("9♣", "banker")]
    assert (record["player_total"], record["banker_total"], record["outcome"]) == (18, 18, "tie")
    assert money(record) == [
        (2, "tie", 500, "win", 5_000, 5_000, "681a.8(b)"),
        (2, "bonus_player", 500, "win", 1_500, 1_500, "681a.3(e)(5)"),
        (2, "player", 1_000, "push", 0, 0, "681a.7(i)(4)")]
    assert record["seat_net_cents"] == 6_500


def royal_9_with_seat_1_owning_ks9s(tmp_path: Path) -> str:
    text = (CONFIG / "progressive-royal9.toml").read_text(encoding="utf-8")
    text = text.replace('1 = "KC9C"', '1 = "KS9S"').replace('4 = "KC9S"', '4 = "KC9C"')
    path = tmp_path / "royal9.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("meter,label,win,minor_after", [
    ([], "Suited Royal 9 Tie Hand", 150_000, 45_007),
    (["--meter", "minor=200000"], "Personal King 9 on Player Hand (100% of the minor meter)",
     200_007, 45_000),
])
def test_627b_3_replay_of_the_suited_tie_with_a_personal_king_9_reads_the_meter(
        tmp_path: Path, meter: list[str], label: str, win: int, minor_after: int) -> None:
    """627b.3(e)(4), (e)(8), (f)(1) and docs/rulings.md (Royal 9): Player K♠ 9♠ is seat 1's
    King 9, Banker Q♠ 9♠ a suited Royal 9. At the Minor's reset the $1,500 is more and is
    paid (the meter keeps its 7.5-cent contribution); with the Minor standing at $2,000.00
    the meter is paid, 200,007 whole cents after the round's 7.5 (627b.3(f)(2))."""
    out = replay(royal_9_with_seat_1_owning_ks9s(tmp_path), "--cards",
                 card_file(tmp_path, "K♠", "Q♠", "9♠", "9♠"), "--wager", "1:banker:500",
                 "--wager", "1:royal_9_progressive:500", *meter, "--json")
    assert out.returncode == exitcodes.OK, out.stderr
    (record,) = records(out.stdout)
    (royal,) = [s for s in record["settlements"] if s["wager"] == "royal_9_progressive"]
    assert (royal["seat"], royal["amount_cents"], royal["outcome"], royal["win_cents"],
            royal["label"]) == (1, 500, "win", win, label)
    assert record["meters"]["minor"] == minor_after


def test_a_round_replayed_from_the_simulated_tables_store_equals_what_it_settled(
        tmp_path: Path) -> None:
    """The table (controller/table/table.py, the simulated table's rules) settles rounds into its
    store; `replay --store --round` deals the recorded cards with the recorded wagers and
    gets the table's settlements to the cent (631a.12(b) order, 631a.13(c) vigorish)."""
    path = tmp_path / "table.sqlite"
    store = Store(path)
    try:
        table, dealer = betting(store)
        table.cmd_place_wager(1, "banker", 1000)
        table.cmd_place_wager(2, "player", 2000)
        table.cmd_place_wager(3, "tie", 500)
        table.cmd_no_more_bets()
        dealer.draw("2♣", "3♦", "4♥", "4♠")  # P 6, B 7: Banker wins (631a.11)
        table.cmd_place_wager(4, "player", 2500)
        table.cmd_place_wager(4, "tie", 500)
        table.cmd_no_more_bets()
        dealer.draw("2♣", "3♦", "3♥", "K♠", "8♣")  # P 2+3+8 = 3, B 3: a tie (631a.13(b))
        settled = {r["round_id"]: r for r in store.rounds()}
    finally:
        store.close()
    assert sorted(settled) == [1, 2]
    for round_id, row in settled.items():
        out = replay(str(CONFIG / "simulated-table.toml"), "--store", str(path), "--round",
                     str(round_id), "--json")
        assert out.returncode == exitcodes.OK, out.stderr
        (record,) = records(out.stdout)
        assert [c["card"] for c in record["cards"]] == [c["card"] for c in row["cards"]]
        assert (record["shoe"], record["round"]) == (row["shoe_no"], row["round_no"])
        assert money(record) == [(s["seat"], s["wager"], s["amount_cents"], s["outcome"],
                                  s["win_cents"], s["net_cents"], s["section"])
                                 for s in row["settlements"]]
    assert money(records(replay(str(CONFIG / "simulated-table.toml"), "--store", str(path),
                                "--round", "2", "--json").stdout)[0]) == [
        (4, "tie", 500, "win", 4_000, 4_000, "631a.13(b)"),
        (4, "player", 2_500, "push", 0, 0, "631a.8(a)(2)(iii)")]
    # The human report says so, round by round.
    text = replay(str(CONFIG / "simulated-table.toml"), "--store", str(path), "--shoe", "1")
    assert text.returncode == exitcodes.OK, text.stderr
    assert "the table settled round 1 of shoe 1 (id 1) alike" in text.stdout
    assert "the table settled round 2 of shoe 1 (id 2) alike" in text.stdout


def test_a_replay_with_other_wagers_is_not_compared_and_a_differing_record_fails(
        tmp_path: Path) -> None:
    """A record whose settlement the rules do not give (edited, or from other rules) is
    reported wager by wager, exit 1 (exitcodes.FAILURE)."""
    sim = replay(str(CONFIG / "baccarat-8deck.toml"), "--cards",
                 card_file(tmp_path, "2♣", "3♦", "4♥", "4♠"), "--wager", "1:banker:2500",
                 "--json")
    (record,) = records(sim.stdout)
    record["settlements"][0]["win_cents"] = 2_000  # as if 1 to 2 had been paid
    edited = tmp_path / "record.jsonl"
    edited.write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
    out = replay(str(CONFIG / "baccarat-8deck.toml"), "--cards", str(edited))
    assert out.returncode == exitcodes.FAILURE
    assert "DIFFERS from the table's record" in out.stdout
    assert ("the table: seat 1, wager banker, amount_cents 2500, outcome win, win_cents "
            "2000, vigorish_cents 125; the replay: no such settlement") in out.stdout
    assert ("the replay: seat 1, wager banker, amount_cents 2500, outcome win, win_cents "
            "2500, vigorish_cents 125; the table: no such settlement") in out.stdout


@pytest.mark.parametrize("argv,message", [
    (["--cards", "CARDS:K♠|X♠"], "cards.txt:3: card 'X♠': rank 'X' is not one of A,2-10,J,Q,K"),
    (["--cards", "CARDS:K♠", "--wager", "1-banker-100"],
     "--wager '1-banker-100': expected SEAT:WAGER:CENTS, e.g. 1:banker:2500"),
    (["--cards", "CARDS:K♠", "--wager", "1:lucky_six:2500"],
     "--wager: wager 1:lucky_six:2500 refused: wager 'lucky_six' is not offered at this "
     "table (wagers offered: banker, player, tie, dragon_bonus_player, dragon_bonus_banker)"),
    (["--cards", "CARDS:K♠", "--wager", "15:banker:2500"], "seat 15 is not 1..14"),
    (["--cards", "CARDS:K♠", "--wager", "1:banker:100"],
     "wager 1:banker:100 refused: below the table minimum of 2500 cents"),
    (["--cards", "CARDS:K♠", "--wager", "1:dragon_bonus_player:2500"],
     "refused: seat 1 must first place a Banker, Player or Tie wager before the optional "
     "wager 'dragon_bonus_player' (631c.3(c))"),
    (["--cards", "missing.txt"], "cannot read"),
    # A card file saved in another encoding than UTF-8 raised UnicodeDecodeError.
    (["--cards", "LATIN1"], "latin1.txt: not UTF-8 text: byte 0xa7 at line 1, column 2; "
     "allowed: a text file in UTF-8"),
    (["--cards", "CARDS:9♠|2♥|9♥|3♦", "--out", "NOWHERE"],
     "--out: cannot write"),
    (["--store", "STORE"], "--store needs --round ID or --shoe N"),
    (["--cards", "CARDS:K♠", "--round", "3"], "--round and --shoe take their round from a "
     "table's store: give --store"),
])
def test_bad_input_is_named_with_what_is_allowed(tmp_path: Path, argv: list[str],
                                                 message: str) -> None:
    args = []
    for a in argv:
        if a.startswith("CARDS:"):
            a = card_file(tmp_path, *a.removeprefix("CARDS:").split("|"))
        elif a == "STORE":
            a = str(tmp_path / "none.sqlite")
        elif a == "missing.txt":
            a = str(tmp_path / "missing.txt")
        elif a == "LATIN1":
            (tmp_path / "latin1.txt").write_bytes(b"K\xa7\n# Jos\xe9's shoe\n")
            a = str(tmp_path / "latin1.txt")
        elif a == "NOWHERE":
            a = str(tmp_path / "no-folder" / "rounds.jsonl")
        args.append(a)
    out = replay(str(CONFIG / "baccarat-8deck.toml"), *args)
    assert out.returncode == exitcodes.BAD_ARGUMENTS
    assert message in out.stderr


def test_a_meter_the_progressive_does_not_have_is_named_with_its_meters(tmp_path: Path) -> None:
    out = replay(str(CONFIG / "progressive-royal9.toml"), "--cards",
                 card_file(tmp_path, "K♠"), "--meter", "grand=100")
    assert out.returncode == exitcodes.BAD_ARGUMENTS
    assert ("--meter: progressive royal9 has no meter 'grand'; its meters: mega, major, minor"
            in out.stderr)
    out = replay(str(CONFIG / "baccarat-8deck.toml"), "--cards", card_file(tmp_path, "K♠"),
                 "--meter", "minor=100")
    assert out.returncode == exitcodes.BAD_ARGUMENTS
    assert "has no [progressive.<name>] section" in out.stderr


def test_cards_that_end_in_the_middle_of_a_round_say_which_card_is_due(tmp_path: Path) -> None:
    """631a.10-631a.11: Player 2+3 = 5 draws; without a fifth card the round is incomplete."""
    out = replay(str(CONFIG / "baccarat-8deck.toml"), "--cards",
                 card_file(tmp_path, "9♣", "8♦", "K♥", "K♠", "2♣", "3♦", "3♥", "K♠"),
                 "--wager", "1:player:2500")
    assert out.returncode == exitcodes.FAILURE
    assert out.stdout.startswith("shoe 1 round   1: P 9 B 8 player net +$25.00")
    assert ("the cards end before round 2 is complete: the rules call for the player third "
            "card next") in out.stderr


def test_a_store_that_is_not_a_table_store_is_refused(tmp_path: Path) -> None:
    bogus = tmp_path / "notes.sqlite"
    bogus.write_text("not a database", encoding="utf-8")
    out = replay(str(CONFIG / "baccarat-8deck.toml"), "--store", str(bogus), "--round", "1")
    assert out.returncode == exitcodes.BAD_ARGUMENTS
    assert f"{bogus} is not a table store: it is not an SQLite database" in out.stderr


def test_627b_3_a_stored_round_with_a_progressive_wager_is_compared_on_its_other_wagers(
        ) -> None:
    """A table's round record holds its wagers' settlements, not the progressive's (its
    ledger does, docs/progressive.md): the replay settles the Royal 9 wager (627b.3(e)(1):
    Any Royal 9, $25 on $5) and compares the rest with the record."""
    import random

    from cards import Card
    from controller.progressive.config import load_progressive_config
    from controller.progressive.simulated import SimulatedProgressive
    from controller.rules.game import load_game
    from controller.rules.replay import RecordedRound, replay_rounds
    from controller.rules.settlement import PlacedWager

    path = CONFIG / "progressive-royal9.toml"
    cards = tuple((10 + i, Card.parse(c)) for i, c in enumerate(["K♥", "2♣", "9♦", "3♣"]))
    banker_loses = {"seat": 3, "wager": "banker", "amount_cents": 500, "outcome": "lose",
                    "win_cents": 0, "vigorish_cents": 0}
    recorded = RecordedRound(1, 4, cards, (PlacedWager(3, "banker", 500),
                                           PlacedWager(3, "royal_9_progressive", 500)),
                             recorded=(banker_loses,), recorded_state="settled")
    progressive = SimulatedProgressive(load_progressive_config(str(path)), random.Random(1))
    (done,) = replay_rounds(load_game(path), [recorded], progressive)
    assert done.differences == []
    assert money(done.record) == [
        (3, "banker", 500, "lose", 0, -500, "631a.8(a)(1)(ii)"),
        (3, "royal_9_progressive", 500, "win", 2_500, 2_500, "627b.3(e)(1)")]
    wrong = RecordedRound(1, 4, cards, recorded.wagers,
                          recorded=({**banker_loses, "outcome": "win"},),
                          recorded_state="settled")
    (done,) = replay_rounds(load_game(path), [wrong], progressive)
    assert done.differences == [
        "the table: seat 3, wager banker, amount_cents 500, outcome win, win_cents 0, "
        "vigorish_cents 0; the replay: no such settlement",
        "the replay: seat 3, wager banker, amount_cents 500, outcome lose, win_cents 0, "
        "vigorish_cents 0; the table: no such settlement"]


def test_replay_refuses_a_tie_alone_in_21_baccarat_681a_6_c_d(tmp_path: Path) -> None:
    """The table's own check (docs/rulings.md C21): in 21 Baccarat a Tie, and a Bonus on
    top of only a Tie, need a Player or Banker wager at the seat first."""
    out = replay(str(CONFIG / "21-baccarat-4deck.toml"), "--cards",
                 card_file(tmp_path, "9♠", "9♥", "9♦", "9♣"), "--wager", "2:tie:500",
                 "--wager", "2:bonus_player:500")
    assert out.returncode == exitcodes.BAD_ARGUMENTS, out.stdout
    assert "seat 2 must first place a Player or Banker wager before the optional wager 'tie' " \
           "(681a.6(c)-(d))" in out.stderr



def test_a_21_baccarat_record_whose_tie_won_is_read_back_with_its_tie_after_the_player(
        tmp_path: Path) -> None:
    """docs/simulate-format.md: a file of round records is replayed with each record's
    wagers. Settlements are in payment order, so a winning Tie comes before the Player
    wager it pushed; read back in that order, the Tie was refused as placed before a base
    wager (681a.6(c)-(d)) and a 21 Baccarat shoe of `tablectl simulate` could not be
    replayed from its third round on."""
    config = str(CONFIG / "21-baccarat-4deck.toml")
    dealt = replay(config, "--cards", card_file(tmp_path, "9♠", "9♥", "9♦", "9♣"),
                   "--wager", "2:player:1000", "--wager", "2:tie:500",
                   "--wager", "2:bonus_player:500", "--json")
    (record,) = records(dealt.stdout)
    assert [s["wager"] for s in record["settlements"]] == ["tie", "bonus_player", "player"]
    path = tmp_path / "record.jsonl"
    path.write_text(json.dumps(record, ensure_ascii=False) + "\n", encoding="utf-8")
    out = replay(config, "--cards", str(path), "--json")
    assert out.returncode == exitcodes.OK, out.stderr
    (again,) = records(out.stdout)
    assert money(again) == [
        (2, "tie", 500, "win", 5_000, 5_000, "681a.8(b)"),
        (2, "bonus_player", 500, "win", 1_500, 1_500, "681a.3(e)(5)"),
        (2, "player", 1_000, "push", 0, 0, "681a.7(i)(4)")]
    assert "alike" in replay(config, "--cards", str(path)).stdout

@pytest.mark.parametrize(("column", "value"), [("cards", "not json"), ("wagers", "[1]"),
                                               ("settlements", "[" * 100_000)])
def test_a_damaged_round_in_a_store_is_named_not_a_traceback(
        tmp_path: Path, column: str, value: str) -> None:
    """`replay --store` reads a copy of the evidence without the key: a round whose row was
    damaged or edited (here with plain sqlite3 around the digest triggers) stopped it on a
    JSONDecodeError, TypeError or RecursionError; it names the round and the check to run."""
    import sqlite3

    path = tmp_path / "table.sqlite"
    store = Store(path)
    try:
        table, dealer = betting(store)
        table.cmd_place_wager(1, "banker", 1000)
        table.cmd_no_more_bets()
        dealer.draw("2♣", "3♦", "4♥", "4♠")
    finally:
        store.close()
    db = sqlite3.connect(path)
    triggers = db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND "
                          "tbl_name = 'rounds'").fetchall()
    for name, _ in triggers:
        db.execute(f'DROP TRIGGER "{name}"')
    db.execute(f"UPDATE rounds SET {column} = ? WHERE round_id = 1", (value,))
    for _, sql in triggers:
        db.execute(sql)
    db.commit()
    db.close()
    out = replay(str(CONFIG / "simulated-table.toml"), "--store", str(path), "--round", "1")
    assert out.returncode == exitcodes.BAD_ARGUMENTS, out.stderr
    said = " ".join(out.stderr.split())
    assert f"{path}: round id 1 cannot be read from the store (" in said, said
    assert said.endswith(f"the store may be damaged or edited: check it with 'tablectl "
                         f"events verify --store {path}'"), said
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize(("line", "said"), [
    ("1:banker:" + "9" * 5000, "'1:banker:999999999999999999...9999999999999999999999999999': "
     "the seat and the cents are whole numbers of at most 3 and 12 digits (SEAT:WAGER:CENTS, "
     "e.g. 1:banker:2500)"),
    ("1:" + "x" * 100_000 + ":100", "'1:xxxxxxxxxxxxxxxxxxxxxxxxx...xxxxxxxxxxxxxxxxxxxxxxxx:100':"
     " the wager is a name of 1 to 64 characters (SEAT:WAGER:CENTS, e.g. 1:banker:2500)"),
    ("1::100", "'1::100': the wager is a name of 1 to 64 characters"),
    ("\u00b9:banker:100", "'\u00b9:banker:100': the seat and the cents are whole numbers")])
def test_a_wager_line_too_long_to_be_one_is_refused_by_its_start_and_end(
        tmp_path: Path, line: str, said: str) -> None:
    """A wagers file's line: an amount of 5,000 digits raised Python's own int() limit (a
    traceback), and a 100,000-character wager name was quoted whole in the refusal."""
    wagers = tmp_path / "wagers.txt"
    wagers.write_text(line + "\n", encoding="utf-8")
    out = replay(str(CONFIG / "simulated-table.toml"), "--cards",
                 card_file(tmp_path, "KS", "QH", "2C", "3D", "4S", "5H"), "--wagers", str(wagers))
    assert out.returncode == exitcodes.BAD_ARGUMENTS, out.stderr
    assert f"tablectl replay: {wagers}:1: {said}" in " ".join(out.stderr.split())
    assert len(out.stderr) < 400 and "Traceback" not in out.stderr
