"""[progressive.<name>], [linked], [mqtt]: every error names the file, key, value and what is allowed."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from controller.progressive.config import (
    load_progressive_config, parse_progressive_config,
)
from controller.progressive.errors import ProgressiveConfigError
from tests.progressive.conftest import HARMONY, HEAVENLY_9_MYSTERY, ROYAL_9, config

CONFIG_DIR = Path(__file__).resolve().parents[2] / "config"


def _problems(data: dict, source: str = "table.toml") -> list[str]:
    with pytest.raises(ProgressiveConfigError) as caught:
        parse_progressive_config(data, source)
    assert caught.value.source == source
    assert source in str(caught.value)
    return caught.value.problems


def test_heavenly_9_levels_come_from_the_rules_tables() -> None:
    # 631c.2(i): seed $10,000 and 10%; 631c.6(c)(4) configuration A-$5: $100-$250, 1%.
    spec = config(HEAVENLY_9_MYSTERY).progressives[0]
    main, mystery = spec.levels
    assert (main.reset_cents, main.increment_rate) == (1_000_000, Fraction(1, 10))
    assert (mystery.reset_cents, mystery.increment_rate) == (10_000, Fraction(1, 100))
    assert mystery.trigger_bounds == (10_000, 25_000)
    assert spec.minimum_cents == 500 and spec.wager_cents == 500  # 631c.2(c)


def test_royal_9_has_mega_major_minor_and_personal_combinations() -> None:
    spec = config(ROYAL_9).progressives[0]
    assert [lvl.level for lvl in spec.levels] == ["mega", "major", "minor"]
    assert len(spec.combinations) == 14 and len(set(spec.combinations.values())) == 14
    assert spec.wager_cents == 500  # 627b.3(f): the $5 denomination


def test_harmony_has_a_reserve_meter_that_feeds_the_reseed() -> None:
    spec = config(HARMONY).progressives[0]
    main, reserve = spec.levels
    # 627b.6(j) paytable B: 19% incrementation, 5% reserve.
    assert main.increment_rate == Fraction(19, 100) and reserve.increment_rate == Fraction(5, 100)
    assert main.reseed_from == "reserve"


@pytest.mark.parametrize("section, key, value, allowed", [
    ({"game": "poker"}, "progressive.p.game", "'poker'", "heavenly_9"),
    ({"game": "heavenly_9", "wager_cents": 100}, "progressive.p.wager_cents", "100", "at least 500"),
    ({"game": "heavenly_9", "payment": "cash"}, "progressive.p.payment", "'cash'", "jackpot-slip"),
    ({"game": "heavenly_9", "mystery": "Z", "mystery_wager_dollars": 5}, "progressive.p.mystery",
     "'Z'", "A, B, C, D"),
    ({"game": "harmony", "paytable": "B"}, "progressive.p.reseed_cents", "missing", "627b.6(j)"),
    ({"game": "harmony", "paytable": "Q", "reseed_cents": 1}, "progressive.p.paytable", "'Q'", "'A'"),
    ({**ROYAL_9, "meters": {**ROYAL_9["meters"], "mega": {"reset_cents": 100,
                                                           "increment_percent": "1"}}},
     "progressive.p.meters.mega.reset_cents", "100", "at least 5000000"),
    ({"game": "heavenly_9", "colour": "red"}, "progressive.p.colour", "unknown key", "allowed keys"),
    ({"game": "heavenly_9", "linked": "yes"}, "progressive.p.linked", "'yes'", "true or false"),
])
def test_errors_name_key_value_and_allowed(section: dict, key: str, value: str,
                                           allowed: str) -> None:
    problems = _problems({"table": {"id": "T"}, "progressive": {"p": section}})
    assert any(key in p and value in p and allowed in p for p in problems), problems


@pytest.mark.parametrize("section, problem", [
    ({"game": "heavenly_9", "mystery": "E", "mystery_wager_dollars": 5},
     "progressive.p.mystery = 'E': not allowed; allowed: A, B, C, D"),
    ({"game": "heavenly_9", "mystery": "A", "mystery_wager_dollars": 4},
     "progressive.p.mystery_wager_dollars = 4: not allowed; allowed: 1, 2, 5 (631c.6(c)(4))"),
    ({"game": "harmony", "paytable": "Q", "reseed_cents": 1},
     "progressive.p.paytable = 'Q': not allowed; allowed: "
     "'A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'I'"),
    ({**ROYAL_9, "denomination_dollars": 2},
     "progressive.p.denomination_dollars = 2: not allowed; allowed: 1, 5 (627b.3(f)-(g))"),
])
def test_a_side_wager_rule_error_says_allowed_once(section: dict, problem: str) -> None:
    # The side-wager rules word their errors for [wagers.<key>] ("allowed: A, B, C, D"); in a
    # [progressive.<name>] section that once read "not allowed; allowed: allowed: A, B, C, D".
    problems = _problems({"table": {"id": "T"}, "progressive": {"p": section}})
    assert problem in problems, problems


@pytest.mark.parametrize("section, problem", [
    ({**ROYAL_9, "meters": {**ROYAL_9["meters"], "major": {"reset_cents": 10**30,
                                                            "increment_percent": "1.5"}}},
     f"progressive.p.meters.major.reset_cents = {10**30}: not allowed; allowed: an integer of "
     "at least 45000 cents for a $5 wager (627b.3(f)(2), (g)(2)), at most 100,000,000,000"),
    ({**HARMONY, "reseed_cents": 2**63},
     f"progressive.p.reseed_cents = {2**63}: not allowed; allowed: a positive integer of "
     "cents, at most 100,000,000,000"),
    ({**HARMONY, "wager_cents": 10**20},
     f"progressive.p.wager_cents = {10**20}: not allowed; allowed: an integer number of cents "
     "of at least 1 (627b.6), at most 1,000,000,000"),
])
def test_amounts_past_what_the_stores_hold_are_refused(section: dict, problem: str) -> None:
    """A meter's seed or a wager amount past a 64-bit integer passed validation and stopped
    the daemon's start with OverflowError when the ledger seeded the meter (found by a probe
    that starts the daemon on one-value mutations of the shipped configurations)."""
    problems = _problems({"table": {"id": "T"}, "progressive": {"p": section}})
    assert problem in problems, problems


def test_all_errors_are_reported_at_once() -> None:
    problems = _problems({"progressive": {"p": {"game": "heavenly_9", "payment": "x"}},
                          "mqtt": {"host": "", "port": 0, "site": "a/b"}})
    assert len(problems) >= 4


def test_linked_needs_a_linked_section_and_refuses_a_linked_mystery() -> None:
    problems = _problems({"progressive": {"p": {**HEAVENLY_9_MYSTERY, "linked": True}}})
    assert any(p.startswith("linked: missing") for p in problems)
    assert any("progressive.p.linked" in p and "mystery" in p for p in problems)


def test_one_progressive_per_table() -> None:
    # 631c.2(b), 627b.3(a): one progressive area, so one sensor meaning, per seat.
    problems = _problems({"progressive": {"a": {"game": "heavenly_9"}, "b": HARMONY}})
    assert any("one progressive per table" in p for p in problems)


@pytest.mark.parametrize("path", sorted(CONFIG_DIR.glob("progressive-*.toml")), ids=lambda p: p.name)
def test_shipped_examples_are_valid(path: Path) -> None:
    cfg = load_progressive_config(str(path))
    assert cfg.progressives


def test_unreadable_file_is_named() -> None:
    with pytest.raises(ProgressiveConfigError, match="no-such.toml"):
        load_progressive_config("no-such.toml")
