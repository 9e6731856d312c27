"""A table's progressive for a shoe dealt off the table (`tablectl simulate`, `tablectl replay`).

`SimulatedProgressive` is the `controller.rules.dealing.RoundProgressive` a `ShoeDealing`
calls where the live table calls its `ProgressiveSystem`: the very same system, on a store
in memory, so the meters start at their configured resets (or where a replay says they
stood) and move with every contribution, award and reseed exactly as the live table's do.
What it adds is the round record's view: each progressive wager as a settlement, a meter
line paid the award the system made from the meter at the hit.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace
from fractions import Fraction

from controller.progressive.config import ProgressiveConfig, ProgressiveSpec
from controller.progressive.ledger import Award
from controller.progressive.mystery_book import MYSTERY_LABEL
from controller.progressive.system import ProgressiveSystem
from controller.rules.settlement import PlacedWager
from controller.rules.side.common import PaysMeter
from controller.rules.wager import Outcome, RoundView, Settlement
from controller.memory.store import Store
from drivers.protocols import LockedOut

OFF_TABLE = "simulate"  # who the store records for an award's validation and a meter's start
MYSTERY_SECTION = "631c.6(c)(3)"


class SimulatedProgressive:
    """The configuration's one progressive (631c.2(b), 627b.3(a), 627b.6(b)) on a store in
    memory, its meters at their resets (`start_meter_at` moves one to where it stood); mystery
    triggers drawn from `rng` so a seed replays them."""

    def __init__(self, config: ProgressiveConfig, rng: random.Random) -> None:
        if len(config.progressives) != 1:
            raise ValueError(f"one progressive expected, {len(config.progressives)} configured")
        # A linked progressive (605a.8) is dealt as this table's own: off the table there is
        # no shared ledger, and this table's wagers are the only ones dealt.
        self.spec: ProgressiveSpec = replace(config.progressives[0], linked=False)
        local = replace(config, progressives=(self.spec,), linked=None, mqtt=None)
        self.store = Store(":memory:")
        self.system = ProgressiveSystem(local, self.store, randbelow=rng.randrange,
                                        token_bytes=rng.randbytes)
        self.round_id = 0
        self.accepted: dict[int, int] = {}

    @property
    def wager_key(self) -> str:
        return self.spec.wager_key

    def start_meter_at(self, level: str, cents: int) -> None:
        """Move a meter to `cents` whole cents (where it stood at the table), as the audited
        adjustment a supervisor would make; raises KeyError naming an unknown level."""
        levels = [lv.level for lv in self.spec.levels]
        if level not in levels:
            raise KeyError(f"progressive {self.spec.name} has no meter {level!r}; its meters: "
                           + ", ".join(levels))
        if cents < 0:
            raise ValueError(f"meter {level} = {cents} cents: must not be negative")
        delta = cents - self.standing_cents()[level]
        if delta:
            self.system.adjust_meter(self.spec.name, level, delta, supervisor=OFF_TABLE,
                                     reason="where the meter stood")

    def standing_cents(self) -> dict[str, int]:
        return self.system.standing_cents(self.spec)

    def stake_cents(self, unit_cents: int) -> int:
        """The denomination of a one-denomination wager (Royal 9, 627b.3(f)-(g)); otherwise
        `unit_cents`, and at least the progressive's minimum (631c.2(c))."""
        if self.spec.game == "royal_9":
            return self.spec.wager_cents
        return max(unit_cents, self.spec.minimum_cents)

    def lock(self, wagers: Sequence[PlacedWager]) -> list[Settlement]:
        """Table._on_locked: the wagers on the sensors at the lock, with the base wagers."""
        self.round_id += 1
        mine = {w.seat: w.amount_cents for w in wagers if w.wager == self.wager_key}
        base = [{"seat": w.seat, "wager": w.wager, "amount_cents": w.amount_cents}
                for w in wagers]
        acceptance = self.system.on_lock(LockedOut("first-card", 0.0, frozenset(mine)), base,
                                         self.round_id)
        self.accepted = {w.seat: w.amount_cents for w in acceptance.accepted}
        out = [Settlement(self.wager_key, r.seat, mine.get(r.seat, 0), Outcome.PUSH,
                          Fraction(0), 0, 0, f"refused: {r.reason}", self.spec.rule.section)
               for r in acceptance.refused if r.seat in mine]
        out += [self._mystery(award) for award in acceptance.awards]
        return out

    def _mystery(self, award: Award) -> Settlement:
        # Won at the lock by a contribution (631c.6(c)(3)); no wager of its own.
        return Settlement(self.wager_key, award.seat, 0, Outcome.WIN, Fraction(0),
                          award.amount_cents, 0, MYSTERY_LABEL, MYSTERY_SECTION)

    def result(self, view: RoundView) -> list[Settlement]:
        """RoundPlay._finish_round: the system's awards, and every accepted wager's line."""
        rule = self.spec.rule.at_meters(self.standing_cents())
        awards = {(a.seat, a.level): a.amount_cents
                  for a in self.system.on_round_result(self.round_id, view)
                  if a.label != MYSTERY_LABEL}
        out = []
        for seat, cents in sorted(self.accepted.items()):
            line = rule.classify(view, seat)
            settled = replace(rule.settle(seat, cents, view), wager=self.wager_key)
            if line is not None and isinstance(line.pay, PaysMeter):
                won = awards[(seat, line.pay.level)]
                settled = replace(settled, win_cents=won, odds=Fraction(won, cents))
            out.append(settled)
        for award_id in [a.award_id for a in self.system.pending_awards()]:
            self.system.validate_award(award_id, OFF_TABLE)  # paid: the next round starts clean
        self.accepted = {}
        return out

    def void(self, section: str) -> list[Settlement]:
        """Settling.close_unplayed: the progressive wagers returned."""
        returned = self.system.on_round_void(self.round_id, section)
        self.accepted = {}
        return [Settlement(self.wager_key, seat, cents, Outcome.PUSH, Fraction(0), 0, 0,
                           "void round: wager returned", section) for seat, cents in returned]
