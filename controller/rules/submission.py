"""The Rules Submission (601a.2): one TOML file per table, validated into frozen data.

`load_submission(path)` / `parse_submission(data, source)` check the sections
this package owns (`[table]`, `[game]`, `[wagers.<key>]`) and ignore the
device sections other packages own (`OTHER_OWNED_SECTIONS`). Every problem is
collected; a `SubmissionError` lists them all, each naming the file, the
dotted key, the bad value and what is allowed.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

from controller.rules.hand21 import NATURAL_RULES as NATURAL_RULES_681A
from controller.rules.money import Rounding, parse_odds
from controller.rules.registry import REGISTRY, WagerConfigError
from controller.rules.submission_types import (  # re-exported: callers read them from here
    MIN_CUT_CARDS,
    VIG_RATE,
    CutConfig,
    GameConfig,
    Submission,
    TableConfig,
    VigorishConfig,
    WagerConfig,
)

__all__ = [
    "CutConfig", "GameConfig", "MIN_CUT_CARDS", "Submission", "SubmissionError", "TableConfig",
    "VIG_RATE", "VigorishConfig", "WagerConfig", "load_submission", "parse_submission",
]

# Top-level sections that belong to other engineers' packages; the rules parser skips them.
OTHER_OWNED_SECTIONS: tuple[str, ...] = (
    "shoe", "shuffler", "gpio", "store", "control", "display", "progressive", "simulation",
    "linked", "mqtt", "supervisors", "access",
)

FAMILIES = ("baccarat", "minibaccarat", "21-baccarat")
VARIANTS = ("standard", "ez", "commission-free")
VIG_COLLECTION = ("at-payout", "marked")  # 631a.13(d)(1) and (2)
DISCLOSED_THIRD = ("discard", "simulated-round")  # 631a.15(c)(1) and (2)
DRAW_RULES = ("one-card", "to-17")  # 681a.7(g) ruling, docs/rulings.md
BONUS_CARDS = ("first-three",)  # 681a.3(e) ruling
NATURAL_RULES = NATURAL_RULES_681A  # 681a.1 naturals vs other hands (hand21, docs/rulings.md)

# 631a.2(a): 10 to 14 numbered positions; 681a.2(a): no more than eight players.
# Minibaccarat's own chapter (627a) is not among the four implemented; ruling: 1..14 (docs/rulings.md).
SEATS = {"baccarat": (10, 14), "minibaccarat": (1, 14), "21-baccarat": (1, 8)}
DECKS = {"baccarat": (6, 7, 8), "minibaccarat": (6, 7, 8), "21-baccarat": (4, 8)}  # 631a.3(a), 681a.3(a)
MIN_TIE_ODDS = Fraction(8)  # 631a.13(b)
TIE_ODDS_681A = Fraction(10)  # 681a.8(b)
MIN_COVER_FROM_BOTTOM = {"baccarat": 14, "minibaccarat": 14, "21-baccarat": 10}  # 631a.5(d), 681a.5(d)

# The most one wager may be ($10,000,000): the daemon's place_wager accepts no more, and
# it keeps every sum of a night's wagers far inside SQLite's 64-bit integers.
MAX_WAGER_CENTS = 10**9
COMMON_WAGER_KEYS = ("paytable", "min_cents", "max_cents", "without_base_wager")
# Wagers whose section selects "one of the following paytables" for the wager as a whole:
# every key of a group that the submission offers must name the same letter.
ONE_PAYTABLE_GROUPS: tuple[tuple[tuple[str, ...], Mapping[str, str]], ...] = (
    (("dragon_bonus_player", "dragon_bonus_banker"),
     {"baccarat": "631a.13(e)", "minibaccarat": "631a.13(e)"}),
    (("perfect_pairs_player", "perfect_pairs_banker"),
     {"baccarat": "631c.1(d)", "minibaccarat": "627b.1(e)"}),
    (("golden_talons_player", "golden_talons_banker"), {"minibaccarat": "627b.5(f)"}),
    (("five_treasures_fortune_7", "five_treasures_golden_8", "five_treasures_heavenly_9",
      "five_treasures_blazing_7s", "five_treasures_cover_all"), {"baccarat": "631c.3(h)"}),
    (("bonus_player", "bonus_banker"), {"21-baccarat": "681a.8(c)"}),
)

# Optional wagers a Rules Submission may offer without a Baccarat wager at the seat.
WITHOUT_BASE_WAGER_ALLOWED = {
    "majestic_match_player": "631c.7(b)",
    "majestic_match_banker": "631c.7(b)",
}


class SubmissionError(ValueError):
    """A Rules Submission that cannot be used; `errors` holds one line per problem."""

    def __init__(self, source: str, errors: list[str]) -> None:
        self.source = source
        self.errors = tuple(errors)
        super().__init__("\n".join(self.errors))


class _Collector:
    def __init__(self, source: str) -> None:
        self.source = source
        self.errors: list[str] = []

    def add(self, path: str, value: object, allowed: str) -> None:
        shown = "(missing)" if value is _MISSING else repr(value)
        self.errors.append(f"{self.source}: {path} = {shown}: {allowed}")

    def unknown(self, path: str, table: Mapping[str, Any], allowed: tuple[str, ...]) -> None:
        for key in table:
            if key not in allowed:
                self.add(f"{path}.{key}" if path else key, table[key],
                         f"unknown key; allowed here: {', '.join(allowed)}")


_MISSING = object()


def _get_table(c: _Collector, data: Mapping[str, Any], key: str, path: str,
               required: bool = False) -> dict[str, Any] | None:
    value = data.get(key, _MISSING)
    if value is _MISSING:
        if required:
            c.add(path, value, "required table")
        return None
    if not isinstance(value, dict):
        c.add(path, value, "must be a table")
        return None
    return value


def _get_int(c: _Collector, table: Mapping[str, Any], key: str, path: str, default: object,
             lo: int | None = None, hi: int | None = None,
             choices: tuple[int, ...] | None = None, why: str = "") -> int | None:
    value = table.get(key, default)
    if value is _MISSING:
        c.add(path, value, f"required integer{why}")
        return None
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        c.add(path, value, f"must be an integer{why}")
        return None
    if choices is not None and value not in choices:
        c.add(path, value, f"must be one of {', '.join(map(str, choices))}{why}")
        return None
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        rng = f"{lo}..{hi}" if hi is not None else f">= {lo}"
        c.add(path, value, f"must be {rng}{why}")
        return None
    return value


def _get_choice(c: _Collector, table: Mapping[str, Any], key: str, path: str, default: object,
                choices: tuple[str, ...], why: str = "") -> str | None:
    value = table.get(key, default)
    if value not in choices or not isinstance(value, str):
        c.add(path, value, f"must be one of {', '.join(repr(x) for x in choices)}{why}")
        return None
    return value


def _get_bool(c: _Collector, table: Mapping[str, Any], key: str, path: str,
              default: bool) -> bool:
    value = table.get(key, default)
    if not isinstance(value, bool):
        c.add(path, value, "must be true or false")
        return default
    return value


MAX_TABLE_ID_CHARS = 64


def seat_rule(family: str | None) -> tuple[int, int, str]:
    """How many seats a table of `family` may have, and the section (or ruling) saying so."""
    lo, hi = SEATS.get(family or "baccarat", (1, 14))
    section = {"21-baccarat": "681a.2(a)", "minibaccarat": "ruling"}.get(family or "", "631a.2(a)")
    return lo, hi, section


def _parse_table(c: _Collector, data: Mapping[str, Any], family: str | None) -> TableConfig | None:
    t = _get_table(c, data, "table", "table", required=True)
    if t is None:
        return None
    c.unknown("table", t, ("id", "seats", "name"))
    table_id = t.get("id", _MISSING)
    if not isinstance(table_id, str) or not table_id.strip():
        c.add("table.id", table_id, "required non-empty string")
        table_id = None
    elif len(table_id) > MAX_TABLE_ID_CHARS or not table_id.isprintable():
        # The id is in every log line, metric label and report: a name, not a payload.
        shown = table_id if len(table_id) <= 24 else f"{table_id[:16]}... ({len(table_id)} " \
            "characters)"
        c.add("table.id", shown, f"not allowed; allowed: 1 to {MAX_TABLE_ID_CHARS} printable "
                                 "characters, e.g. 'BAC-01'")
        table_id = None
    name = t.get("name", "")
    if not isinstance(name, str):
        c.add("table.name", name, "must be a string")
        name = ""
    lo, hi, section = seat_rule(family)
    seats = _get_int(c, t, "seats", "table.seats", _MISSING, lo, hi,
                     why=f" ({section}, game.family = {family!r})")
    if table_id is None or seats is None:
        return None
    return TableConfig(id=table_id, seats=seats, name=name)


def _parse_game(c: _Collector, data: Mapping[str, Any]) -> GameConfig | None:
    g = _get_table(c, data, "game", "game", required=True)
    if g is None:
        return None
    c.unknown("game", g, ("family", "decks", "variant", "fully_automated", "squeeze",
                          "payout_rounding", "vigorish", "tie", "irregularities", "cut",
                          "drawing", "naturals"))
    family = _get_choice(c, g, "family", "game.family", _MISSING, FAMILIES)
    if family is None:
        return None
    is21 = family == "21-baccarat"
    decks = _get_int(c, g, "decks", "game.decks", _MISSING, choices=DECKS[family],
                     why=" (681a.3(a))" if is21 else " (631a.3(a))")
    variants = ("standard",) if is21 else VARIANTS
    variant = _get_choice(c, g, "variant", "game.variant", "standard", variants,
                          " (681a has no variants)" if is21 else "")
    fully_automated = _get_bool(c, g, "fully_automated", "game.fully_automated", False)
    squeeze = _get_bool(c, g, "squeeze", "game.squeeze", False)
    rounding_text = g.get("payout_rounding", "down")
    try:
        payout_rounding = Rounding.parse(rounding_text)
    except (ValueError, TypeError) as exc:
        c.add("game.payout_rounding", rounding_text, str(exc).split(": ", 1)[-1])
        payout_rounding = Rounding.DOWN

    vigorish = _parse_vigorish(c, g, family, variant)
    tie_odds = _parse_tie(c, g, is21)

    irr = _get_table(c, g, "irregularities", "game.irregularities") or {}
    c.unknown("game.irregularities", irr, ("disclosed_player_third",))
    disclosed = _get_choice(c, irr, "disclosed_player_third",
                            "game.irregularities.disclosed_player_third", "discard",
                            DISCLOSED_THIRD, " (631a.15(c)(1) or (2))") or "discard"

    cut_t = _get_table(c, g, "cut", "game.cut") or {}
    c.unknown("game.cut", cut_t, ("min_cut_cards", "cover_card_from_bottom"))
    min_cover = MIN_COVER_FROM_BOTTOM[family]
    cut_sec = "681a.5" if is21 else "631a.5"
    min_cut = _get_int(c, cut_t, "min_cut_cards", "game.cut.min_cut_cards", MIN_CUT_CARDS,
                       MIN_CUT_CARDS, 100, why=f" ({cut_sec}(c))") or MIN_CUT_CARDS
    cover = _get_int(c, cut_t, "cover_card_from_bottom", "game.cut.cover_card_from_bottom",
                     min_cover, min_cover, 200, why=f" ({cut_sec}(d))") or min_cover

    draw_t = _get_table(c, g, "drawing", "game.drawing") or {}
    if draw_t and not is21:
        c.add("game.drawing", draw_t, "only for game.family = '21-baccarat' (631a.11 fixes drawing)")
    c.unknown("game.drawing", draw_t, ("rule", "bonus_cards"))
    draw_rule = _get_choice(c, draw_t, "rule", "game.drawing.rule", "one-card", DRAW_RULES,
                            " (681a.7(g), docs/rulings.md)") or "one-card"
    bonus_cards = _get_choice(c, draw_t, "bonus_cards", "game.drawing.bonus_cards",
                              "first-three", BONUS_CARDS, " (681a.3(e))") or "first-three"
    nat_t = _get_table(c, g, "naturals", "game.naturals") or {}
    if nat_t and not is21:
        c.add("game.naturals", nat_t, "only for game.family = '21-baccarat' (631a.11 fixes naturals)")
    c.unknown("game.naturals", nat_t, ("rule",))
    natural_rule = _get_choice(c, nat_t, "rule", "game.naturals.rule", "natural-wins",
                               NATURAL_RULES, " (681a.1, 681a.3(d), docs/rulings.md)") \
        or "natural-wins"
    # An invalid deck count or variant is already reported; carry on with a stand-in so the
    # wagers are still checked and every error is listed in one pass.
    decks = decks if decks is not None else DECKS[family][-1]
    variant = variant if variant is not None else "standard"
    return GameConfig(
        family=family, decks=decks, variant=variant, fully_automated=fully_automated,
        squeeze=squeeze, payout_rounding=payout_rounding, vigorish=vigorish,
        tie_odds=tie_odds, disclosed_player_third=disclosed,
        cut=CutConfig(min_cut_cards=min_cut, cover_card_from_bottom=cover),
        draw_rule=draw_rule, bonus_cards=bonus_cards, natural_rule=natural_rule,
    )


def _parse_vigorish(c: _Collector, g: Mapping[str, Any], family: str,
                    variant: str | None) -> VigorishConfig | None:
    v = _get_table(c, g, "vigorish", "game.vigorish")
    needs = family != "21-baccarat" and variant == "standard"
    if v is None:
        if needs:
            c.add("game.vigorish", _MISSING,
                  "required table for a standard game: 631a.13(d) makes the Rules Submission "
                  "choose collection = 'at-payout' or 'marked'")
        return None
    if family == "21-baccarat":
        c.add("game.vigorish", v, "not allowed: 681a.8 collects no vigorish")
        return None
    if variant == "ez":
        c.add("game.vigorish", v, "not allowed: EZ Baccarat collects no vigorish (631a.1, 631a.13(c))")
        return None
    c.unknown("game.vigorish", v, ("rate_percent", "round_up_to_25c", "collection", "rounding"))
    rate = _get_int(c, v, "rate_percent", "game.vigorish.rate_percent", 5, choices=(5,),
                    why=" (631a.13(c) fixes 5%)")
    round_up = _get_bool(c, v, "round_up_to_25c", "game.vigorish.round_up_to_25c", False)
    collection = _get_choice(c, v, "collection", "game.vigorish.collection", _MISSING,
                             VIG_COLLECTION, " (631a.13(d)(1) or (2))")
    rounding_text = v.get("rounding", "up")
    try:
        rounding = Rounding.parse(rounding_text)
    except (ValueError, TypeError) as exc:
        c.add("game.vigorish.rounding", rounding_text, str(exc).split(": ", 1)[-1])
        rounding = Rounding.UP
    if rate is None or collection is None:
        return None
    return VigorishConfig(rate=Fraction(rate, 100), round_up_to_25c=round_up,
                          collection=collection, rounding=rounding)


def _parse_tie(c: _Collector, g: Mapping[str, Any], is21: bool) -> Fraction:
    t = _get_table(c, g, "tie", "game.tie") or {}
    c.unknown("game.tie", t, ("odds",))
    default = TIE_ODDS_681A if is21 else Fraction(8)
    raw = t.get("odds", None)
    if raw is None:
        return default
    try:
        odds = parse_odds(raw)
    except ValueError as exc:
        c.add("game.tie.odds", raw, str(exc).split(": ", 1)[-1])
        return default
    if is21 and odds != TIE_ODDS_681A:
        c.add("game.tie.odds", raw, "must be '10 to 1' (681a.8(b))")
        return default
    if not is21 and odds < MIN_TIE_ODDS:
        c.add("game.tie.odds", raw, "must be at least '8 to 1' (631a.13(b))")
        return default
    return odds


def _parse_wagers(c: _Collector, data: Mapping[str, Any], game: GameConfig | None
                  ) -> tuple[WagerConfig, ...]:
    registry = REGISTRY  # imports only the modules of the keys looked up
    w = _get_table(c, data, "wagers", "wagers", required=True)
    if w is None:
        return ()
    result: list[WagerConfig] = []
    for key, table in w.items():
        path = f"wagers.{key}"
        if not isinstance(table, dict):
            c.add(path, table, "must be a table")
            continue
        if game is None:
            continue
        spec = registry.lookup(key, game.family, game.variant)
        if spec is None:
            offered = ", ".join(registry.keys_for(game.family, game.variant))
            c.add(path, table, f"no such wager for family {game.family!r} variant "
                               f"{game.variant!r}; allowed: {offered}")
            continue
        c.unknown(path, table, COMMON_WAGER_KEYS + tuple(spec.options))
        allowed = spec.allowed_paytables(game.decks)
        paytable = table.get("paytable")
        if allowed:
            if paytable not in allowed:
                c.add(f"{path}.paytable", paytable if "paytable" in table else _MISSING,
                      f"must be one of {', '.join(repr(p) for p in allowed)} "
                      f"({spec.section}, {game.decks} decks)")
                paytable = None
        elif paytable is not None:
            c.add(f"{path}.paytable", paytable, f"this wager has no paytable choice ({spec.section})")
        min_cents = _get_int(c, table, "min_cents", f"{path}.min_cents", None, 1, MAX_WAGER_CENTS,
                             why=" (integer cents)")
        max_cents = _get_int(c, table, "max_cents", f"{path}.max_cents", None, 1, MAX_WAGER_CENTS,
                             why=" (integer cents)")
        if min_cents is not None and max_cents is not None and min_cents > max_cents:
            c.add(f"{path}.max_cents", max_cents, f"must be >= min_cents ({min_cents})")
        options = {k: v for k, v in table.items() if k in spec.options}
        standalone = _get_bool(c, table, "without_base_wager", f"{path}.without_base_wager",
                               False)
        if standalone and key not in WITHOUT_BASE_WAGER_ALLOWED:
            c.add(f"{path}.without_base_wager", True,
                  "only " + ", ".join(f"{k} ({sec})" for k, sec in
                                      WITHOUT_BASE_WAGER_ALLOWED.items())
                  + " may be offered without a Baccarat wager")
            standalone = False
        config = WagerConfig(key=key, paytable=paytable, min_cents=min_cents,
                             max_cents=max_cents, options=options,
                             without_base_wager=bool(standalone))
        if allowed and paytable is None:
            continue
        try:
            spec.factory(config, game)
        except WagerConfigError as exc:
            c.add(f"{path}.{exc.option}", exc.value, exc.allowed)
            continue
        result.append(config)
    if game is not None:
        _check_one_paytable(c, result, game.family)
        keys = {wc.key for wc in result} | set(w)
        for required in ("banker", "player"):
            if required not in keys:
                sec = "681a.6(c)" if game.is_21 else "631a.8(a)"
                c.add(f"wagers.{required}", _MISSING, f"required table ({sec})")
    return tuple(result)


def _check_one_paytable(c: _Collector, wagers: list[WagerConfig], family: str) -> None:
    """Each ONE_PAYTABLE_GROUPS section allows one paytable: the first offered key sets it."""
    letters = {wc.key: wc.paytable for wc in wagers}
    for keys, sections in ONE_PAYTABLE_GROUPS:
        offered = [k for k in keys if letters.get(k) is not None]
        if family not in sections or len(offered) < 2:
            continue
        first = offered[0]
        for key in offered[1:]:
            if letters[key] != letters[first]:
                c.add(f"wagers.{key}.paytable", letters[key],
                      f"must be {letters[first]!r} like wagers.{first}.paytable "
                      f"({sections[family]}: one paytable for the wager)")


def parse_submission(data: Mapping[str, Any], source: str) -> Submission:
    """Validate a parsed TOML document; raise `SubmissionError` listing every problem."""
    c = _Collector(source)
    allowed_top = ("table", "game", "wagers") + OTHER_OWNED_SECTIONS
    c.unknown("", {k: v for k, v in data.items() if k not in allowed_top}, allowed_top)
    game = _parse_game(c, data)
    family = game.family if game else (data.get("game", {}) or {}).get("family") \
        if isinstance(data.get("game"), dict) else None
    table = _parse_table(c, data, family if isinstance(family, str) else None)
    wagers = _parse_wagers(c, data, game)
    if c.errors or table is None or game is None:
        if not c.errors:
            c.errors.append(f"{source}: invalid Rules Submission")
        raise SubmissionError(source, c.errors)
    return Submission(source=source, table=table, game=game, wagers=wagers)


def load_submission(path: str | Path) -> Submission:
    """Read and validate a table's TOML Rules Submission."""
    p = Path(path)
    try:
        with p.open("rb") as fh:
            data = tomllib.load(fh)
    except OSError as exc:
        raise SubmissionError(str(p), [f"{p}: cannot read: {exc.strerror or exc}"]) from exc
    except tomllib.TOMLDecodeError as exc:
        raise SubmissionError(str(p), [f"{p}: not valid TOML: {exc}"]) from exc
    return parse_submission(data, str(p))
