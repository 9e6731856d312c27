"""Every clause a side wager settles by is named somewhere in this test folder.

A clause counts as traced when its text ("631c.2(g)(3)") or its test-name form
("631c_2_g_3") appears in a test module other than this one.
"""

from __future__ import annotations

import re
from pathlib import Path

from controller.rules.registry import load_rules
from controller.rules.side.common import LineWager
from controller.rules.side.heavenly9 import make_heavenly_9
from controller.rules.side.harmony import HARMONY_PAYTABLES
from controller.rules.side.royal9 import ROYAL_9_PAYTABLES
from controller.rules.submission import GameConfig, WagerConfig

HERE = Path(__file__).parent


def _clauses() -> set[str]:
    found: set[str] = set()
    registry = load_rules()
    for spec in registry.all_specs():
        if not spec.factory.__module__.startswith("controller.rules.side"):
            continue
        for family in spec.families:
            for variant in spec.variants or {"standard"}:
                paytable = spec.paytables[0] if spec.paytables else None
                options = {"denomination_dollars": 5, "meters": {
                    "mega": {"reset_cents": 5_000_000, "increment_percent": 1},
                    "major": {"reset_cents": 45_000, "increment_percent": 1},
                    "minor": {"reset_cents": 45_000, "increment_percent": 1}}} \
                    if spec.key == "royal_9_progressive" else {}
                game = GameConfig(family=family, decks=8, variant=variant, fully_automated=True)
                rule = spec.factory(WagerConfig(spec.key, paytable, min_cents=500,
                                                options=options), game)
                assert isinstance(rule, LineWager)
                found |= {line.section for line in rule.paytable.lines}
                found.add(rule.lose_section or rule.section)
    for table in list(HARMONY_PAYTABLES.values()) + list(ROYAL_9_PAYTABLES.values()):
        found |= {line.section for line in table.lines}
    found |= {line.section for line in make_heavenly_9("h").paytable.lines}
    return {c for part in found for c in re.split(r",\s*", part) if re.match(r"\d{3}[a-z]\.", c)}


def test_every_clause_is_traced_to_a_test() -> None:
    text = "\n".join(p.read_text() for p in HERE.glob("test_*.py") if p.name != Path(__file__).name)
    missing = []
    for clause in sorted(_clauses()):
        snake = re.sub(r"[^0-9a-z]+", "_", clause).strip("_")
        if clause not in text and snake not in text:
            missing.append(clause)
    assert not missing, f"clauses with no test naming them: {missing}"
