"""The table's one writer of what happened.

Every part of the table says what happened through the one `Journal` the table
hands it: an event goes into the store's signed log (with the open round's id) and
the service's journal, a prompt also to the dealer's display, and a change to the
saved state is noted for the table's step to save (`Table._step`, the save rule).
Nothing else in the table writes an event.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from controller import logsetup
from controller.memory.store import GROUPED_KINDS
from controller.table.ports import Ports
from controller.table.state import SavedState

log = structlog.get_logger("table")


class Journal:
    """Writes each record as it is made, so the log keeps the order of the step (the store
    and the progressive system write entries of their own in between)."""

    def __init__(self, ports: Ports, saved: SavedState) -> None:
        self._ports = ports
        self._saved = saved
        self._state_changed = False

    def record(self, kind: str, payload: Mapping[str, Any] | None = None, *,
               severity: str = "info", device: str | None = None) -> None:
        self._ports.store.append_event(kind, payload, severity=severity, device=device,
                                       round_id=self._saved.round_id)
        # Cards, prompts and sensor/shuffler progress are in the store's log; the journal
        # gets them at debug level only (a shoe is ~900 of them, each a journald write on
        # the Pi), and everything else at its severity.
        level = ("warning" if severity == "warning" else
                 "error" if severity in ("error", "critical") else
                 "debug" if kind in GROUPED_KINDS else "info")
        if level == "debug" and not logsetup.debug_enabled:
            return  # the line would be dropped: it is not built
        # structlog reserves "event" for the message itself.
        fields = {("event_" if key == "event" else key): value
                  for key, value in (payload or {}).items()}
        getattr(log, level)(kind, **fields)

    def announce(self, action: str, **detail: Any) -> None:
        """Tell the dealer what the rules require next (recorded, and shown on the display)."""
        self.record("prompt", {"action": action, **detail})
        if self._ports.announce is not None:
            self._ports.announce(action, detail)

    def state_changed(self) -> None:
        """A saved field changed in a way the round's cards do not imply (`Table._step`)."""
        self._state_changed = True

    def take_state_changed(self) -> bool:
        changed, self._state_changed = self._state_changed, False
        return changed
