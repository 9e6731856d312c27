"""The check of critical memory at start, as a result the daemon records.

The store's own check (MACs, seal, anchor, the log's recent entries) ran when it was
opened (controller/memory/lifecycle.open_store); here its outcome is joined with the
progressive meters' cross-check against the log. Nothing is logged or cleared here: the
daemon logs the result and, on a failure, puts the table out of order naming it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from controller.memory.critical import IntegrityError
from controller.memory.store import Store


class MeterCheck(Protocol):
    def verify(self) -> list[str]: ...


@dataclass(frozen=True)
class BootCheck:
    """`failure` is None when every check passed; then `entries` and `log_seq` say how
    much of the log the start read and where its head is."""

    failure: IntegrityError | None
    entries: int = 0
    log_seq: int = 0


def check_at_boot(store: Store, opened: IntegrityError | None,
                  meters: MeterCheck | None) -> BootCheck:
    """`opened` is the failure of the store's own check when it was opened, if any; the
    meters (a progressive system) are cross-checked only on a store that passed."""
    if opened is not None:
        return BootCheck(opened)
    problems = meters.verify() if meters is not None else []
    if problems:
        return BootCheck(IntegrityError("progressive meters", "; ".join(problems)))
    verified = store.verified
    return BootCheck(None, verified.entries if verified else 0,
                     verified.log_seq if verified else 0)
