"""docs/configuration.md lists every section and key the configuration's parsers accept,
and no other: each parser's own list of keys is read from its refusal of one it does not
know, so the test follows the code without a copy of it."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from controller.config import ConfigError, parse_config

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "configuration.md"
SIMULATED = ROOT / "config" / "simulated-table.toml"
UNKNOWN = "zz_not_a_key"


def documented() -> tuple[list[str], dict[str, set[str]], dict[str, str], set[tuple[str, str]]]:
    """The overview's sections, each `### [section]`'s keys and text, and the wager options."""
    overview: list[str] = []
    keys: dict[str, set[str]] = {}
    text: dict[str, str] = {}
    options: set[tuple[str, str]] = set()
    section = header = None
    for line in DOC.read_text(encoding="utf-8").splitlines():
        heading = re.fullmatch(r"### `\[(.+)\]`", line)
        if heading:
            section, header = heading.group(1), None
            keys[section], text[section] = set(), ""
            continue
        if line.startswith("#"):
            section = header = None
            continue
        if section is not None:
            text[section] += line + "\n"
        if not line.startswith("| "):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if cells[0] in ("key", "wager", "section"):
            header = cells[0]
        elif set(cells[0]) <= {"-"}:
            continue
        elif header == "section":
            overview.append(cells[0].strip("`[]"))
        elif header == "key" and section is not None:
            keys[section].add(cells[0].strip("`"))
        elif header == "wager":
            options.add((cells[0].split()[0].strip("`"), cells[1].strip("`")))
    return overview, keys, text, options


def simulated() -> dict[str, Any]:
    return tomllib.loads(SIMULATED.read_text(encoding="utf-8"))


def accepted(data: dict[str, Any], path: str) -> set[str]:
    """The keys the parser allows where `path` (ending in UNKNOWN) was put."""
    try:
        parse_config(data, "table.toml")
    except ConfigError as refused:
        problems = refused.problems
    else:
        raise AssertionError(f"{path} was accepted")
    form = re.compile(rf"{re.escape(path)}(?: = 1)?: unknown (?:key|section); "
                      r"allowed (?:keys|here): (.+)")
    for line in problems:
        found = form.fullmatch(line)
        if found:
            return set(found.group(1).split(", "))
    raise AssertionError(f"no refusal of {path} among {problems}")


def put(data: dict[str, Any], where: tuple[str, ...]) -> str:
    node = data
    for part in where:
        node = node.setdefault(part, {})
    node[UNKNOWN] = 1
    return ".".join((*where, UNKNOWN))


# Each documented section with a key table, and where in a table's configuration it lives.
PLACES = {
    "table": ("table",), "game": ("game",), "game.vigorish": ("game", "vigorish"),
    "game.tie": ("game", "tie"), "game.irregularities": ("game", "irregularities"),
    "game.cut": ("game", "cut"), "game.drawing": ("game", "drawing"),
    "game.naturals": ("game", "naturals"), "wagers.<key>": ("wagers", "banker"),
    "shoe": ("shoe",), "shuffler": ("shuffler",), "gpio": ("gpio",),
    "gpio.seats": ("gpio", "seats", "1"), "display": ("display",), "store": ("store",),
    "control": ("control",), "software": ("software",), "metrics": ("metrics",),
    "display_service": ("display_service",), "linked": ("linked",), "mqtt": ("mqtt",),
    "witness": ("witness",),
}


@pytest.mark.parametrize("section", sorted(PLACES))
def test_a_sections_documented_keys_are_the_ones_its_parser_accepts(section: str) -> None:
    data = simulated()
    assert documented()[1][section] == accepted(data, put(data, PLACES[section]))


def test_the_documented_sections_are_the_ones_a_configuration_may_have() -> None:
    overview, keys, _, _ = documented()
    data = simulated()
    data[UNKNOWN] = 1
    top = {name.split(".")[0] for name in overview}
    assert len(top) == len(overview)
    assert top == accepted(data, UNKNOWN)
    prose_only = {"access", "supervisors"}  # documented in prose below
    assert set(keys) == set(PLACES) | {"progressive.<name>"} | prose_only


def test_a_progressives_documented_keys_are_those_its_games_accept() -> None:
    from controller.progressive.config import GAMES

    every: set[str] = set()
    for game in GAMES:
        data = simulated()
        data["progressive"] = {"p": {"game": game, UNKNOWN: 1}}
        every |= accepted(data, f"progressive.p.{UNKNOWN}")
    assert documented()[1]["progressive.<name>"] == every


def test_every_access_key_is_named() -> None:
    from controller.access import ACCESS_KEYS

    text = documented()[2]["access"]
    named = set(re.findall(r"`([a-z_]+)`", text))
    assert set(ACCESS_KEYS) <= named
    data = simulated()
    assert accepted(data, put(data, ("access",))) == set(ACCESS_KEYS)


def test_every_wagers_own_options_are_documented() -> None:
    from controller.rules.registry import REGISTRY
    from controller.rules.submission import FAMILIES, VARIANTS

    registered = set()
    for family in FAMILIES:
        for variant in VARIANTS:
            for key in REGISTRY.keys_for(family, variant):
                spec = REGISTRY.lookup(key, family, variant)
                assert spec is not None
                registered |= {(key, option) for option in spec.options}
    assert documented()[3] == registered
