"""Must-Hit-By Mystery bonus (631c.6) and the Royal 9 mystery progressive (627b.3(h)): data and pure rules.

The secure random trigger and the durable meter belong to the progressive
system. This module gives it the configuration tables and the pure decisions:
who qualifies, what a qualifying wager contributes, whether a contribution
carries the meter past the trigger, what is paid and what the meter resets to.
All amounts are exact: contributions are Fractions of a cent until the
progressive system books them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from controller.rules.side.common import SideWagerConfigError


@dataclass(frozen=True, slots=True)
class MysteryConfiguration:
    """One configuration of 631c.6(c)(4)."""

    paytable: str  # "A".."D"
    minimum_wager_cents: int  # the qualifying Heavenly 9 wager
    minimum_cents: int  # lowest trigger value, and the reset amount (631c.6(c)(5)(iv))
    maximum_cents: int  # highest trigger value: the meter must hit by here
    contribution_rate: Fraction  # share of each qualifying wager added to the meter
    section: str = "631c.6(c)(4)"

    @property
    def name(self) -> str:
        return f"{self.paytable}-${self.minimum_wager_cents // 100}"


def _cfg(letter: str, dollars: int, low: int, high: int, rate: str) -> MysteryConfiguration:
    return MysteryConfiguration(letter, dollars * 100, low * 100, high * 100, Fraction(rate) / 100)


# 631c.6(c)(4): every (paytable, minimum wager) configuration.
MUST_HIT_BY_CONFIGURATIONS: dict[tuple[str, int], MysteryConfiguration] = {
    (c.paytable, c.minimum_wager_cents // 100): c for c in (
        _cfg("A", 1, 100, 200, "2"), _cfg("A", 2, 100, 200, "1.5"), _cfg("A", 5, 100, 250, "1"),
        _cfg("B", 1, 100, 500, "5"), _cfg("B", 2, 100, 500, "3.5"), _cfg("B", 5, 100, 500, "2"),
        _cfg("C", 1, 250, 500, "2"), _cfg("C", 2, 250, 500, "1.5"), _cfg("C", 5, 250, 500, "0.5"),
        _cfg("D", 1, 250, 1000, "5"), _cfg("D", 2, 250, 1000, "3"), _cfg("D", 5, 250, 1000, "2"),
    )
}


def mystery_configuration(key: str, paytable: object, wager_dollars: object) -> MysteryConfiguration:
    """Look up a 631c.6(c)(4) configuration; errors name the option and what is allowed."""
    letters = sorted({letter for letter, _ in MUST_HIT_BY_CONFIGURATIONS})
    if not isinstance(paytable, str) or paytable.strip().upper() not in letters:
        raise SideWagerConfigError(key, "mystery", paytable, f"allowed: {', '.join(letters)}")
    dollars = sorted({d for _, d in MUST_HIT_BY_CONFIGURATIONS})
    if isinstance(wager_dollars, bool) or wager_dollars not in dollars:
        raise SideWagerConfigError(key, "mystery_wager_dollars", wager_dollars,
                                   f"allowed: {', '.join(map(str, dollars))} (631c.6(c)(4))")
    return MUST_HIT_BY_CONFIGURATIONS[(paytable.strip().upper(), int(wager_dollars))]


def qualifies(config: MysteryConfiguration, baccarat_wager_cents: int,
              heavenly_9_wager_cents: int) -> bool:
    """631c.6(c)(1): a Baccarat wager and a Heavenly 9 wager of at least the configured amount."""
    return baccarat_wager_cents > 0 and heavenly_9_wager_cents >= config.minimum_wager_cents


def contribution(config: MysteryConfiguration, heavenly_9_wager_cents: int) -> Fraction:
    """631c.6(c)(2): the exact cents a qualifying wager adds to the mystery meter."""
    return config.contribution_rate * heavenly_9_wager_cents


def trigger_bounds(config: MysteryConfiguration) -> tuple[int, int]:
    """631c.6(c)(3): the inclusive range (cents) the RNG draws the hidden trigger from."""
    return config.minimum_cents, config.maximum_cents


def crosses_trigger(meter_before: Fraction, added: Fraction, trigger_cents: int) -> bool:
    """631c.6(c)(3): this contribution takes the meter *in excess of* the trigger.

    Only the contribution during which the meter passes the trigger wins; a
    meter already above it (which the system must never allow) does not re-trigger.
    """
    return meter_before <= trigger_cents < meter_before + added


def mystery_winner(meter_before: Fraction, contributions: Sequence[tuple[int, Fraction]],
                   trigger_cents: int) -> int | None:
    """The seat whose contribution crosses the trigger, contributions applied in the given order.

    The order is the progressive system's (the order it accepted the wagers,
    as its event log records); the rule only says the crossing one wins.
    """
    meter = Fraction(meter_before)
    for seat, added in contributions:
        if crosses_trigger(meter, added, trigger_cents):
            return seat
        meter += added
    return None


def award_cents(meter: Fraction) -> int:
    """631c.6(c)(7): 100% of the meter, in whole cents (a fraction of a cent stays on the books)."""
    return meter.numerator // meter.denominator


def reset_cents(config: MysteryConfiguration) -> int:
    """631c.6(c)(5)(iv): the meter resets to the configuration's minimum dollar value."""
    return config.minimum_cents


@dataclass(frozen=True, slots=True)
class Royal9MysteryConfiguration:
    """One row of 627b.3(h): reseed, random must-hit-by ceiling, incrementation rate."""

    number: int
    reseed_cents: int
    must_hit_by_cents: int
    increment_rate: Fraction
    section: str = "627b.3(h)"

    def as_must_hit_by(self) -> MysteryConfiguration:
        """The same mechanics as 631c.6: trigger drawn between reseed and must-hit-by."""
        return MysteryConfiguration(str(self.number), 0, self.reseed_cents,
                                    self.must_hit_by_cents, self.increment_rate, self.section)


ROYAL_9_MYSTERY_CONFIGURATIONS: dict[int, Royal9MysteryConfiguration] = {
    1: Royal9MysteryConfiguration(1, 25_000, 100_000, Fraction(5, 100)),
    2: Royal9MysteryConfiguration(2, 10_000, 50_000, Fraction(5, 100)),
    3: Royal9MysteryConfiguration(3, 10_000, 20_000, Fraction(2, 100)),
}
