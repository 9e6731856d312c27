"""Must-Hit-By Mystery meters (631c.6(c)): booking contributions against the hidden trigger,
and arming a new trigger with only its commitment logged."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from fractions import Fraction

from controller.progressive.config import LevelSpec, ProgressiveSpec
from controller.progressive.core import NONCE_BYTES, Contribution, commitment, draw_trigger
from controller.progressive.ledger import AWARD, INCREMENT, RESEED, Award, MeterLedger
from controller.rules.side.mystery import award_cents, crosses_trigger

MYSTERY_LABEL = "Must-Hit-By Mystery bonus"


def total(items: Iterable[Contribution]) -> Fraction:
    return sum((i.amount for i in items), Fraction(0))


class MysteryBook:
    """The mystery levels of one table's ledger, with the CSPRNG that draws their triggers."""

    def __init__(self, ledger: MeterLedger, randbelow: Callable[[int], int],
                 token_bytes: Callable[[int], bytes]) -> None:
        self.ledger = ledger
        self._randbelow = randbelow
        self._token_bytes = token_bytes

    def book(self, spec: ProgressiveSpec, level: LevelSpec, items: Sequence[Contribution],
             amounts: Mapping[int, int], round_id: int) -> list[Award]:
        """631c.6(c)(3): add contributions in seat order; the one that carries the meter past
        the hidden trigger wins 100% of the meter (631c.6(c)(7)); then reset and re-arm."""
        ledger = self.ledger
        awards: list[Award] = []
        row = ledger.meter(spec.name, level.level)
        armed = ledger.armed_mystery(spec.name, level.level)
        assert row is not None and armed is not None, "seeded and armed at start-up"
        meter, (epoch, trigger, _, _) = row.value, armed
        pending: list[Contribution] = []

        def book(batch: list[Contribution]) -> None:
            if batch:
                ledger.change(spec.name, level.level, total(batch), INCREMENT,
                              round_id=round_id, seats=[i.seat for i in batch],
                              wagers_cents=sum(amounts[i.seat] for i in batch))

        for item in items:
            # A meter already past its trigger (only an audited adjustment can do that) must
            # still hit: the next qualifying contribution wins rather than none ever again.
            if not (crosses_trigger(meter, item.amount, trigger) or meter > trigger):
                pending.append(item)
                meter += item.amount
                continue
            book(pending + [item])
            pending = []
            won = award_cents(meter + item.amount)
            award = ledger.create_award(spec.name, level.level, round_id, item.seat, won,
                                        MYSTERY_LABEL, "631c.6(c)(3)",
                                        ledger.next_pay_order(round_id))
            ledger.change(spec.name, level.level, Fraction(-won), AWARD, round_id=round_id,
                          award_id=award.award_id)
            ledger.reveal_mystery(spec.name, level.level, epoch, award.award_id, round_id)
            # 631c.6(c)(5)(iv): reset to the minimum; the sub-cent remainder stays on the meter.
            after = ledger.change(spec.name, level.level, Fraction(level.reset_cents), RESEED,
                                  round_id=round_id, award_id=award.award_id)
            epoch, trigger = self.arm(spec, level)
            meter = after.value
            awards.append(award)
        book(pending)
        return awards

    def arm(self, spec: ProgressiveSpec, level: LevelSpec) -> tuple[int, int]:
        """Draw a new hidden trigger with the CSPRNG and log only its commitment."""
        assert level.trigger_bounds is not None
        epoch = self.ledger.last_epoch(spec.name, level.level) + 1
        trigger = draw_trigger(level.trigger_bounds, self._randbelow)
        nonce = self._token_bytes(NONCE_BYTES)
        self.ledger.arm_mystery(spec.name, level.level, epoch, trigger, nonce,
                                commitment(spec.name, level.level, epoch, trigger, nonce))
        return epoch, trigger
