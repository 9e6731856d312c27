"""The `[wagers.<key>]` sections of a Rules Submission: each wager the family and variant
offer (controller/rules/registry.py), its paytable, limits and options, checked by the
wager's own factory; the groups that allow one paytable for the wager as a whole."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.errors import MISSING, ConfigProblems
from controller.rules.registry import REGISTRY, WagerConfigError
from controller.rules.submission_types import GameConfig, WagerConfig
from controller.rules.submission_values import get_bool, get_int, get_table

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


def parse_wagers(c: ConfigProblems, data: Mapping[str, Any], game: GameConfig | None
                  ) -> tuple[WagerConfig, ...]:
    registry = REGISTRY  # imports only the modules of the keys looked up
    w = get_table(c, data, "wagers", "wagers", required=True)
    if w is None:
        return ()
    result: list[WagerConfig] = []
    for key, table in w.items():
        path = f"wagers.{key}"
        if not isinstance(table, dict):
            c.wrong(path, table, "must be a table")
            continue
        if game is None:
            continue
        spec = registry.lookup(key, game.family, game.variant)
        if spec is None:
            offered = ", ".join(registry.keys_for(game.family, game.variant))
            c.wrong(path, table, f"no such wager for family {game.family!r} variant "
                               f"{game.variant!r}; allowed: {offered}")
            continue
        c.unknown_keys(path, table, COMMON_WAGER_KEYS + tuple(spec.options))
        allowed = spec.allowed_paytables(game.decks)
        paytable = table.get("paytable")
        if allowed:
            if paytable not in allowed:
                c.wrong(f"{path}.paytable", paytable if "paytable" in table else MISSING,
                      f"must be one of {', '.join(repr(p) for p in allowed)} "
                      f"({spec.section}, {game.decks} decks)")
                paytable = None
        elif paytable is not None:
            c.wrong(f"{path}.paytable", paytable, f"this wager has no paytable choice ({spec.section})")
        min_cents = get_int(c, table, "min_cents", f"{path}.min_cents", None, 1, MAX_WAGER_CENTS,
                             why=" (integer cents)")
        max_cents = get_int(c, table, "max_cents", f"{path}.max_cents", None, 1, MAX_WAGER_CENTS,
                             why=" (integer cents)")
        if min_cents is not None and max_cents is not None and min_cents > max_cents:
            c.wrong(f"{path}.max_cents", max_cents, f"must be >= min_cents ({min_cents})")
        options = {k: v for k, v in table.items() if k in spec.options}
        standalone = get_bool(c, table, "without_base_wager", f"{path}.without_base_wager",
                               False)
        if standalone and key not in WITHOUT_BASE_WAGER_ALLOWED:
            c.wrong(f"{path}.without_base_wager", True,
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
            c.wrong(f"{path}.{exc.option}", exc.value, exc.allowed)
            continue
        result.append(config)
    if game is not None:
        _check_one_paytable(c, result, game.family)
        keys = {wc.key for wc in result} | set(w)
        for required in ("banker", "player"):
            if required not in keys:
                sec = "681a.6(c)" if game.is_21 else "631a.8(a)"
                c.wrong(f"wagers.{required}", MISSING, f"required table ({sec})")
    return tuple(result)


def _check_one_paytable(c: ConfigProblems, wagers: list[WagerConfig], family: str) -> None:
    """Each ONE_PAYTABLE_GROUPS section allows one paytable: the first offered key sets it."""
    letters = {wc.key: wc.paytable for wc in wagers}
    for keys, sections in ONE_PAYTABLE_GROUPS:
        offered = [k for k in keys if letters.get(k) is not None]
        if family not in sections or len(offered) < 2:
            continue
        first = offered[0]
        for key in offered[1:]:
            if letters[key] != letters[first]:
                c.wrong(f"wagers.{key}.paytable", letters[key],
                      f"must be {letters[first]!r} like wagers.{first}.paytable "
                      f"({sections[family]}: one paytable for the wager)")
