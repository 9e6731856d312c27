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

from controller.errors import MISSING, ConfigProblems, ConfigurationError
from controller.rules.hand21 import NATURAL_RULES as NATURAL_RULES_681A
from controller.rules.money import Rounding, parse_odds
from controller.rules.submission_values import get_bool, get_choice, get_int, get_table
from controller.rules.submission_wagers import (  # re-exported: callers read them from here
    COMMON_WAGER_KEYS as COMMON_WAGER_KEYS,
    MAX_WAGER_CENTS as MAX_WAGER_CENTS,
    ONE_PAYTABLE_GROUPS as ONE_PAYTABLE_GROUPS,
    WITHOUT_BASE_WAGER_ALLOWED as WITHOUT_BASE_WAGER_ALLOWED,
    parse_wagers,
)
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
from controller.text_files import read_toml

__all__ = [
    "CutConfig", "GameConfig", "MIN_CUT_CARDS", "Submission", "SubmissionError", "TableConfig",
    "VIG_RATE", "VigorishConfig", "WagerConfig", "load_submission", "parse_submission",
]

# Top-level sections that belong to other engineers' packages; the rules parser skips them.
# The same names as controller.config.DEVICE_SECTIONS (a test holds them equal): a table's
# whole configuration is read by `tablectl par-sheet`, `simulate` and `replay` too.
OTHER_OWNED_SECTIONS: tuple[str, ...] = (
    "shoe", "shuffler", "gpio", "store", "control", "display", "progressive",
    "linked", "mqtt", "supervisors", "access", "metrics", "witness", "software",
    "display_service",
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

class SubmissionError(ConfigurationError):
    """A Rules Submission that cannot be used; `errors` holds one line per problem."""

    def __init__(self, source: str, errors: list[str]) -> None:
        self.source = source
        self.errors = tuple(errors)
        super().__init__("\n".join(self.errors))


MAX_TABLE_ID_CHARS = 64
MAX_TABLE_NAME_CHARS = 48


def seat_rule(family: str | None) -> tuple[int, int, str]:
    """How many seats a table of `family` may have, and the section (or ruling) saying so."""
    lo, hi = SEATS.get(family or "baccarat", (1, 14))
    section = {"21-baccarat": "681a.2(a)", "minibaccarat": "ruling"}.get(family or "", "631a.2(a)")
    return lo, hi, section


def _parse_table(c: ConfigProblems, data: Mapping[str, Any], family: str | None) -> TableConfig | None:
    t = get_table(c, data, "table", "table", required=True)
    if t is None:
        return None
    c.unknown_keys("table", t, ("id", "seats", "name"))
    table_id = t.get("id", MISSING)
    if not isinstance(table_id, str) or not table_id.strip():
        c.wrong("table.id", table_id, "required non-empty string")
        table_id = None
    elif len(table_id) > MAX_TABLE_ID_CHARS or not table_id.isprintable():
        # The id is in every log line, metric label and report: a name, not a payload.
        shown = table_id if len(table_id) <= 24 else f"{table_id[:16]}... ({len(table_id)} " \
            "characters)"
        c.wrong("table.id", shown, f"not allowed; allowed: 1 to {MAX_TABLE_ID_CHARS} printable "
                                 "characters, e.g. 'BAC-01'")
        table_id = None
    name = t.get("name", "")
    if not isinstance(name, str):
        c.wrong("table.name", name, "must be a string")
        name = ""
    elif len(name) > MAX_TABLE_NAME_CHARS or not name.isprintable():
        # The screens show it whole (docs/display.md): at most two lines at the scoreboard's
        # smallest size in portrait whatever its letters, and wrapped in the dealer's bar.
        c.wrong("table.name", name, f"not allowed; allowed: at most {MAX_TABLE_NAME_CHARS} "
                                     "printable characters (no line breaks), e.g. 'Main floor "
                                     "baccarat 1'")
        name = ""
    lo, hi, section = seat_rule(family)
    seats = get_int(c, t, "seats", "table.seats", MISSING, lo, hi,
                     why=f" ({section}, game.family = {family!r})")
    if table_id is None or seats is None:
        return None
    return TableConfig(id=table_id, seats=seats, name=name)


def _parse_game(c: ConfigProblems, data: Mapping[str, Any]) -> GameConfig | None:
    g = get_table(c, data, "game", "game", required=True)
    if g is None:
        return None
    c.unknown_keys("game", g, ("family", "decks", "variant", "fully_automated", "squeeze",
                          "payout_rounding", "vigorish", "tie", "irregularities", "cut",
                          "drawing", "naturals"))
    family = get_choice(c, g, "family", "game.family", MISSING, FAMILIES)
    if family is None:
        return None
    is21 = family == "21-baccarat"
    decks = get_int(c, g, "decks", "game.decks", MISSING, choices=DECKS[family],
                     why=" (681a.3(a))" if is21 else " (631a.3(a))")
    variants = ("standard",) if is21 else VARIANTS
    variant = get_choice(c, g, "variant", "game.variant", "standard", variants,
                          " (681a has no variants)" if is21 else "")
    fully_automated = get_bool(c, g, "fully_automated", "game.fully_automated", False)
    squeeze = get_bool(c, g, "squeeze", "game.squeeze", False)
    rounding_text = g.get("payout_rounding", "down")
    try:
        payout_rounding = Rounding.parse(rounding_text)
    except (ValueError, TypeError) as exc:
        c.wrong("game.payout_rounding", rounding_text, str(exc).split(": ", 1)[-1])
        payout_rounding = Rounding.DOWN

    vigorish = _parse_vigorish(c, g, family, variant)
    tie_odds = _parse_tie(c, g, is21)

    irr = get_table(c, g, "irregularities", "game.irregularities") or {}
    c.unknown_keys("game.irregularities", irr, ("disclosed_player_third",))
    disclosed = get_choice(c, irr, "disclosed_player_third",
                            "game.irregularities.disclosed_player_third", "discard",
                            DISCLOSED_THIRD, " (631a.15(c)(1) or (2))") or "discard"

    cut_t = get_table(c, g, "cut", "game.cut") or {}
    c.unknown_keys("game.cut", cut_t, ("min_cut_cards", "cover_card_from_bottom"))
    min_cover = MIN_COVER_FROM_BOTTOM[family]
    cut_sec = "681a.5" if is21 else "631a.5"
    min_cut = get_int(c, cut_t, "min_cut_cards", "game.cut.min_cut_cards", MIN_CUT_CARDS,
                       MIN_CUT_CARDS, 100, why=f" ({cut_sec}(c))") or MIN_CUT_CARDS
    cover = get_int(c, cut_t, "cover_card_from_bottom", "game.cut.cover_card_from_bottom",
                     min_cover, min_cover, 200, why=f" ({cut_sec}(d))") or min_cover

    draw_t = get_table(c, g, "drawing", "game.drawing") or {}
    if draw_t and not is21:
        c.wrong("game.drawing", draw_t, "only for game.family = '21-baccarat' (631a.11 fixes drawing)")
    c.unknown_keys("game.drawing", draw_t, ("rule", "bonus_cards"))
    draw_rule = get_choice(c, draw_t, "rule", "game.drawing.rule", "one-card", DRAW_RULES,
                            " (681a.7(g), docs/rulings.md)") or "one-card"
    bonus_cards = get_choice(c, draw_t, "bonus_cards", "game.drawing.bonus_cards",
                              "first-three", BONUS_CARDS, " (681a.3(e))") or "first-three"
    nat_t = get_table(c, g, "naturals", "game.naturals") or {}
    if nat_t and not is21:
        c.wrong("game.naturals", nat_t, "only for game.family = '21-baccarat' (631a.11 fixes naturals)")
    c.unknown_keys("game.naturals", nat_t, ("rule",))
    natural_rule = get_choice(c, nat_t, "rule", "game.naturals.rule", "natural-wins",
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


def _parse_vigorish(c: ConfigProblems, g: Mapping[str, Any], family: str,
                    variant: str | None) -> VigorishConfig | None:
    v = get_table(c, g, "vigorish", "game.vigorish")
    needs = family != "21-baccarat" and variant == "standard"
    if v is None:
        if needs:
            c.wrong("game.vigorish", MISSING,
                  "required table for a standard game: 631a.13(d) makes the Rules Submission "
                  "choose collection = 'at-payout' or 'marked'")
        return None
    if family == "21-baccarat":
        c.wrong("game.vigorish", v, "not allowed: 681a.8 collects no vigorish")
        return None
    if variant == "ez":
        c.wrong("game.vigorish", v, "not allowed: EZ Baccarat collects no vigorish (631a.1, 631a.13(c))")
        return None
    c.unknown_keys("game.vigorish", v, ("rate_percent", "round_up_to_25c", "collection", "rounding"))
    rate = get_int(c, v, "rate_percent", "game.vigorish.rate_percent", 5, choices=(5,),
                    why=" (631a.13(c) fixes 5%)")
    round_up = get_bool(c, v, "round_up_to_25c", "game.vigorish.round_up_to_25c", False)
    collection = get_choice(c, v, "collection", "game.vigorish.collection", MISSING,
                             VIG_COLLECTION, " (631a.13(d)(1) or (2))")
    rounding_text = v.get("rounding", "up")
    try:
        rounding = Rounding.parse(rounding_text)
    except (ValueError, TypeError) as exc:
        c.wrong("game.vigorish.rounding", rounding_text, str(exc).split(": ", 1)[-1])
        rounding = Rounding.UP
    if rate is None or collection is None:
        return None
    return VigorishConfig(rate=Fraction(rate, 100), round_up_to_25c=round_up,
                          collection=collection, rounding=rounding)


def _parse_tie(c: ConfigProblems, g: Mapping[str, Any], is21: bool) -> Fraction:
    t = get_table(c, g, "tie", "game.tie") or {}
    c.unknown_keys("game.tie", t, ("odds",))
    default = TIE_ODDS_681A if is21 else Fraction(8)
    raw = t.get("odds", None)
    if raw is None:
        return default
    try:
        odds = parse_odds(raw)
    except ValueError as exc:
        c.wrong("game.tie.odds", raw, str(exc).split(": ", 1)[-1])
        return default
    if is21 and odds != TIE_ODDS_681A:
        c.wrong("game.tie.odds", raw, "must be '10 to 1' (681a.8(b))")
        return default
    if not is21 and odds < MIN_TIE_ODDS:
        c.wrong("game.tie.odds", raw, "must be at least '8 to 1' (631a.13(b))")
        return default
    return odds


def parse_submission(data: Mapping[str, Any], source: str) -> Submission:
    """Validate a parsed TOML document; raise `SubmissionError` listing every problem."""
    c = ConfigProblems(source)
    allowed_top = ("table", "game", "wagers") + OTHER_OWNED_SECTIONS
    c.unknown_keys("", {k: v for k, v in data.items() if k not in allowed_top}, allowed_top)
    game = _parse_game(c, data)
    family = game.family if game else (data.get("game", {}) or {}).get("family") \
        if isinstance(data.get("game"), dict) else None
    table = _parse_table(c, data, family if isinstance(family, str) else None)
    wagers = parse_wagers(c, data, game)
    if c.items or table is None or game is None:
        if not c.items:
            c.items.append(f"{source}: invalid Rules Submission")
        raise SubmissionError(source, c.items)
    return Submission(source=source, table=table, game=game, wagers=wagers)


def load_submission(path: str | Path) -> Submission:
    """Read and validate a table's TOML Rules Submission."""
    p = Path(path)
    try:
        data = read_toml(p)
    except OSError as exc:
        raise SubmissionError(str(p), [f"{p}: cannot read: {exc.strerror or exc}"]) from exc
    except tomllib.TOMLDecodeError as exc:
        raise SubmissionError(str(p), [f"{p}: not valid TOML: {exc}"]) from exc
    return parse_submission(data, str(p))
