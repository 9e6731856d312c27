"""`tablectl events verify [--full]`: the critical-memory check again, while the table runs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from controller.commands.host import CommandHost
from controller.control import ControlError
from controller.events.system_records import CriticalMemoryRechecked
from controller.memory.critical import IntegrityError

log = structlog.get_logger("tabled")


def integrity_answer(exc: IntegrityError) -> ControlError:
    """A failed check is an answer, not a bug: no traceback in the log. The message keeps
    the form tablectl and docs/control-api.md know ("IntegrityError: check: detail")."""
    return ControlError(f"IntegrityError: {exc.check}: {exc.detail}", "internal")


class ChainCheck:
    def __init__(self, daemon: CommandHost) -> None:
        self._daemon = daemon

    async def shared(self, args: Mapping[str, Any]) -> Any:
        """Callers asking while the same check runs share its answer: a burst of requests
        costs one pass over the log, not one each."""
        return await self._daemon.store_work.once(("verify", args["full"]),
                                                  lambda: self.verify(args))

    async def verify(self, args: Mapping[str, Any]) -> Any:
        """The boot check again, on a connection of its own in a child process so the table
        keeps running. A failure found now puts the table out of order; a full pass moves
        the checkpoint later boots start from."""
        from controller.memory.critical import as_mapping
        from controller.memory.critical import reason_text as critical_reason

        daemon = self._daemon
        store = daemon.store
        if daemon.store_failure is not None:
            raise integrity_answer(daemon.store_failure)
        full = args["full"]

        async def check() -> Any:
            return await daemon.store_work.verify_file(store.path, store.key, store.paths,
                                                       full=full)

        try:
            try:
                verified = await check()
            except IntegrityError as first:
                # Found while the table writes: checked once more on a fresh snapshot before
                # the table is taken out of order (docs/architecture.md "Critical memory").
                # A tampered file fails again; a check that misread a moving store does not,
                # and what it reported stays in the log at critical severity.
                log.critical("integrity_recheck", check=first.check, detail=first.detail)
                verified = await check()
                daemon.record(CriticalMemoryRechecked(critical_reason(first),
                                                      dict(as_mapping(verified))))
        except IntegrityError as exc:
            daemon.hold_out_of_order(exc)
            raise integrity_answer(exc) from None
        if full and verified.log_seq:
            # The entry and MAC the check ended on, from the check's own snapshot: the table
            # kept writing meanwhile, so anything read now from this connection (the log's
            # head) is later than the check and would not link.
            store.set_checkpoint(verified.log_seq, verified.log_mac, verified.settled)
        return as_mapping(verified)
