"""tools/bonus_readings.py, the Bonus readings docs/par-sheets.md lists (681a.3(e),
681a.8(c)): its enumeration gives the engine's exact par sheet for the readings the engine
offers, so the rows it adds are computed the same way."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from controller.rules.par import compute_par_sheet
from tests.rules.test_681a import g21

TOOL = Path(__file__).resolve().parents[2] / "tools" / "bonus_readings.py"


def tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bonus_readings", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("row,rule", [(0, "natural-wins"), (4, "as-21")])
@pytest.mark.parametrize("table", list("ABCDEF"))
def test_681a_8_c_the_tools_readings_equal_the_engines_par_sheet(row: int, rule: str,
                                                                  table: str) -> None:
    """681a.8(c): the default row is the engine's `natural-wins` Bonus, the as-21 row its
    `as-21` one, exactly (Fractions), paytable by paytable."""
    t = tool()
    name, lines, third, decks = t.READINGS[row]
    assert decks is None
    deck_count = t.DECKS[table]
    game = g21(deck_count, naturals={"rule": rule}, bonus_player={"paytable": table},
               bonus_banker={"paytable": table})
    engine = next(wp for wp in compute_par_sheet(game).wagers if wp.key == "bonus_player")
    assert t.hold(deck_count, table, lines, third) == engine.house_edge, name
