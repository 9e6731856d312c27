"""`WAGER_MODULES` says exactly which module registers which wager key, for which tables.

A lookup imports only the modules the manifest names for its key, family and
variant, so a key registered by a module the manifest does not name for that
table would silently be missing there: these tests compare the manifest with
what every module of the rules engine registers once all are imported.
"""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import controller.rules
from controller.rules import registry

REPO = Path(__file__).resolve().parents[2]


def _registered() -> set[tuple[str, str, str, frozenset[str] | None]]:
    """(module, key, family, variants) of every spec, after importing every rules module."""
    for info in pkgutil.walk_packages(controller.rules.__path__, prefix="controller.rules."):
        importlib.import_module(info.name)
    return {(spec.factory.__module__, spec.key, family, spec.variants)
            for spec in registry.REGISTRY.all_specs() for family in spec.families}


def _manifest() -> set[tuple[str, str, str, frozenset[str] | None]]:
    return {(module, key, family, variants)
            for module, families, variants, keys in registry.WAGER_MODULES
            for key in keys for family in families}


def test_the_manifest_names_exactly_what_the_modules_register():
    registered, manifest = _registered(), _manifest()
    assert registered - manifest == set(), "registered but not in WAGER_MODULES"
    assert manifest - registered == set(), "in WAGER_MODULES but registered by no module"


def test_no_key_is_listed_twice_for_one_module_family_and_variant():
    rows = [(module, key, family, variants)
            for module, families, variants, keys in registry.WAGER_MODULES
            for key in keys for family in families]
    assert len(rows) == len(set(rows))


def test_modules_for_chooses_by_family_and_variant():
    assert registry.modules_for("banker", "baccarat", "standard") == [
        "controller.rules.baccarat_wagers"]
    assert registry.modules_for("banker", "baccarat", "commission-free") == [
        "controller.rules.side.rising_phoenix"]
    assert registry.modules_for("banker", "21-baccarat", "standard") == [
        "controller.rules.twentyone"]
    assert registry.modules_for("tie", "minibaccarat", "commission-free") == [
        "controller.rules.baccarat_wagers", "controller.rules.side.commission_free"]
    assert registry.modules_for("royal_9_progressive", "baccarat", "standard") == []
    assert registry.modules_for("no_such_wager", "baccarat", "standard") is None


def test_a_commission_free_table_gets_the_variant_rules_without_21_baccarat():
    # A plain Baccarat table's imports: tests/cli/test_lazy_imports.py.
    from tests.cli.test_lazy_imports import loaded_by

    modules = loaded_by("par-sheet", "config/baccarat-commission-free.toml")
    assert "controller.rules.side.commission_free" in modules
    assert not modules & {"controller.rules.twentyone", "controller.rules.par21",
                          "controller.rules.side.perfect_pairs"}
    rule = subprocess.run(
        [sys.executable, "-c",
         "from controller.rules.game import load_game\n"
         "g = load_game('config/baccarat-commission-free.toml')\n"
         "print(type(g.wager_rules['banker']).__module__)"],
        cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
    assert rule == "controller.rules.side.commission_free"


def test_a_side_wager_table_imports_only_the_side_wagers_it_offers():
    # minibaccarat-royal9.toml offers Perfect Pairs and Royal 9 beside the 631a wagers.
    from tests.cli.test_lazy_imports import loaded_by

    side = {m for m in loaded_by("par-sheet", "config/minibaccarat-royal9.toml")
            if m.startswith("controller.rules.side.")}
    assert side == {"controller.rules.side.common", "controller.rules.side.card_facts",
                    "controller.rules.side.combinatorics",
                    "controller.rules.side.mystery", "controller.rules.side.perfect_pairs",
                    "controller.rules.side.royal9"}


def test_an_unknown_key_lists_every_allowed_key():
    from controller.rules.submission import SubmissionError, parse_submission

    data = {"table": {"id": "T", "name": "t", "seats": 14},
            "game": {"family": "minibaccarat", "decks": 8, "variant": "standard"},
            "wagers": {"no_such_wager": {}}}
    try:
        parse_submission(data, "x.toml")
    except SubmissionError as exc:
        text = "\n".join(exc.errors)
    else:
        raise AssertionError("accepted an unknown wager")
    assert "royal_9_progressive" in text and "golden_talons_player" in text
