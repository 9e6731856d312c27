"""`ProgressiveSystem`: the facade the table calls at its hook points.

The table calls, in order, for every round:

1. `open_betting()` when betting opens: the LED of every seat.
2. `on_lock(locked, base_wagers, round_id)` at the lock-out, inside or outside
   the table's own transaction (nested transactions join it): accepted and
   refused wagers, their LEDs, the contributions booked, and any
   Must-Hit-By Mystery hit the contributions caused.
3. `on_round_result(round_id, round_view, settlements)` when the result is
   announced: the round's awards in payment order (each lights its seat's win
   light through the `win_light` callback).
4. `validate_award(award_id, supervisor)` once a floor supervisor (PIN checked
   by the caller with `controller.auth`) validates a hit: recorded, then paid.

At start-up the daemon calls `recover()` and `verify()`; the CLI reads
`meters()`; `availability()` says which progressives are offered now.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from fractions import Fraction
from typing import Any

from controller.progressive.config import (
    MYSTERY_LEVEL, LevelSpec, ProgressiveConfig, ProgressiveSpec,
)
from controller.progressive.core import (
    NONCE_BYTES, Acceptance, Contribution, accept_progressive_wagers, betting_leds, commitment,
    contributions, draw_trigger, meter_hits,
)
from controller.progressive.errors import AwardError, LinkDown, ProgressiveError
from controller.progressive.ledger import (
    ADJUSTMENT, AWARD, INCREMENT, METER_EVENT, PAID, PENDING, RESEED, RESERVE_TRANSFER,
    VALIDATED, WAGERS_EVENT, Award, MeterLedger, verify_meters,
)
from controller.progressive.linked import LinkedLedger, claim_key
from controller.progressive.mqtt import MeterPublisher, meter_message
from controller.rules.money import Rounding
from controller.rules.side.common import PaysMeter, meter_win_cents
from controller.rules.side.mystery import award_cents, crosses_trigger
from controller.memory.store import Event, Store
from drivers.protocols import LedState, LockedOut

MYSTERY_LABEL = "Must-Hit-By Mystery bonus"
NO_LINKED_LEDGER = "no [linked] ledger configured"

WinLight = Callable[[int, bool], None]


class ProgressiveSystem:
    """The progressive table game system of one table (605a.7; 605a.8 when linked)."""

    def __init__(self, config: ProgressiveConfig, store: Store, *,
                 linked: LinkedLedger | None = None, publisher: MeterPublisher | None = None,
                 win_light: WinLight | None = None,
                 randbelow: Callable[[int], int] = secrets.randbelow,
                 token_bytes: Callable[[int], bytes] = secrets.token_bytes,
                 sync_on_open: bool = True) -> None:
        self.config = config
        # False when the daemon runs sync_async() in a task instead (no network I/O on the loop).
        self.sync_on_open = sync_on_open
        self.store = store
        self.ledger = MeterLedger(store)
        self.linked = linked
        self.publisher = publisher
        self.win_light = win_light
        self._randbelow = randbelow
        self._token_bytes = token_bytes
        self._published_linked: dict[tuple[str, str], int] = {}
        with store.transaction():
            for spec in config.progressives:
                if spec.linked:
                    continue
                for level in spec.levels:
                    self.ledger.seed(spec.name, level.level, level.reset_cents,
                                     level.increment_rate)
                    if level.trigger_bounds and self.ledger.armed_mystery(
                            spec.name, level.level) is None:
                        self._arm(spec, level)
        self._unsubscribe = store.subscribe(self._on_event) if publisher else None
        if linked is not None and self._linked_specs():
            try:
                linked.ensure_levels((s.name, lvl.level, lvl.reset_cents)
                                     for s in self._linked_specs() for lvl in s.levels)
            except LinkDown:
                pass  # availability() says why; sync() retries
            self.sync()

    @classmethod
    def from_table_config(cls, table_config: Any, store: Store, *,
                          win_light: WinLight | None = None,
                          sync_on_open: bool = True) -> ProgressiveSystem:
        """From the daemon's `controller.config.TableConfig` (its raw TOML and source)."""
        from controller.progressive.config import parse_progressive_config

        config = parse_progressive_config(table_config.raw, table_config.source)
        return cls.from_config(config, store, win_light=win_light, sync_on_open=sync_on_open)

    @classmethod
    def from_config(cls, config: ProgressiveConfig, store: Store, *,
                    win_light: WinLight | None = None,
                    sync_on_open: bool = True) -> ProgressiveSystem:
        """Build the adapters the configuration names ([linked], [mqtt])."""
        linked = None
        if config.linked is not None and any(s.linked for s in config.progressives):
            linked = LinkedLedger(config.linked.dsn, config.linked.schema, config.linked.group,
                                  config.table_id, timeout_s=config.linked.timeout_s)
        publisher = None
        if config.mqtt is not None:
            from controller.progressive.mqtt import MqttMeterPublisher

            publisher = MqttMeterPublisher(config.mqtt.host, config.mqtt.port,
                                           client_id=config.mqtt.client_id)
        system = cls(config, store, linked=linked, publisher=publisher, win_light=win_light,
                     sync_on_open=sync_on_open)
        system.publish_all()
        return system

    def close(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self.linked is not None:
            self.linked.close()
        if self.publisher is not None:
            self.publisher.close()

    # --- availability ---------------------------------------------------------------------

    def _linked_specs(self) -> list[ProgressiveSpec]:
        return [s for s in self.config.progressives if s.linked]

    def _unavailable(self, spec: ProgressiveSpec) -> str | None:
        if not spec.linked:
            return None
        if self.linked is None:
            return NO_LINKED_LEDGER
        return self.linked.down_reason

    def availability(self) -> dict[str, str | None]:
        """Each progressive: None when its wagers are accepted, else why not (shown to the dealer)."""
        return {spec.name: self._unavailable(spec) for spec in self.config.progressives}

    # --- hook: betting opens ----------------------------------------------------------------

    def open_betting(self) -> dict[int, LedState]:
        """Every seat's LED: AWAITING, or UNAVAILABLE while the progressive cannot be offered."""
        if not self.config.progressives:
            return {seat: LedState.OFF for seat in range(1, self.config.seats + 1)}
        if self._linked_specs() and self.sync_on_open:
            self.sync()  # catch up first: a link that came back makes the wager available again
        spec = self.config.progressives[0]
        return betting_leds(self.config.seats, self._unavailable(spec))

    # --- hook: lock-out -----------------------------------------------------------------------

    def on_lock(self, locked: LockedOut, base_wagers: Sequence[Mapping[str, Any]],
                round_id: int) -> Acceptance:
        """Accept the pre-lock wagers and book their contributions (one transaction).

        Calling it again for the same round (a replay after a crash) books nothing
        twice and returns the acceptance recorded the first time.
        """
        if not self.config.progressives:
            return Acceptance("", (), (), {s: LedState.OFF for s in range(1, self.config.seats + 1)})
        spec = self.config.progressives[0]
        with self.store.transaction():
            acceptance = accept_progressive_wagers(locked, base_wagers, spec, self.config.seats,
                                                   unavailable_reason=self._unavailable(spec))
            if not self.ledger.mark_round(round_id, spec.name):
                return self._recorded_acceptance(spec, round_id, acceptance)
            self.ledger.record_wagers(round_id, spec.name, (
                [(w.seat, w.amount_cents, True, None) for w in acceptance.accepted]
                + [(r.seat, 0, False, r.reason) for r in acceptance.refused]))
            self.store.append_event(WAGERS_EVENT, {
                "progressive": spec.name, "cause": locked.cause,
                "sensor_seats": sorted(locked.wagers),
                "accepted": [[w.seat, w.amount_cents] for w in acceptance.accepted],
                "refused": [[r.seat, r.reason] for r in acceptance.refused],
            }, round_id=round_id, device="seats")
            amounts = {w.seat: w.amount_cents for w in acceptance.accepted}
            awards: list[Award] = []
            for level in spec.levels:
                items = contributions(spec, acceptance.accepted)[level.level]
                if not items:
                    continue
                if spec.linked:
                    self.ledger.enqueue(spec.name, level.level, _total(items), len(items),
                                        sum(amounts[i.seat] for i in items), round_id)
                elif level.trigger_bounds is not None:
                    awards.extend(self._book_mystery(spec, level, items, amounts, round_id))
                else:
                    self.ledger.change(spec.name, level.level, _total(items), INCREMENT,
                                       round_id=round_id, seats=[i.seat for i in items],
                                       wagers_cents=sum(amounts[i.seat] for i in items))
        if spec.linked and not self._in_outer_transaction():
            # Only committed outbox rows may leave the table: a row sent from a transaction that
            # then rolls back would be counted by the server for a round that never happened.
            self.sync()
        self._light(awards)
        return replace(acceptance, awards=tuple(awards))

    def _in_outer_transaction(self) -> bool:
        return self.store.in_transaction

    def _recorded_acceptance(self, spec: ProgressiveSpec, round_id: int,
                             fresh: Acceptance) -> Acceptance:
        from controller.progressive.core import AcceptedWager, RefusedWager

        rows = self.ledger.round_wagers(round_id, spec.name)
        accepted = tuple(AcceptedWager(s, c) for s, c, ok, _ in rows if ok)
        refused = tuple(RefusedWager(s, r or "") for s, _, ok, r in rows if not ok)
        leds = {seat: (LedState.LOCKED if seat in {a.seat for a in accepted} else state)
                for seat, state in fresh.leds.items()}
        awards = tuple(a for a in self.ledger.awards(round_id=round_id) if a.level == MYSTERY_LEVEL)
        return Acceptance(spec.name, accepted, refused, leds, awards)

    def _book_mystery(self, spec: ProgressiveSpec, level: LevelSpec, items: Sequence[Contribution],
                      amounts: Mapping[int, int], round_id: int) -> list[Award]:
        """631c.6(c)(3): add contributions in seat order; the one that carries the meter past
        the hidden trigger wins 100% of the meter (631c.6(c)(7)); then reset and re-arm."""
        awards: list[Award] = []
        row = self.ledger.meter(spec.name, level.level)
        armed = self.ledger.armed_mystery(spec.name, level.level)
        assert row is not None and armed is not None, "seeded and armed at start-up"
        meter, (epoch, trigger, _, _) = row.value, armed
        pending: list[Contribution] = []

        def book(batch: list[Contribution]) -> None:
            if batch:
                self.ledger.change(spec.name, level.level, _total(batch), INCREMENT,
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
            award = self.ledger.create_award(spec.name, level.level, round_id, item.seat, won,
                                             MYSTERY_LABEL, "631c.6(c)(3)",
                                             self.ledger.next_pay_order(round_id))
            self.ledger.change(spec.name, level.level, Fraction(-won), AWARD, round_id=round_id,
                               award_id=award.award_id)
            self.ledger.reveal_mystery(spec.name, level.level, epoch, award.award_id, round_id)
            # 631c.6(c)(5)(iv): reset to the minimum; the sub-cent remainder stays on the meter.
            after = self.ledger.change(spec.name, level.level, Fraction(level.reset_cents), RESEED,
                                       round_id=round_id, award_id=award.award_id)
            epoch, trigger = self._arm(spec, level)
            meter = after.value
            awards.append(award)
        book(pending)
        return awards

    def _arm(self, spec: ProgressiveSpec, level: LevelSpec) -> tuple[int, int]:
        """Draw a new hidden trigger with the CSPRNG and log only its commitment."""
        assert level.trigger_bounds is not None
        epoch = self.ledger.last_epoch(spec.name, level.level) + 1
        trigger = draw_trigger(level.trigger_bounds, self._randbelow)
        nonce = self._token_bytes(NONCE_BYTES)
        self.ledger.arm_mystery(spec.name, level.level, epoch, trigger, nonce,
                                commitment(spec.name, level.level, epoch, trigger, nonce))
        return epoch, trigger

    # --- hook: result -------------------------------------------------------------------------

    def on_round_result(self, round_id: int, round_view: Any,
                        settlements: Iterable[Mapping[str, Any]] = ()) -> list[Award]:
        """Decide the meter hits of the round and return all its awards in payment order.

        Idempotent: a hit already recorded for (progressive, level, round, seat)
        is not paid again. The hits are decided here from the pure rule's
        paytable lines; `settlements` (the table's) are accepted for symmetry
        with the other hooks and not used.
        """
        new: list[Award] = []
        if self._linked_specs() and not self._in_outer_transaction():
            self.sync()  # the round's committed contributions reach the meter before any claim
        with self.store.transaction():
            for spec in self.config.progressives:
                if self.ledger.is_void(round_id, spec.name):
                    continue  # 631a.15(e): a void round decides nothing
                accepted = self.ledger.accepted_wagers(round_id, spec.name)
                for hit in meter_hits(spec, accepted, round_view, self.standing_cents(spec)):
                    if self.ledger.find_award(spec.name, hit.level, round_id, hit.seat):
                        continue
                    if spec.linked:
                        new.append(self._claim_linked(spec, hit.level, hit.fraction, hit.label,
                                                      hit.section, round_id, hit.seat))
                    else:
                        new.append(self._award_local(spec, spec.level(hit.level), hit.fraction,
                                                     hit.label, hit.section, round_id, hit.seat))
        self._light(new)
        return sorted(self.ledger.awards(round_id=round_id), key=lambda a: a.pay_order)

    def standing_cents(self, spec: ProgressiveSpec) -> dict[str, int]:
        """Each meter of `spec` in whole cents as it stands now (a linked one as last read
        from the shared ledger; a level never read is left out, so the rule reads its reset)."""
        standing: dict[str, int] = {}
        for level in spec.levels:
            row = self.ledger.meter(spec.name, level.level)
            if row is not None:
                standing[level.level] = row.amount_cents
            elif self.linked is not None:
                shared = self.linked.levels_cache.get((spec.name, level.level))
                if shared is not None:
                    standing[level.level] = shared.amount_cents
        return standing

    def _award_local(self, spec: ProgressiveSpec, level: LevelSpec, fraction: Fraction,
                     label: str, section: str, round_id: int, seat: int) -> Award:
        row = self.ledger.meter(spec.name, level.level)
        assert row is not None
        won = meter_win_cents(PaysMeter(level.level, fraction), row.amount_cents, Rounding.DOWN)
        award = self.ledger.create_award(spec.name, level.level, round_id, seat, won, label,
                                         section, self.ledger.next_pay_order(round_id))
        self.ledger.change(spec.name, level.level, Fraction(-won), AWARD, round_id=round_id,
                           award_id=award.award_id, seats=())
        if fraction == 1:
            reseed = Fraction(level.reset_cents)
            if level.reseed_from is not None:
                # 627b.6(j): the reserve built from every wager funds the reseed on top of the seed.
                reserve = self.ledger.meter(spec.name, level.reseed_from)
                if reserve is not None and reserve.value:
                    self.ledger.change(spec.name, level.reseed_from, -reserve.value,
                                       RESERVE_TRANSFER, round_id=round_id,
                                       award_id=award.award_id)
                    reseed += reserve.value
            self.ledger.change(spec.name, level.level, reseed, RESEED, round_id=round_id,
                               award_id=award.award_id)
        return award

    def _claim_linked(self, spec: ProgressiveSpec, level: str, fraction: Fraction, label: str,
                      section: str, round_id: int, seat: int) -> Award:
        key = claim_key(self.config.table_id, round_id, seat, spec.name, level)
        order = self.ledger.next_pay_order(round_id)
        if self.linked is None:
            return self.ledger.create_award(spec.name, level, round_id, seat, 0, label, section,
                                            order, linked_claim=key, claimed=False)
        try:
            # No outbox rows here: this runs inside a local transaction (see on_lock).
            claim = self.linked.claim([], self.ledger.ack, spec.name, level,
                                      round_id, seat, fraction, spec.level(level).reseed_from)
        except LinkDown:
            # The hit stands; its amount is claimed when the link returns (sync()).
            return self.ledger.create_award(spec.name, level, round_id, seat, 0, label, section,
                                            order, linked_claim=key, claimed=False)
        return self.ledger.create_award(spec.name, level, round_id, seat, claim.amount_cents,
                                        label, section, order, linked_claim=key)

    def on_round_void(self, round_id: int, reason: str) -> list[tuple[int, int]]:
        """631a.15(e): the round is void and its progressive wagers are returned.

        Returns (seat, cents) to return. The contributions booked at the lock stay on
        the meters (docs/progressive.md, ruling 11): a meter never decreases except by
        an award or an audited adjustment, and a mystery hit at the lock stands.
        """
        returned: list[tuple[int, int]] = []
        with self.store.transaction():
            for spec in self.config.progressives:
                wagers = sorted(self.ledger.accepted_wagers(round_id, spec.name).items())
                returned.extend(wagers)
                self.ledger.void_round(round_id, spec.name)
                self.store.append_event("progressive_round_void", {
                    "progressive": spec.name, "reason": reason,
                    "returned": [[seat, cents] for seat, cents in wagers]},
                    round_id=round_id, severity="warning")
        return returned

    # --- awards ---------------------------------------------------------------------------------

    def validate_award(self, award_id: int, supervisor: str, *,
                       paid_via: str | None = None) -> Award:
        """631c.6(c)(5)(ii)-(iii): record the validating supervisor, then the payment.

        The caller has checked the supervisor's PIN (`controller.auth.authorise`).
        Each step is its own transaction and a repeated step is a no-op, so an
        award interrupted by a crash is completed exactly once (`recover()`).
        """
        if not supervisor or not supervisor.strip():
            raise AwardError("a floor supervisor's name is required to validate (631c.6(c)(5)(ii))")
        award = self.ledger.award(award_id)
        if not award.claimed:
            self.sync()
            award = self.ledger.award(award_id)
            if not award.claimed:
                raise AwardError(f"award {award_id} awaits its amount from the linked ledger: "
                                 f"{self._unavailable(self.config.get(award.progressive))}")
        spec = self.config.get(award.progressive)
        if award.state == PENDING:
            with self.store.transaction():
                award = self.ledger.advance_award(award_id, VALIDATED, supervisor=supervisor.strip())
        if award.state == VALIDATED:
            with self.store.transaction():
                award = self.ledger.advance_award(award_id, PAID, supervisor=award.validated_by,
                                                  paid_via=paid_via or spec.payment)
        if self.win_light is not None:
            self.win_light(award.seat, False)
        return award

    def pending_awards(self) -> list[Award]:
        return self.ledger.awards(states=(PENDING, VALIDATED))

    def recover(self) -> list[Award]:
        """Start-up: finish validated awards (paid once), relight pending ones; returns pending."""
        for award in self.ledger.awards(states=(VALIDATED,)):
            spec = self.config.get(award.progressive)
            with self.store.transaction():
                self.ledger.advance_award(award.award_id, PAID, supervisor=award.validated_by,
                                          paid_via=spec.payment)
        pending = self.ledger.awards(states=(PENDING,))
        self._light(pending)
        return pending

    def _light(self, awards: Iterable[Award]) -> None:
        if self.win_light is None:
            return
        for award in awards:
            if award.state == PENDING:
                self.win_light(award.seat, True)  # 631c.6(c)(5)(i): the light the dealer verifies

    # --- audited adjustment ------------------------------------------------------------------

    def adjust_meter(self, progressive: str, level: str, delta_cents: int, *, supervisor: str,
                     reason: str) -> dict[str, Any]:
        """An audited correction of a local meter, naming the supervisor (605a.7)."""
        spec = self.config.get(progressive)
        if spec.linked:
            raise ProgressiveError("a linked meter is adjusted at the shared ledger, not a table")
        with self.store.transaction():
            self.ledger.change(progressive, level, Fraction(delta_cents), ADJUSTMENT,
                               supervisor=supervisor, reason=reason)
        return next(m for m in self.meters() if m["progressive"] == progressive
                    and m["level"] == level)

    # --- linked catch-up ---------------------------------------------------------------------

    def sync(self) -> None:
        """Linked: send the outbox, claim hits recorded while the link was down, refresh the
        shared amounts. Never raises for a down link; availability() reports it."""
        if self.linked is None or not self._linked_specs():
            return
        try:
            if self.linked.down_reason is not None and not self.linked.levels_cache:
                self.linked.ensure_levels((s.name, lvl.level, lvl.reset_cents)
                                          for s in self._linked_specs() for lvl in s.levels)
            while True:
                batch = self.ledger.unacked()
                self.linked.flush(batch, self.ledger.ack)
                if not batch:
                    break
            for award in self.ledger.awards(states=(PENDING,)):
                if award.claimed or award.linked_claim is None:
                    continue
                spec = self.config.get(award.progressive)
                claim = self.linked.claim([], self.ledger.ack, award.progressive, award.level,
                                          award.round_id, award.seat, Fraction(1),
                                          spec.level(award.level).reseed_from)
                self.ledger.set_claimed(award.award_id, claim.amount_cents)
        except LinkDown:
            return
        self._publish_linked()

    async def sync_async(self) -> None:
        """`sync()` with the network I/O in a worker thread; the store is touched only from the
        calling (event loop) thread. For a periodic task of the daemon."""
        linked = self.linked
        if linked is None or not self._linked_specs():
            return
        try:
            if linked.down_reason is not None and not linked.levels_cache:
                levels = [(s.name, lvl.level, lvl.reset_cents)
                          for s in self._linked_specs() for lvl in s.levels]
                await asyncio.to_thread(linked.ensure_levels, levels)
            while True:
                batch = self.ledger.unacked()
                acked: list[int] = []
                await asyncio.to_thread(linked.flush, batch, acked.extend)
                self.ledger.ack(acked)
                if not batch:
                    break
            for award in self.ledger.awards(states=(PENDING,)):
                if award.claimed or award.linked_claim is None:
                    continue
                spec = self.config.get(award.progressive)
                claim = await asyncio.to_thread(
                    linked.claim, [], lambda seqs: None, award.progressive, award.level,
                    award.round_id, award.seat, Fraction(1),
                    spec.level(award.level).reseed_from)
                self.ledger.set_claimed(award.award_id, claim.amount_cents)
        except LinkDown:
            return
        self._publish_linked()

    # --- reads -----------------------------------------------------------------------------

    def meters(self) -> list[dict[str, Any]]:
        """Every meter with its 605a.7 companions, for the CLI and the display."""
        result: list[dict[str, Any]] = []
        local = {(m.progressive, m.level): m for m in self.ledger.all_meters()}
        pending = self.pending_awards()
        for spec in self.config.progressives:
            for level in spec.levels:
                entry: dict[str, Any] = {
                    "progressive": spec.name, "game": spec.game, "level": level.level,
                    "linked": spec.linked, "reset_cents": level.reset_cents,
                    "increment_percent": str(level.increment_rate * 100),
                    "section": level.section,
                    "pending_awards_cents": sum(a.amount_cents for a in pending
                                                if a.progressive == spec.name
                                                and a.level == level.level),
                }
                if spec.combinations and level.level in ("mega", "major", "minor"):
                    entry["personal_combinations"] = {
                        seat: f"K{s1.name[0]}9{s2.name[0]}"
                        for seat, (s1, s2) in sorted(spec.combinations.items())}
                if level.trigger_bounds is not None:
                    armed = self.ledger.armed_mystery(spec.name, level.level)
                    entry["trigger_range_cents"] = list(level.trigger_bounds)
                    entry["trigger_commitment"] = armed[3] if armed else None
                row = local.get((spec.name, level.level))
                if row is not None:
                    entry.update({
                        "amount_cents": row.amount_cents, "sub_cent": str(row.frac),
                        "sequence": row.version, "wagers_count": row.wagers_count,
                        "wagers_cents": row.wagers_cents,
                        "contributed_cents": str(row.contributed),
                        "awards_count": row.awards_count,
                        "cumulative_paid_cents": row.paid_system_cents + row.paid_attendant_cents,
                        "awarded_cents": row.awarded_cents,
                        "paid_by_system_cents": row.paid_system_cents,
                        "paid_by_attendant_cents": row.paid_attendant_cents,
                        "reseeded_cents": str(row.reseeded),
                        "adjustments_cents": row.adjustments_cents, "stale": False,
                    })
                elif self.linked is not None:
                    shared = self.linked.levels_cache.get((spec.name, level.level))
                    entry["stale"] = self.linked.down_reason is not None
                    if shared is not None:
                        entry.update({
                            "amount_cents": shared.amount_cents, "sub_cent": str(shared.frac),
                            "sequence": shared.version, "awards_count": shared.awards_count,
                            "awarded_cents": shared.awarded_cents,
                            "contributed_cents": str(shared.contributed),
                        })
                result.append(entry)
        return result

    def display_amounts(self) -> dict[str, int]:
        """`{"<progressive>/<level>": cents}` for `ProgressiveDisplay.show_meters` (never the
        mystery trigger, only the meter)."""
        return {f"{m['progressive']}/{m['level']}": m["amount_cents"]
                for m in self.meters() if "amount_cents" in m}

    def verify(self) -> list[str]:
        """Integrity problems of the local meters (and the shared ones when reachable)."""
        problems = verify_meters(self.store)
        if self.linked is not None and self._linked_specs():
            try:
                problems.extend(self.linked.verify())
            except LinkDown:
                pass  # not an integrity problem: availability() reports the link
        return problems

    # --- display feed ---------------------------------------------------------------------------

    def _on_event(self, event: Event) -> None:
        """Store listener: only committed meter changes reach the display."""
        if event.kind != METER_EVENT or self.publisher is None or self.config.mqtt is None:
            return
        p = event.payload
        mqtt = self.config.mqtt
        self.publisher.publish(meter_message(mqtt.prefix, mqtt.site, self.config.table_id,
                                             p["progressive"], p["level"], p["amount_cents"],
                                             p["version"], event.at))

    def _publish_linked(self) -> None:
        if self.publisher is None or self.config.mqtt is None or self.linked is None:
            return
        mqtt = self.config.mqtt
        for key, level in self.linked.levels_cache.items():
            if self._published_linked.get(key) == level.version:
                continue
            self._published_linked[key] = level.version
            self.publisher.publish(meter_message(
                mqtt.prefix, mqtt.site, self.config.table_id, level.progressive, level.level,
                level.amount_cents, level.version, self.store._clock(), linked=True))

    def publish_all(self) -> None:
        """Republish every meter (start-up): retained messages then show the current amounts."""
        if self.publisher is None or self.config.mqtt is None:
            return
        mqtt = self.config.mqtt
        for row in self.ledger.all_meters():
            self.publisher.publish(meter_message(mqtt.prefix, mqtt.site, self.config.table_id,
                                                 row.progressive, row.level, row.amount_cents,
                                                 row.version, self.store._clock()))
        self._published_linked.clear()
        self._publish_linked()


def _total(items: Iterable[Contribution]) -> Fraction:
    return sum((i.amount for i in items), Fraction(0))
