"""The wager registry: the one extension point for every wager a table can offer.

How a wager plugs in (the 631c/627b side wagers in `controller/rules/side/` do
exactly this):

1. Write a class that satisfies `controller.rules.wager.WagerRule` (`key`,
   `section`, `settles_at`, `settle(seat, amount_cents, round_view)`).
2. For the par sheet, give it a method `par(ctx: ParContext) -> WagerPar`
   (see `controller.rules.par`): it returns every paying outcome with its exact
   probability. `ctx` offers the configured shoe's composition by rank and
   suit, the exact value-level distribution of 631a rounds, and rank-level
   first-four-card weights, so a rule chooses the combinatorics it needs.
   Progressive wagers fill `WagerPar.progressive`, mystery bonuses
   `WagerPar.mystery` (return at the reset value, growth with the meter).
3. Register a factory under the wager's configuration key, at import time of
   its module::

       @wager_rule("perfect_pairs", section="631c.1", families={"baccarat"},
                   paytables=("A", "B"), options={"per_hand": "..."})
       def _make(config: WagerConfig, game: GameConfig) -> WagerRule:
           return PerfectPairs(config.paytable, ...)

   The factory receives the wager's `[wagers.<key>]` table (`WagerConfig`,
   with `paytable`, `min_cents`, `max_cents` and the rule's own `options`) and
   the `[game]` table (`GameConfig`). It raises `WagerConfigError(option,
   value, allowed)` for a bad option; the Rules Submission parser turns that
   into a `SubmissionError` naming the file and the dotted key.

A wager that replaces a main wager for one variant (e.g. the commission-free
Banker wager, 631c.5/627b.2) registers the same key with
`variants={"commission-free"}`; a variant-specific registration wins over a
generic one.

4. Name the module and its keys in `WAGER_MODULES` below. A lookup imports only
   the modules that may register its key for the table's family and variant,
   so a plain Baccarat table never imports the 21 Baccarat engine or the
   631c/627b side wagers (`tablectl par-sheet` answers at once). The manifest is
   the one list of wager modules: `load_rules()` imports every module it names,
   and tests/rules/test_wager_manifest.py fails until it says exactly what the
   modules register (a module under `controller/rules/side/` that registers a
   wager and is missing here, or a key listed under the wrong family).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from controller.errors import ConfigurationError, shown_setting
from controller.rules.wager import WagerRule

if TYPE_CHECKING:
    from controller.rules.submission_types import GameConfig, WagerConfig

WagerFactory = Callable[["WagerConfig", "GameConfig"], WagerRule]

FAMILIES_631A = frozenset({"baccarat", "minibaccarat"})
FAMILY_681A = frozenset({"21-baccarat"})

_631A = "controller.rules.baccarat_wagers"
_681A = "controller.rules.twentyone"
_SIDE = "controller.rules.side."  # one module per 631c/627b game
_EVERY_VARIANT = None

# Which module registers which keys: (module, families, variants or _EVERY_VARIANT, keys).
# The one list of wager modules (see the module docstring, step 4); checked against what the
# modules register by tests/rules/test_wager_manifest.py.
ManifestRow = tuple[str, frozenset[str], frozenset[str] | None, tuple[str, ...]]
WAGER_MODULES: tuple[ManifestRow, ...] = (
    (_631A, FAMILIES_631A, _EVERY_VARIANT,
     ("player", "tie", "dragon_bonus_player", "dragon_bonus_banker", "house_money")),
    (_631A, FAMILIES_631A, frozenset({"standard", "ez"}), ("banker",)),
    (_631A, FAMILIES_631A, frozenset({"ez"}), ("dragon_7", "panda_8")),
    (_681A, FAMILY_681A, _EVERY_VARIANT, ("player", "banker", "tie", "bonus_player", "bonus_banker")),
    (_SIDE + "commission_free", FAMILIES_631A, frozenset({"commission-free"}),
     ("tie", "player_pair", "banker_pair", "lucky_six")),
    # The commission-free Banker, which its `rising_phoenix` option makes Rising Phoenix's.
    (_SIDE + "rising_phoenix", FAMILIES_631A, frozenset({"commission-free"}), ("banker",)),
    (_SIDE + "perfect_pairs", FAMILIES_631A, _EVERY_VARIANT,
     ("perfect_pairs_player", "perfect_pairs_banker")),
    (_SIDE + "heavenly9", frozenset({"baccarat"}), _EVERY_VARIANT, ("heavenly_9_progressive",)),
    (_SIDE + "five_treasures", frozenset({"baccarat"}), _EVERY_VARIANT,
     ("five_treasures_fortune_7", "five_treasures_golden_8", "five_treasures_heavenly_9",
      "five_treasures_blazing_7s", "five_treasures_cover_all")),
    (_SIDE + "lucky_nines", frozenset({"baccarat"}), _EVERY_VARIANT, ("lucky_nines",)),
    (_SIDE + "majestic_match", frozenset({"baccarat"}), _EVERY_VARIANT,
     ("majestic_match_player", "majestic_match_banker")),
    (_SIDE + "royal9", frozenset({"minibaccarat"}), _EVERY_VARIANT, ("royal_9_progressive",)),
    (_SIDE + "golden_talons", frozenset({"minibaccarat"}), _EVERY_VARIANT,
     ("golden_talons_player", "golden_talons_banker")),
    (_SIDE + "harmony", frozenset({"minibaccarat"}), _EVERY_VARIANT, ("harmony_progressive",)),
    (_SIDE + "rising_phoenix", frozenset({"minibaccarat"}), _EVERY_VARIANT,
     tuple(f"rising_phoenix_{name}" for name in (
         "sun_7", "moon_8", "nine_over_seven", "two_card_8_over_two_card_1",
         "player_wins_three_card_6", "banker_wins_1_or_2", "both_8_or_9", "one_over_zero",
         "three_card_6_over_three_card_3", "three_card_8_over_three_card_0",
         "banker_over_two_card_7", "three_card_9_over_three_card_6",
         "three_card_9_over_three_card_8", "player_three_card_8_over_three_card_0", "tie_0",
         "tie_1_2_3", "tie_4_5_6_7", "tie_8_or_9", "player_pair", "banker_pair"))),
)


def modules_for(key: str, family: str, variant: str,
                manifest: Sequence[ManifestRow] = WAGER_MODULES) -> list[str] | None:
    """The modules `manifest` says may register `key` at a `family`/`variant` table;
    None when it names no module for `key` at all (then every module is imported)."""
    named = False
    modules: list[str] = []
    for module, families, variants, keys in manifest:
        if key not in keys:
            continue
        named = True
        if family in families and (variants is None or variant in variants) \
                and module not in modules:
            modules.append(module)
    return modules if named else None


class WagerConfigError(ConfigurationError):
    """A wager factory's complaint about one option of its `[wagers.<key>]` table.

    `allowed` is worded to follow "option = value: " on a `[wagers.<key>]` line, so a list
    of values reads "allowed: A, B"; `what_is_allowed` is the same without that word, for a
    report that words "allowed:" itself (a `[progressive.<name>]` section's).
    """

    def __init__(self, option: str, value: object, allowed: str) -> None:
        super().__init__(f"{option} = {shown_setting(value)}: {allowed}")
        self.option = option
        self.value = value
        self.allowed = allowed

    @property
    def what_is_allowed(self) -> str:
        return self.allowed.removeprefix("allowed: ")


@dataclass(frozen=True)
class WagerSpec:
    """Everything the submission parser and the par sheet need to know about a wager key."""

    key: str
    factory: WagerFactory
    section: str  # the section that authorises the wager, e.g. "631a.8(a)(4)"
    families: frozenset[str]
    variants: frozenset[str] | None = None  # None: offered in every variant of the families
    paytables: tuple[str, ...] = ()  # allowed paytable letters; empty: no `paytable` key
    paytables_by_decks: Mapping[int, tuple[str, ...]] | None = None  # e.g. 681a.8(c)
    options: Mapping[str, str] = field(default_factory=dict)  # rule-specific keys -> help
    description: str = ""
    progressive: bool = False

    def allowed_paytables(self, decks: int) -> tuple[str, ...]:
        if self.paytables_by_decks is not None:
            return self.paytables_by_decks.get(decks, ())
        return self.paytables


class WagerRegistry:
    """Wager specs by configuration key; lookups choose by game family and variant."""

    def __init__(self, manifest: Sequence[ManifestRow] = ()) -> None:
        """`manifest`: the modules that register wagers into this registry, imported as
        lookups need them (`WAGER_MODULES` for the process-wide one); none for a registry
        filled by hand."""
        self._specs: dict[str, list[WagerSpec]] = {}
        self._manifest = tuple(manifest)
        self._all_imported = not self._manifest

    def import_all(self) -> WagerRegistry:
        """Import every module of the manifest (idempotent). A module that fails to import
        is not hidden: the error propagates, because a table must not run with a wager
        silently missing."""
        if not self._all_imported:
            for module, _families, _variants, _keys in self._manifest:
                importlib.import_module(module)
            self._all_imported = True
        return self

    def _import_for(self, key: str, family: str, variant: str) -> None:
        if self._all_imported:
            return
        modules = modules_for(key, family, variant, self._manifest)
        if modules is None:
            self.import_all()  # a key the manifest does not name: maybe an unlisted module has it
            return
        for module in modules:
            importlib.import_module(module)

    def register(self, spec: WagerSpec) -> WagerSpec:
        existing = self._specs.setdefault(spec.key, [])
        for other in existing:
            overlap_family = other.families & spec.families
            same_variants = other.variants == spec.variants
            if overlap_family and same_variants:
                if other.factory is spec.factory:
                    return other  # re-import of the same module
                raise ValueError(
                    f"wager {spec.key!r} is already registered for {sorted(overlap_family)} "
                    f"variants {sorted(spec.variants) if spec.variants else 'all'}"
                )
        existing.append(spec)
        return spec

    def lookup(self, key: str, family: str, variant: str) -> WagerSpec | None:
        """The spec for `key` at a table of `family`/`variant`; variant-specific first."""
        self._import_for(key, family, variant)
        candidates = [s for s in self._specs.get(key, []) if family in s.families]
        specific = [s for s in candidates if s.variants is not None and variant in s.variants]
        if specific:
            return specific[0]
        generic = [s for s in candidates if s.variants is None]
        return generic[0] if generic else None

    def keys_for(self, family: str, variant: str) -> list[str]:
        self.import_all()
        return sorted(k for k in self._specs if self.lookup(k, family, variant) is not None)

    def all_specs(self) -> list[WagerSpec]:
        self.import_all()
        return [spec for specs in self._specs.values() for spec in specs]


REGISTRY = WagerRegistry(WAGER_MODULES)


def register_wager(spec: WagerSpec) -> WagerSpec:
    """Add a wager spec to the process-wide registry."""
    return REGISTRY.register(spec)


def wager_rule(
    key: str,
    *,
    section: str,
    families: Iterable[str],
    variants: Iterable[str] | None = None,
    paytables: Iterable[str] = (),
    paytables_by_decks: Mapping[int, Iterable[str]] | None = None,
    options: Mapping[str, str] | None = None,
    description: str = "",
    progressive: bool = False,
) -> Callable[[WagerFactory], WagerFactory]:
    """Decorator registering a factory `(WagerConfig, GameConfig) -> WagerRule` under `key`."""

    def decorate(factory: WagerFactory) -> WagerFactory:
        register_wager(WagerSpec(
            key=key, factory=factory, section=section, families=frozenset(families),
            variants=frozenset(variants) if variants is not None else None,
            paytables=tuple(paytables),
            paytables_by_decks=(
                {d: tuple(p) for d, p in paytables_by_decks.items()}
                if paytables_by_decks is not None else None),
            options=dict(options or {}), description=description, progressive=progressive,
        ))
        return factory

    return decorate


def load_rules() -> WagerRegistry:
    """The process-wide registry, with every module of `WAGER_MODULES` imported.
    Lookups alone need not call this: `REGISTRY.lookup` imports what it needs."""
    return REGISTRY.import_all()
