"""The table's side of a linked progressive (605a.8): catching the shared ledger up with the
table's outbox, claiming hits, and the hits recorded while the link was down.

One owner for "what the table has told the shared ledger": `ProgressiveSystem` books
contributions into the outbox and asks this for a claim; the daemon's periodic task calls
`sync_async()`. The catch-up is written once (`_catch_up`, a coroutine that makes each
network call through the function it is given) and run either on the calling thread
(`sync`, calling directly) or with each network call in a worker thread (`sync_async`),
so the two can never drift apart.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from fractions import Fraction
from typing import Any

from controller.progressive import link_seams
from controller.progressive.config import ProgressiveConfig, ProgressiveSpec
from controller.progressive.errors import LinkDown
from controller.progressive.ledger import PENDING, Award, MeterLedger
from controller.progressive.linked import LinkedLedger, claim_key

NO_LINKED_LEDGER = "no [linked] ledger configured"


class LinkSync:
    def __init__(self, config: ProgressiveConfig, ledger: MeterLedger,
                 linked: LinkedLedger | None, on_synced: Callable[[], None]) -> None:
        self.config = config
        self.ledger = ledger
        self.linked = linked
        if linked is not None:  # the store's name in the ledger's keys, before anything is sent
            linked.store = ledger.link_store()
        self._on_synced = on_synced  # after a catch-up that reached the server: the feeds
        self.hold = link_seams.sync_hold()  # the pit campaign's only; None in service

    def specs(self) -> list[ProgressiveSpec]:
        return [s for s in self.config.progressives if s.linked]

    def seeds(self) -> list[tuple[str, str, int, Fraction]]:
        """Each linked level's terms: (progressive, level, reset cents, increment rate)."""
        return [(s.name, lvl.level, lvl.reset_cents, lvl.increment_rate)
                for s in self.specs() for lvl in s.levels]

    def unavailable(self, spec: ProgressiveSpec) -> str | None:
        """605a.8: None when the linked wager can be offered, else why not."""
        if not spec.linked:
            return None
        if self.linked is None:
            return NO_LINKED_LEDGER
        return self.linked.down_reason

    def start(self) -> None:
        """First start: the shared levels exist (at their seeds), then a catch-up."""
        if self.linked is None or not self.specs():
            return
        try:
            self.linked.ensure_levels(self.seeds())
        except LinkDown:
            pass  # unavailable() says why; sync() retries
        self.sync()

    def claim(self, spec: ProgressiveSpec, level: str, fraction: Fraction, label: str,
              section: str, round_id: int, seat: int) -> Award:
        """A linked hit: claimed now, or recorded unclaimed (amount 0) while the link is
        down and claimed by the next catch-up. Runs inside the table's transaction."""
        order = self.ledger.next_pay_order(round_id)
        if self.linked is None:
            # Under this store's name, as a claim made now would be: the catch-up of a
            # later start claims it under this key.
            key = claim_key(self.config.table_id, self.ledger.link_store(), round_id, seat,
                            spec.name, level)
            return self.ledger.create_award(spec.name, level, round_id, seat, 0, label, section,
                                            order, linked_claim=key, claimed=False)
        key = self.linked.claim_key(round_id, seat, spec.name, level)
        try:
            # No outbox rows here: this runs inside a local transaction (see on_lock).
            claim = self.linked.claim([], self.ledger.ack, key, spec.name, level,
                                      round_id, seat, fraction, spec.level(level).reseed_from)
        except LinkDown:
            # The hit stands; its amount is claimed when the link returns (sync()).
            return self.ledger.create_award(spec.name, level, round_id, seat, 0, label, section,
                                            order, linked_claim=key, claimed=False)
        return self.ledger.create_award(spec.name, level, round_id, seat, claim.amount_cents,
                                        label, section, order, linked_claim=key)

    async def _catch_up(self, call: Callable[..., Awaitable[Any]]) -> None:
        """Send the outbox, claim the hits recorded while the link was down, each network
        call through `call`; the store is touched only here, on the caller's thread."""
        linked = self.linked
        if linked is None or not self.specs():
            return
        try:
            if linked.down_reason is not None and not linked.levels_cache:
                await call(linked.ensure_levels, self.seeds())
            while True:
                # Held (a test seam): nothing sent, but the link reconnects and reads the meters.
                batch = [] if self.hold and self.hold.holding() else self.ledger.unacked()
                acked: list[int] = []
                try:
                    await call(linked.flush, batch, acked.extend)
                finally:
                    # The server committed these even if the refresh after it failed.
                    self.ledger.ack(acked)
                if not batch:
                    break
            for award in self.ledger.awards(states=(PENDING,)):
                if award.claimed or award.linked_claim is None:
                    continue
                spec = self.config.get(award.progressive)
                # Under the key it was recorded with (an earlier release's store's included).
                claim = await call(linked.claim, [], _no_ack, award.linked_claim,
                                   award.progressive, award.level, award.round_id, award.seat,
                                   Fraction(1), spec.level(award.level).reseed_from)
                self.ledger.set_claimed(award.award_id, claim.amount_cents)
        except LinkDown:
            return  # unavailable() says why; the next catch-up retries
        self._on_synced()

    def sync(self) -> None:
        """Linked: catch up on this thread. Never raises for a down link; `unavailable()`
        reports it."""
        catch_up = self._catch_up(_direct)
        try:
            catch_up.send(None)  # `_direct` never suspends: this runs it to the end
        except StopIteration:
            return
        catch_up.close()
        raise RuntimeError("the linked catch-up suspended on a direct call")

    async def sync_async(self) -> None:
        """`sync()` with the network I/O in a worker thread; the store is touched only from
        the calling (event loop) thread. For a periodic task of the daemon."""
        await self._catch_up(asyncio.to_thread)


async def _direct(function: Callable[..., Any], *args: Any) -> Any:
    return function(*args)


def _no_ack(seqs: Any) -> None:
    """A claim carries no outbox rows: nothing to acknowledge."""
