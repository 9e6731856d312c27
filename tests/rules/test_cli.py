"""tablectl par-sheet / simulate / config validate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controller.cli import exitcodes, main

from tests.rules.helpers import CONFIG


def test_config_validate_ok(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "validate", str(CONFIG / "baccarat-8deck.toml")]) == exitcodes.OK
    assert "valid" in capsys.readouterr().out


def test_config_validate_bad_prints_every_error(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[table]\nid = "x"\nseats = 3\n[game]\nfamily = "baccarat"\ndecks = 2\n'
                   '[game.vigorish]\ncollection = "at-payout"\n[wagers.banker]\n[wagers.player]\n')
    assert main(["config", "validate", str(bad)]) == exitcodes.BAD_CONFIGURATION
    out = capsys.readouterr().out
    assert "table.seats = 3" in out and "game.decks = 2" in out and str(bad) in out


def test_par_sheet_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["par-sheet", str(CONFIG / "baccarat-ez.toml"), "--json"]) == exitcodes.OK
    obj = json.loads(capsys.readouterr().out)
    keys = [w["key"] for w in obj["wagers"]]
    assert keys == ["banker", "player", "tie", "dragon_7", "panda_8"]
    assert round(obj["wagers"][3]["house_edge"]["decimal"] * 100, 4) == 7.6113


def test_par_sheet_human(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["par-sheet", str(CONFIG / "baccarat-8deck.toml")]) == exitcodes.OK
    assert "house edge 1.0579%" in capsys.readouterr().out


def test_par_sheet_bad_config(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[table]\n")
    assert main(["par-sheet", str(bad)]) == exitcodes.BAD_CONFIGURATION


@pytest.mark.parametrize("name", ["baccarat-8deck.toml", "baccarat-house-money.toml",
                                  "21-baccarat-4deck.toml"])
def test_simulate_json_rounds(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(CONFIG / name), "--shoes", "2", "--seed", "5", "--json"]) == 0
    rounds = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {r["shoe"] for r in rounds} == {1, 2}
    for shoe in (1, 2):
        mine = [r for r in rounds if r["shoe"] == shoe]
        assert mine[0]["cards"][0]["hand"] == "burn"  # 631a.5(f) / 681a.7(c)
        assert sum(r["cover_card"] for r in mine) == 1  # 631a.10(d) / 681a.7(d)
        if name.startswith("21"):
            assert mine[-1]["cover_card"]  # 681a.5(f): reshuffle after that round
        else:
            assert mine[-2]["cover_card"] and mine[-1]["last_hand"]  # one more round
    for r in rounds:
        assert r["seat_net_cents"] == sum(s["net_cents"] for s in r["settlements"])
        assert all(c["hand"] in {"player", "banker", "burn", "extra"} for c in r["cards"])


def test_simulate_same_seed_same_cards(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["simulate", str(CONFIG / "baccarat-ez.toml"), "--shoes", "1", "--seed", "9", "--json"]
    main(args)
    first = capsys.readouterr().out
    main(args)
    assert capsys.readouterr().out == first


def test_simulate_human(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(CONFIG / "baccarat-6deck-marked-vig.toml")]) == 0
    assert "seat net over all rounds" in capsys.readouterr().out


@pytest.mark.parametrize("unit_cents", ["10000", "100"])
def test_simulate_royal_9_stakes_its_denomination(unit_cents: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """627b.3(f): a $5 Royal 9 wager is exactly $5 whatever --unit-cents says; the other wagers
    stay within their table limits (min_cents..max_cents of the submission)."""
    assert main(["simulate", str(CONFIG / "minibaccarat-royal9.toml"), "--shoes", "1",
                 "--seed", "2", "--unit-cents", unit_cents, "--json"]) == exitcodes.OK
    rounds = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    stakes = {s["wager"]: s["amount_cents"] for r in rounds for s in r["settlements"]}
    expected_main = 10000 if unit_cents == "10000" else 1000  # banker/player min_cents = 1000
    assert stakes["royal_9_progressive"] == 500
    assert stakes["banker"] == stakes["player"] == expected_main


@pytest.mark.parametrize("name,key,section,edge,mystery", [
    ("progressive-harmony-linked.toml", "harmony", "627b.6", "45.0407", None),
    ("progressive-heavenly9-mystery.toml", "heavenly9", "631c.2", "27.1337", "1.0000"),
    ("progressive-royal9.toml", "royal9", "627b.3", "29.6321", None),
])
def test_par_sheet_includes_progressives_of_the_progressive_sections(
        name: str, key: str, section: str, edge: str, mystery: str | None,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A progressive declared under [progressive.<name>] (not [wagers]) is on the par sheet,
    with its meter at reset and its configured Must-Hit-By mystery (631c.6(c)(4))."""
    assert main(["par-sheet", str(CONFIG / name), "--json"]) == exitcodes.OK
    wagers = {w["key"]: w for w in json.loads(capsys.readouterr().out)["wagers"]}
    assert wagers[key]["section"] == section
    assert f"{wagers[key]['house_edge']['decimal'] * 100:.4f}" == edge
    contribution = wagers[key]["mystery"]
    assert (None if contribution is None
            else f"{contribution['expected_contribution']['decimal'] * 100:.4f}") == mystery


@pytest.mark.parametrize("reading,edge", [("greater", "29.632122"), ("meter", "29.882725"),
                                          ("fixed", "29.632122")])
def test_627b_3_e_4_royal_9_par_of_each_suited_tie_reading(
        reading: str, edge: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """docs/rulings.md, Royal 9: the par of config/progressive-royal9.toml ($5, eight decks,
    seat 1's King 9 K♣9♣, meters at their resets) under each `suited_tie_personal`; at the
    resets "greater" pays as "fixed"."""
    text = (CONFIG / "progressive-royal9.toml").read_text(encoding="utf-8")
    assert '1 = "KC9C"' in text
    config = tmp_path / "royal9.toml"
    config.write_text(text.replace('[progressive.royal9]\n', '[progressive.royal9]\n'
                                   f'suited_tie_personal = "{reading}"\n', 1), encoding="utf-8")
    assert main(["par-sheet", str(config), "--json"]) == exitcodes.OK
    wagers = {w["key"]: w for w in json.loads(capsys.readouterr().out)["wagers"]}
    assert wagers["royal9"]["notes"][1] == (
        f"a personal King 9 in a Suited Royal 9 Tie: '{reading}' reading, meters at their "
        "resets (docs/rulings.md, Royal 9)")
    assert f"{wagers['royal9']['house_edge']['decimal'] * 100:.6f}" == edge
