"""The witness as the daemon sees it: started after the boot check, stopped before the
store closes, asked for its status and whether new rounds may take wagers.

The daemon owns the table and the store; this owns the link (its thread, its outbox, its
client). What the link finds reaches the daemon on the event loop's thread only: a failure
through `out_of_order`, the link going down or up through `record` (an entry in the log,
which the display service's metrics count).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import structlog

from controller.events.codec import EventRecord
from controller.events.system_records import WitnessDown, WitnessUp
from controller.memory.critical import IntegrityError
from controller.memory.delivery import until_durable
from controller.memory.store import Store
from controller.witness.config import WitnessConfig
from controller.witness.heads import Signer, load_signing_key
from controller.witness.link import WitnessLink, check_store
from controller.witness.outbox import OUTBOX_FILE, Outbox
from controller.witness.server import WitnessClient

log = structlog.get_logger("witness")

BOOT_WAIT_S = 1.0
"""The first comparison at boot is awaited this long (a LAN witness answers in milliseconds);
a later answer puts the table out of order as soon as it comes."""

Record = Callable[[EventRecord, str | None], None]  # a record and its severity, if not its own


class TableWitness:
    def __init__(self, config: WitnessConfig, store: Store, *, record: Record,
                 out_of_order: Callable[[IntegrityError], None],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self.store = store
        self._record = record
        self._out_of_order = out_of_order
        self._clock = clock
        self.link: WitnessLink | None = None
        self.unavailable = ""  # why the table cannot be witnessed at all (no key)
        self._stopped = False

    async def start(self) -> None:
        """Check the store against its own outbox and the witness, then stream its heads.
        A store behind or diverging puts the table out of order before it opens."""
        loop = asyncio.get_running_loop()
        paths = self.store.paths
        if paths is None:
            self.unavailable = "the store has no critical-memory directory"
            return
        try:
            signer = Signer(load_signing_key(paths))
        except IntegrityError as exc:
            self.unavailable = f"{exc.detail}; {exc.action}"
            log.error("witness_unavailable", reason=self.unavailable)
            self._record(WitnessDown(self.unavailable), "error")  # it cannot be used at all
            return
        outbox = Outbox(paths.directory / OUTBOX_FILE)
        if outbox.damaged:  # not a power cut's last half line: named, though a later head
            # covers each (the heads read are checked against the store below)
            log.warning("witness_outbox_damaged", path=str(outbox.path), lines=outbox.damaged,
                        heads_read=len(outbox.pending))
        opened_at = self.store.verified.log_seq if self.store.verified is not None else None
        if outbox.last is not None:
            try:  # heads this store made but the witness never got: it cannot be behind them
                check_store(self.store.path, outbox.last, source="this table's outbox",
                            opened_at_seq=opened_at)
            except IntegrityError as exc:
                self._out_of_order(exc)
                return
        client = WitnessClient(self.config.dsn, self.config.schema,
                               table_id=self.config.table_id, timeout_s=self.config.timeout_s)
        def failed(exc: IntegrityError) -> None:  # on the link's thread: to the loop's
            loop.call_soon_threadsafe(self._out_of_order, exc)

        def link_changed(up: bool, why: str) -> None:
            loop.call_soon_threadsafe(self._link_changed, up, why)

        self.link = WitnessLink(
            client, signer, outbox, store_path=self.store.path, on_failure=failed,
            on_link=link_changed,
            clock=self._clock, check_interval_s=self.config.check_interval_s,
            opened_at_seq=opened_at)
        self.store.on_durable_commit(self.link.head_committed)
        self.link.start()
        await asyncio.to_thread(self.link.first_check.wait, BOOT_WAIT_S)
        await asyncio.sleep(0)  # a failure the first check found is applied before play

    def _link_changed(self, up: bool, reason: str) -> None:
        if self._stopped:
            return  # the daemon is stopping: its last entry is written
        if up:
            self._record(WitnessUp(self._pending()), None)
        else:
            self._record(WitnessDown(reason), "warning")

    def _pending(self) -> int:
        return len(self.link.outbox.pending) if self.link is not None else 0

    async def stop(self) -> None:
        """The last heads to the witness (or kept in the outbox), before the store closes:
        first every commit made so far on the disk (group commit holds the stop's own entries
        until their flush, and only a flushed commit's seal is a head)."""
        # A failed flush: the outbox keeps what was witnessed, the store says why.
        await until_durable(self.store.when_durable)
        self._stopped = True  # on the loop's thread: no link event is recorded after this
        if self.link is not None:
            await asyncio.to_thread(self.link.close, self.config.timeout_s)

    def status(self) -> dict[str, Any]:
        if self.link is None:
            return {"link": "unavailable", "detail": self.unavailable or "not started"}
        return {**self.link.status(),
                "max_unwitnessed_minutes": self.config.max_unwitnessed_minutes or None}

    def refusal(self) -> str | None:
        """Why a new wager is refused: `[witness] max_unwitnessed_minutes` has run out."""
        limit = self.config.max_unwitnessed_minutes
        if not limit:
            return None
        waited = self.link.unwitnessed_s() if self.link is not None else float("inf")
        if waited <= limit * 60:
            return None
        shown = "ever since the start" if waited == float("inf") else f"for {waited / 60:.1f} min"
        return (f"new rounds are stopped: the witness has not answered {shown} (more than "
                f"[witness] max_unwitnessed_minutes = {limit:g}); a technician restores the "
                "link to the witness (tablectl status shows why it is down)")
