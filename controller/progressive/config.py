"""The `[progressive.<name>]`, `[linked]` and `[mqtt]` sections of a table's configuration.

A progressive section names the game (`heavenly_9`, `royal_9`, `harmony`) and
the options its Rules Submission fixes; the paytables, meter rates and mystery
configurations themselves come from the pure rules in
`controller.rules.side` (never duplicated here). Every error names the file,
the dotted key, the bad value and what is allowed, and all errors are
reported at once (`ProgressiveConfigError.problems`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from controller.config_checks import ConfigProblems
from controller.progressive.broker import TOPIC_WORD, MqttConfig, is_int, parse_mqtt
from controller.progressive.errors import ProgressiveConfigError
from controller.rules.side.common import MeterSpec, SideWagerConfigError
from controller.rules.submission_wagers import MAX_WAGER_CENTS

if TYPE_CHECKING:
    from controller.rules.side.harmony import HarmonyProgressive
    from controller.rules.side.heavenly9 import Heavenly9Progressive
    from controller.rules.side.mystery import MysteryConfiguration
    from controller.rules.side.royal9 import KingNine, Royal9Progressive

GAMES = ("heavenly_9", "royal_9", "harmony")
PAYMENT_METHODS = ("table-inventory", "jackpot-slip")  # 631c.6(c)(6)
# 631a.8(a)(1)-(3): the Baccarat wagers a progressive wager may ride on. 627a.7 (not in the
# regs folder) is read the same way for Minibaccarat (docs/progressive.md, rulings).
DEFAULT_BASE_WAGERS = ("banker", "player", "tie")
DEFAULT_SEATS = 14  # 631a.2(a)
MYSTERY_LEVEL = "mystery"
RESERVE_LEVEL = "reserve"
DEFAULT_LINK_TIMEOUT_S = 5.0  # a PostgreSQL round trip on the casino LAN is milliseconds
_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")

_COMMON_KEYS = {"game", "wager_cents", "base_wagers", "payment", "linked", "wager_key"}
_GAME_KEYS = {
    "heavenly_9": {"mystery", "mystery_wager_dollars"},
    "royal_9": {"denomination_dollars", "meters", "personal_combinations", "mystery",
                "suited_tie_personal"},
    "harmony": {"paytable", "reseed_cents"},
}


@dataclass(frozen=True, slots=True)
class LevelSpec:
    """One meter of a progressive: its reset, rates and, for a mystery, its trigger range."""

    level: str
    reset_cents: int
    increment_rate: Fraction  # share of each accepted wager added to this meter
    section: str
    trigger_bounds: tuple[int, int] | None = None  # mystery only: inclusive cents (631c.6(c)(3))
    qualifying_cents: int = 0  # mystery only: the least wager that contributes (631c.6(c)(1))
    reseed_from: str | None = None  # the level whose balance funds the reseed (627b.6(j))


@dataclass(frozen=True)
class ProgressiveSpec:
    """One configured progressive: the pure rule, its levels and the table's options."""

    name: str
    game: str
    rule: Heavenly9Progressive | Royal9Progressive | HarmonyProgressive
    wager_key: str  # the table's wager key for this progressive (cmd_place_wager)
    wager_cents: int  # what the sensor spot recognises when no amount was entered
    minimum_cents: int
    base_wagers: tuple[str, ...]
    payment: str
    linked: bool
    levels: tuple[LevelSpec, ...]
    combinations: Mapping[int, KingNine] = field(default_factory=dict)  # Royal 9 only

    def level(self, name: str) -> LevelSpec:
        for spec in self.levels:
            if spec.level == name:
                return spec
        raise KeyError(f"progressive {self.name} has no level {name!r}")


@dataclass(frozen=True, slots=True)
class LinkedConfig:
    """`[linked]`: where the shared ledger of linked progressives lives (605a.8)."""

    dsn: str
    schema: str
    group: str
    timeout_s: float = DEFAULT_LINK_TIMEOUT_S


@dataclass(frozen=True)
class ProgressiveConfig:
    source: str
    table_id: str
    seats: int
    progressives: tuple[ProgressiveSpec, ...]
    linked: LinkedConfig | None = None
    mqtt: MqttConfig | None = None

    def get(self, name: str) -> ProgressiveSpec:
        for spec in self.progressives:
            if spec.name == name:
                return spec
        raise KeyError(name)


_Problems = ConfigProblems  # the one collector of configuration errors (controller.config_checks)


def _mystery_level(config: MysteryConfiguration) -> LevelSpec:
    # 631c.6(c)(5)(iv): the meter resets to the minimum; the trigger is drawn in [min, max].
    return LevelSpec(MYSTERY_LEVEL, config.minimum_cents, config.contribution_rate, config.section,
                     trigger_bounds=(config.minimum_cents, config.maximum_cents),
                     qualifying_cents=config.minimum_wager_cents)


def _meter_level(meter: MeterSpec) -> LevelSpec:
    assert meter.reset_cents is not None and meter.increment_rate is not None
    return LevelSpec(meter.level, meter.reset_cents, meter.increment_rate, meter.section,
                     reseed_from=RESERVE_LEVEL if meter.reserve_rate else None)


def _parse_one(name: str, raw: Mapping[str, Any], path: str, seats: int,
               problems: _Problems) -> ProgressiveSpec | None:
    game = raw.get("game")
    if game not in GAMES:
        problems.add(f"{path}.game", game, ", ".join(repr(g) for g in GAMES))
        return None
    for key in raw:
        if key not in _COMMON_KEYS | _GAME_KEYS[game]:
            problems.unknown(f"{path}.{key}", _COMMON_KEYS | _GAME_KEYS[game])
    base = raw.get("base_wagers", list(DEFAULT_BASE_WAGERS))
    if not (isinstance(base, list) and base and all(isinstance(b, str) and b for b in base)):
        problems.add(f"{path}.base_wagers", base, "a non-empty list of wager keys, e.g. "
                     "['banker', 'player', 'tie'] (631a.8(a))")
        base = list(DEFAULT_BASE_WAGERS)
    payment = raw.get("payment", PAYMENT_METHODS[0])
    if payment not in PAYMENT_METHODS:
        problems.add(f"{path}.payment", payment, ", ".join(repr(p) for p in PAYMENT_METHODS)
                     + " (631c.6(c)(6))")
    linked = raw.get("linked", False)
    if not isinstance(linked, bool):
        problems.add(f"{path}.linked", linked, "true or false (605a.8)")
        linked = False
    wager_key = raw.get("wager_key", f"{game}_progressive")
    if not isinstance(wager_key, str) or not wager_key:
        problems.add(f"{path}.wager_key", wager_key, "a wager key string")
        wager_key = f"{game}_progressive"
    # Each game's rules are imported in its branch: a table's par sheet reads these sections,
    # and a Royal 9 table need not load the other two games (tablectl par-sheet starts faster).
    try:
        rule: Heavenly9Progressive | Royal9Progressive | HarmonyProgressive
        combinations: Mapping[int, KingNine] = {}
        if game == "heavenly_9":
            from controller.rules.side.heavenly9 import MINIMUM_WAGER_CENTS, make_heavenly_9

            rule = make_heavenly_9(name, raw.get("mystery"), raw.get("mystery_wager_dollars"))
            minimum = MINIMUM_WAGER_CENTS  # 631c.2(c)
            levels = [_meter_level(rule.meter)]
            if rule.mystery is not None:
                levels.append(_mystery_level(rule.mystery))
        elif game == "royal_9":
            from controller.rules.side.royal9 import GREATER, make_royal_9

            rule = make_royal_9(name, raw.get("denomination_dollars"), raw.get("meters"),
                                raw.get("personal_combinations"), raw.get("mystery"), seats,
                                suited_tie_personal=raw.get("suited_tie_personal", GREATER))
            minimum = rule.denomination_cents  # 627b.3(f)-(g): one denomination
            levels = [_meter_level(m) for m in rule.meters]
            if rule.mystery is not None:
                levels.append(_mystery_level(rule.mystery.as_must_hit_by()))
            combinations = dict(rule.combinations)
        else:
            if "reseed_cents" not in raw:
                # 627b.6(j) gives rates but no seed: the Rules Submission must state it.
                problems.missing(f"{path}.reseed_cents", "a positive integer of cents, the "
                                 "meter's seed before the reserve is added (627b.6(j))")
                return None
            from controller.rules.side.harmony import make_harmony

            rule = make_harmony(name, raw.get("paytable"), raw.get("reseed_cents"))
            minimum = 1
            levels = [_meter_level(rule.meter),
                      LevelSpec(RESERVE_LEVEL, 0, rule.meter.reserve_rate, "627b.6(j)")]
    except SideWagerConfigError as exc:
        problems.add(f"{path}.{exc.option}", exc.value, exc.what_is_allowed)
        return None
    default_amount = getattr(rule, "denomination_cents", None) or minimum
    wager_cents = raw.get("wager_cents", default_amount)
    if not is_int(wager_cents) or not minimum <= wager_cents <= MAX_WAGER_CENTS:
        problems.add(f"{path}.wager_cents", wager_cents,
                     f"an integer number of cents of at least {minimum} ({rule.section}), at "
                     f"most {MAX_WAGER_CENTS:,}")
        wager_cents = default_amount
    if game == "royal_9" and wager_cents != minimum:
        problems.add(f"{path}.wager_cents", wager_cents,
                     f"exactly the denomination, {minimum} cents (627b.3(f)-(g))")
    if linked and any(level.trigger_bounds for level in levels):
        problems.add(f"{path}.linked", linked, "false while a mystery is configured: a linked "
                     "mystery trigger is not supported yet (docs/progressive.md)")
    return ProgressiveSpec(name, game, rule, wager_key, wager_cents, minimum, tuple(base),
                           payment, linked, tuple(levels), combinations)


def parse_progressive_config(data: Mapping[str, Any], source: str) -> ProgressiveConfig:
    """Validate the progressive sections of a parsed TOML document.

    Raises `ProgressiveConfigError` listing every problem, each naming the key,
    the value and what is allowed.
    """
    problems = _Problems()
    table = data.get("table", {}) if isinstance(data.get("table"), Mapping) else {}
    table_id = str(table.get("id", ""))
    seats = table.get("seats", DEFAULT_SEATS)
    if not is_int(seats) or not 1 <= seats <= DEFAULT_SEATS:
        seats = DEFAULT_SEATS  # the table section is validated by controller.config
    section = data.get("progressive", {})
    specs: list[ProgressiveSpec] = []
    if not isinstance(section, Mapping):
        problems.add("progressive", section, "a table of [progressive.<name>] sections")
        section = {}
    for name, raw in section.items():
        path = f"progressive.{name}"
        if not _NAME.match(name):
            problems.add(path, name, "a name of lower-case letters, digits, '_' or '-' "
                         "(it becomes an MQTT topic level)")
            continue
        if not isinstance(raw, Mapping):
            problems.add(path, raw, f"a table [{path}]")
            continue
        spec = _parse_one(name, raw, path, seats, problems)
        if spec is not None:
            specs.append(spec)
    if len(section) > 1:
        # 631c.2(b), 627b.3(a), 627b.6(b): one progressive area per seat, so the one seat
        # sensor can only mean one progressive wager.
        problems.add("progressive", sorted(section), "one progressive per table: each seat has "
                     "one progressive sensor (631c.2(b), 627b.3(a), 627b.6(b))")
    linked_cfg = _parse_linked(data.get("linked"), problems)
    if any(s.linked for s in specs) and linked_cfg is None:
        problems.missing("linked", "a [linked] section with dsn and group when a progressive "
                         "sets linked = true (605a.8)")
    mqtt_cfg = parse_mqtt(data.get("mqtt"), problems)
    if problems.items:
        raise ProgressiveConfigError(source, problems.items)
    return ProgressiveConfig(source, table_id, seats, tuple(specs), linked_cfg, mqtt_cfg)


def _parse_linked(raw: object, problems: _Problems) -> LinkedConfig | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        problems.add("linked", raw, "a table [linked]")
        return None
    for key in raw:
        if key not in {"dsn", "schema", "group", "timeout_s"}:
            problems.unknown(f"linked.{key}", ("dsn", "group", "schema", "timeout_s"))
    dsn, schema, group = raw.get("dsn"), raw.get("schema", "tabled_linked"), raw.get("group")
    timeout = raw.get("timeout_s", DEFAULT_LINK_TIMEOUT_S)
    if not isinstance(dsn, str) or not dsn:
        problems.add("linked.dsn", dsn, "a libpq connection string, e.g. "
                     "'host=10.0.0.5 dbname=progressive user=tabled'")
    if not isinstance(schema, str) or not re.match(r"^[a-z_][a-z0-9_]{0,62}$", schema):
        problems.add("linked.schema", schema, "a lower-case SQL identifier")
    if not isinstance(group, str) or not TOPIC_WORD.match(group):
        problems.add("linked.group", group, "the link group's name (letters, digits, _ . -): "
                     "tables with the same group share the meters")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= 60:
        problems.add("linked.timeout_s", timeout, "seconds, more than 0 and at most 60")
    if len(problems.items) and any(p.startswith("linked.") for p in problems.items):
        return None
    return LinkedConfig(str(dsn), str(schema), str(group), float(timeout))


def load_progressive_config(path: str) -> ProgressiveConfig:
    """Read a TOML file and validate its progressive sections."""
    import tomllib

    from controller.text_files import read_toml

    try:
        data = read_toml(path)
    except OSError as exc:
        raise ProgressiveConfigError(path, [f"cannot read the file: {exc.strerror or exc}"]) from exc
    except tomllib.TOMLDecodeError as exc:
        raise ProgressiveConfigError(path, [f"not valid TOML: {exc}"]) from exc
    return parse_progressive_config(data, path)
