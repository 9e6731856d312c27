"""`ProgressiveSystem`: the facade the table calls at its hook points, in order for every
round: `open_betting()`, `on_lock(...)` at the lock-out (inside or outside the table's own
transaction), `on_round_result(...)`, and `validate_award(...)` once a floor supervisor
validates a hit (docs/progressive.md, "Facade API"). At start-up the daemon calls
`recover()` and `verify()`; the CLI reads `meters()`; `availability()` says which
progressives are offered now. It composes the ledger, the mystery book, the link and the
feeds (controller/progressive/).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from fractions import Fraction
from typing import Any

from controller.events.progressive_records import ProgressiveRoundVoid, ProgressiveWagers
from controller.events.records import SettledWager
from controller.progressive.config import (
    MYSTERY_LEVEL, LevelSpec, ProgressiveConfig, ProgressiveSpec,
)
from controller.progressive.core import (
    Acceptance, accept_progressive_wagers, betting_leds, contributions, meter_hits,
)
from controller.progressive.errors import AwardError, LinkDown, ProgressiveError
from controller.progressive.feeds import ProgressiveFeeds
from controller.progressive.ledger import (
    ADJUSTMENT, AWARD, INCREMENT, PAID, PENDING, RESEED, RESERVE_TRANSFER, VALIDATED,
    Award, MeterLedger, verify_meters,
)
from controller.progressive.link_sync import LinkSync
from controller.progressive.linked import LinkedLedger
from controller.progressive.meters_view import meter_entries
from controller.progressive.mqtt import MeterPublisher
from controller.progressive.mystery_book import MysteryBook, total
from controller.rules.money import Rounding
from controller.rules.side.common import PaysMeter, meter_win_cents
from controller.memory.store import Store
from drivers.protocols import LedState, LockedOut

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
        self.mystery = MysteryBook(self.ledger, randbelow, token_bytes)
        with store.transaction():
            for spec in config.progressives:
                if spec.linked:
                    continue
                for level in spec.levels:
                    self.ledger.seed(spec.name, level.level, level.reset_cents,
                                     level.increment_rate)
                    if level.trigger_bounds and self.ledger.armed_mystery(
                            spec.name, level.level) is None:
                        self.mystery.arm(spec, level)
        # After the seeds: from_config's publish_all() sends them once.
        self.feeds = ProgressiveFeeds(config, store, self.ledger, publisher, linked)
        self.link = LinkSync(config, self.ledger, linked, self.feeds.publish_linked)
        self.link.start()

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
            from controller.progressive.pit_feed import LOST, OFFLINE, alive_message

            mqtt = config.mqtt
            # The pit page's liveness: the broker says "lost" for a table that vanished.
            publisher = MqttMeterPublisher(
                mqtt.host, mqtt.port, client_id=mqtt.client_id, login=mqtt.login,
                will=alive_message(mqtt.prefix, mqtt.site, config.table_id, LOST),
                goodbye=alive_message(mqtt.prefix, mqtt.site, config.table_id, OFFLINE))
        system = cls(config, store, linked=linked, publisher=publisher, win_light=win_light,
                     sync_on_open=sync_on_open)
        system.publish_all()
        return system

    def close(self) -> None:
        self.feeds.close()
        if self.linked is not None:
            self.linked.close()

    # --- availability ---------------------------------------------------------------------

    def availability(self) -> dict[str, str | None]:
        """Each progressive: None when its wagers are accepted, else why not (shown to the dealer)."""
        return {spec.name: self.link.unavailable(spec) for spec in self.config.progressives}

    # --- hook: betting opens ----------------------------------------------------------------

    def open_betting(self) -> dict[int, LedState]:
        """Every seat's LED: AWAITING, or UNAVAILABLE while the progressive cannot be offered."""
        if not self.config.progressives:
            return {seat: LedState.OFF for seat in range(1, self.config.seats + 1)}
        if self.link.specs() and self.sync_on_open:
            self.sync()  # catch up first: a link that came back makes the wager available again
        spec = self.config.progressives[0]
        return betting_leds(self.config.seats, self.link.unavailable(spec))

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
                                                   unavailable_reason=self.link.unavailable(spec))
            if not self.ledger.mark_round(round_id, spec.name):
                return self._recorded_acceptance(spec, round_id, acceptance)
            self.ledger.record_wagers(round_id, spec.name, (
                [(w.seat, w.amount_cents, True, None) for w in acceptance.accepted]
                + [(r.seat, 0, False, r.reason) for r in acceptance.refused]))
            self.store.append_event(ProgressiveWagers(
                spec.name, locked.cause, tuple(sorted(locked.wagers)),
                tuple((w.seat, w.amount_cents) for w in acceptance.accepted),
                tuple((r.seat, r.reason) for r in acceptance.refused),
            ), round_id=round_id, device="seats")
            amounts = {w.seat: w.amount_cents for w in acceptance.accepted}
            awards: list[Award] = []
            for level in spec.levels:
                items = contributions(spec, acceptance.accepted)[level.level]
                if not items:
                    continue
                if spec.linked:
                    self.ledger.enqueue(spec.name, level.level, total(items), len(items),
                                        sum(amounts[i.seat] for i in items), round_id)
                elif level.trigger_bounds is not None:
                    awards.extend(self.mystery.book(spec, level, items, amounts, round_id))
                else:
                    self.ledger.change(spec.name, level.level, total(items), INCREMENT,
                                       round_id=round_id, seats=[i.seat for i in items],
                                       wagers_cents=sum(amounts[i.seat] for i in items))
        if spec.linked and not self.store.in_transaction:
            # Only committed outbox rows may leave the table: a row sent from a transaction that
            # then rolls back would be counted by the server for a round that never happened.
            self.sync()
        self._light(awards)
        return replace(acceptance, awards=tuple(awards))

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

    # --- hook: result -------------------------------------------------------------------------

    def on_round_result(self, round_id: int, round_view: Any,
                        settlements: Iterable[SettledWager] = ()) -> list[Award]:
        """Decide the meter hits of the round and return all its awards in payment order.

        Idempotent: a hit already recorded for (progressive, level, round, seat)
        is not paid again. The hits are decided here from the pure rule's
        paytable lines; `settlements` (the table's) are accepted for symmetry
        with the other hooks and not used.
        """
        new: list[Award] = []
        if self.link.specs() and not self.store.in_transaction:
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
                        new.append(self.link.claim(spec, hit.level, hit.fraction, hit.label,
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
                self.store.append_event(ProgressiveRoundVoid(spec.name, reason, tuple(wagers)),
                                        round_id=round_id)
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
                                 f"{self.link.unavailable(self.config.get(award.progressive))}")
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

    # --- linked catch-up (controller/progressive/link_sync.py) -------------------------------

    def sync(self) -> None:
        """Linked: send the outbox, claim hits recorded while the link was down, refresh the
        shared amounts. Never raises for a down link; availability() reports it."""
        self.link.sync()

    async def sync_async(self) -> None:
        """`sync()` with the network I/O in a worker thread (the daemon's periodic task)."""
        await self.link.sync_async()

    # --- reads -----------------------------------------------------------------------------

    def meters(self) -> list[dict[str, Any]]:
        """Every meter with its 605a.7 companions, for the CLI and the display."""
        return meter_entries(self.config, self.ledger, self.linked)

    def display_amounts(self) -> dict[str, int]:
        """`{"<progressive>/<level>": cents}` for `ProgressiveDisplay.show_meters` (never the
        mystery trigger, only the meter)."""
        return {f"{m['progressive']}/{m['level']}": m["amount_cents"]
                for m in self.meters() if "amount_cents" in m}

    def verify(self) -> list[str]:
        """Integrity problems of the local meters (and the shared ones when reachable)."""
        problems = verify_meters(self.store)
        if self.linked is not None and self.link.specs():
            try:
                problems.extend(self.linked.verify())
            except LinkDown:
                pass  # not an integrity problem: availability() reports the link
        return problems

    # --- feeds (controller/progressive/feeds.py) ------------------------------------------------

    def publish_all(self) -> None:
        """Republish every meter (start-up): retained messages then show the current amounts."""
        self.feeds.publish_all()

    def feed_state(self) -> dict[str, Any] | None:
        """The MQTT feed's broker, whether it is connected and, if not, why; None without
        [mqtt]."""
        publisher = self.feeds.publisher
        return publisher.state() if publisher is not None else None

    def feed_pit(self, status: Mapping[str, Any]) -> bool:
        """The pit page's status of this table (the daemon's `status`), sent when changed."""
        return self.feeds.update_pit(status, self.availability())

    async def follow_pit(self, status: Callable[[], Mapping[str, Any]]) -> None:
        """The daemon's task: the pit page's status, looked at every FEED_INTERVAL_S."""
        await self.feeds.follow_pit(status, self.availability)
