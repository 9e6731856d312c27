"""`tablectl simulate` with a table's `[progressive.<name>]`: the seat places the progressive
wager every round (docs/simulate-format.md), settled by the live table's progressive system
with its meters as they stand (627b.3(e)-(f), 631c.2, 631c.6)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

from controller.progressive.config import load_progressive_config
from controller.progressive.simulated import SimulatedProgressive
from controller.rules.game import load_game
from controller.rules.simulate import SimulationOptions, simulate

ROOT = Path(__file__).resolve().parents[2]
ROYAL_9 = str(ROOT / "config" / "progressive-royal9.toml")
HEAVENLY_9 = str(ROOT / "config" / "progressive-heavenly9-mystery.toml")
PAID_IN_FOUR_SHOES = 3  # seed 5: three Must-Hit-By Mystery awards


def rounds(path: str, shoes: int, seed: int) -> list[dict[str, Any]]:
    progressive = SimulatedProgressive(load_progressive_config(path), random.Random(seed))
    return list(simulate(load_game(path), SimulationOptions(shoes=shoes, seed=seed),
                         progressive))


def test_627b_3_f_1_simulate_pays_the_minor_meter_as_it_stands_seed_1() -> None:
    """Seed 1, shoe 7, round 31: Player K♣ 9♣ is seat 1's personal King 9 (627b.3(e)(8)) and
    pays the Minor meter as it stands. Every locked round adds 1.5% of $5 = 7.5 cents to the
    Major and Minor and 2% = 10 cents to the Mega (config/progressive-royal9.toml), from their
    resets (627b.3(f)(2)); after 521 rounds the Minor holds 45,000 + 3,907.5 cents and pays its
    48,907 whole cents; it resets to $450 with the half cent kept."""
    records = rounds(ROYAL_9, 7, 1)
    hit = next(r for r in records if (r["shoe"], r["round"]) == (7, 31))
    assert [(c["card"], c["hand"]) for c in hit["cards"]] == [
        ("K♣", "player"), ("K♠", "banker"), ("9♣", "player"), ("J♠", "banker")]
    locked = records.index(hit) + 1  # no simulated round in these shoes: each round locked
    assert all(not r["simulated"] for r in records[:locked])
    assert locked == 521
    (royal,) = [s for s in hit["settlements"] if s["wager"] == "royal_9_progressive"]
    assert royal == {"wager": "royal_9_progressive", "seat": 1, "amount_cents": 500,
                     "outcome": "win", "odds": "48907 to 500", "win_cents": 48_907,
                     "vigorish_cents": 0, "net_cents": 48_907,
                     "label": "Personal King 9 on Player Hand (100% of the minor meter)",
                     "section": "627b.3(e)(8)"}
    assert hit["seat_net_cents"] == -10_000 - 10_000 + 10_000 + 48_907
    assert hit["meters"] == {"mega": 5_000_000 + 10 * 521, "major": 45_000 + 3_907,
                             "minor": 45_000}
    assert records[locked]["meters"]["minor"] == 45_008  # 45,000.5 + 7.5 cents


def test_627b_3_f_1_simulate_settles_the_fixed_lines_seed_1() -> None:
    """Seed 1, shoe 1, round 2: Banker K♣ 9♠ is Any Royal 9 (627b.3(e)(1)), $25 on $5."""
    records = rounds(ROYAL_9, 1, 1)
    (royal,) = [s for s in records[1]["settlements"] if s["wager"] == "royal_9_progressive"]
    assert [c["card"] for c in records[1]["cards"]] == ["A♥", "K♣", "3♣", "9♠"]
    assert (royal["outcome"], royal["win_cents"], royal["label"], royal["section"]) == (
        "win", 2_500, "Any Royal 9", "627b.3(e)(1)")
    assert records[0]["meters"] == {"mega": 5_000_010, "major": 45_007, "minor": 45_007}


def test_631c_6_simulate_meters_move_as_the_live_tables_to_the_cent() -> None:
    """Heavenly 9 with Must-Hit-By Mystery A at $5 (631c.2, 631c.6): every round's meters
    equal their resets plus the exact contributions of the rounds so far, less the awards
    paid and plus the reseeds, as `ProgressiveSystem` keeps them (sub-cents carried)."""
    path = HEAVENLY_9
    spec = load_progressive_config(path).progressives[0]
    records = rounds(path, 4, 5)
    exact = {lv.level: Fraction(lv.reset_cents) for lv in spec.levels}
    wager = max(10_000, spec.minimum_cents)
    paid = 0
    for record in records:
        if record["simulated"]:
            continue
        for level in spec.levels:  # contributions at the lock; the mystery's need $5
            if wager >= level.qualifying_cents:
                exact[level.level] += level.increment_rate * wager
        for s in record["settlements"]:
            if s["wager"] != spec.wager_key or s["outcome"] != "win":
                continue
            level = "mystery" if s["label"] == "Must-Hit-By Mystery bonus" else \
                "progressive" if "meter" in s["label"] else None
            if level is None:
                continue
            assert s["win_cents"] == int(exact[level])  # the whole cents at the hit
            paid += 1
            exact[level] += spec.level(level).reset_cents - s["win_cents"]
        assert record["meters"] == {k: int(v) for k, v in exact.items()}, record["round"]
    assert paid == PAID_IN_FOUR_SHOES  # the mystery hits several times (631c.6(c)(3))


def test_tablectl_simulate_places_the_progressive_wager_on_every_round() -> None:
    """docs/simulate-format.md: one unit of every wager offered, the progressive included."""
    out = subprocess.run([sys.executable, "-m", "controller.cli", "simulate", ROYAL_9,
                          "--seed", "1", "--json"], capture_output=True, text=True, check=True)
    records = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(records) == 82
    assert all({s["wager"] for s in r["settlements"]} == {"banker", "player", "tie",
                                                           "royal_9_progressive"}
               for r in records)
    # 82 rounds: 820 cents on the Mega, 615 on the Major and on the Minor (no hit).
    assert records[-1]["meters"] == {"mega": 5_000_820, "major": 45_615, "minor": 45_615}
