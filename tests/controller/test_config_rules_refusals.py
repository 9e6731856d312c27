"""The daemon's configuration loader refuses what the Rules Submission forbids, before a table
runs: a Heavenly 9 minimum under $5 (631c.2(c)) and two paytables for one wager (631a.13(e))."""

from __future__ import annotations

import tomllib

import pytest

from controller.config import ConfigError, parse_config
from tests.controller.test_daemon import CONFIG


def _table(**wagers: dict[str, object]) -> dict[str, object]:
    data = tomllib.loads(CONFIG.read_text(encoding="utf-8"))
    data["wagers"].update(wagers)
    return data


def test_heavenly_9_minimum_under_five_dollars_is_refused_631c_2_c() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(_table(heavenly_9_progressive={"min_cents": 200}), "t.toml")
    assert any("wagers.heavenly_9_progressive.min_cents = 200: required, at least 500 "
               "(631c.2(c): no less than $5)" in line for line in info.value.problems)


def test_dragon_bonus_sides_on_two_paytables_are_refused_631a_13_e() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(_table(dragon_bonus_player={"paytable": "A"},
                            dragon_bonus_banker={"paytable": "B"}), "t.toml")
    assert any("wagers.dragon_bonus_banker.paytable = 'B': must be 'A' like "
               "wagers.dragon_bonus_player.paytable (631a.13(e): one paytable for the wager)"
               in line for line in info.value.problems)
