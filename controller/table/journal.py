"""The table's one writer of what happened.

Every part of the table says what happened through the one `Journal` the table
hands it: an event, the typed record of its kind (controller/events), goes into the
store's signed log (with the open round's id) and the service's journal, a prompt also
to the dealer's display, and a change to the saved state is noted for the table's step
to save (`Table._step`, the save rule). Nothing else in the table writes an event.
"""

from __future__ import annotations

from contextvars import Context, copy_context
from typing import Any

import structlog

from controller import logsetup
from controller.events.codec import EventRecord
from controller.events.records import Prompt
from controller.memory.store import GROUPED_KINDS, Event
from controller.table.ports import Ports
from controller.table.state import SavedState

log = structlog.get_logger("table")
# `log` binds a new logger for every line (its configuration may change: the tests'
# captures); the table's lines use one bound while the configuration's parts are the same
# objects (a capture that changes the processors' list in place is seen by it too).
_bound: tuple[tuple[object, ...], Any] | None = None


def _table_log() -> Any:
    global _bound
    config = structlog.get_config()
    made_of = (config["processors"], config["context_class"], config["wrapper_class"],
               config["logger_factory"])
    if _bound is None or any(a is not b for a, b in zip(_bound[0], made_of, strict=True)):
        _bound = (made_of, log.bind())
    return _bound[1]


class Journal:
    """Writes each record as it is made, so the log keeps the order of the step (the store
    and the progressive system write entries of their own in between)."""

    def __init__(self, ports: Ports, saved: SavedState) -> None:
        self._ports = ports
        self._saved = saved
        self._state_changed = False
        # The step's journal lines, written once it has ended (`_write_lines`): each with
        # the logging context (the shoe and round bound) as it was when its record was made.
        self._lines: list[tuple[Context, str, str, dict[str, Any]]] = []

    def record(self, record: EventRecord, *, severity: str | None = None,
               device: str | None = None) -> Event:
        """Write `record` (its severity, or `severity` where the catalogue lets its kind
        have another); the log entry it became."""
        event = self._ports.store.append_event(record, severity=severity, device=device,
                                               round_id=self._saved.round_id)
        # Cards, prompts and sensor/shuffler progress are in the store's log; the journal
        # gets them at debug level only (a shoe is ~900 of them, each a journald write on
        # the Pi), and everything else at its severity.
        if event.severity == "info" and event.kind in GROUPED_KINDS and \
                not logsetup.debug_enabled:
            return event  # its debug line would be dropped (nearly every card's two entries)
        level = ("warning" if event.severity == "warning" else
                 "error" if event.severity in ("error", "critical") else
                 "debug" if event.kind in GROUPED_KINDS else "info")
        # structlog reserves "event" for the message itself.
        fields = {("event_" if key == "event" else key): value
                  for key, value in event.payload.items()}
        # Written once the step has ended, while its flush runs (`Store.after_step`): a line
        # (a settlement's is 60 us here) is not in front of the lock's or the settlement's
        # flush, whose report waits for that flush anyway.
        self._lines.append((copy_context(), level, event.kind, fields))
        if len(self._lines) == 1:
            self._ports.store.after_step(self._write_lines)
        return event

    def _write_lines(self) -> None:
        lines, self._lines = self._lines, []
        for context, level, kind, fields in lines:
            context.run(getattr(_table_log(), level), kind, **fields)

    def announce(self, prompt: Prompt) -> None:
        """Tell the dealer what the rules require next (recorded, and shown on the display)."""
        self.record(prompt)
        if self._ports.announce is not None:
            self._ports.announce(prompt.action)

    def state_changed(self) -> None:
        """A saved field changed in a way the round's cards do not imply (`Table._step`)."""
        self._state_changed = True

    def take_state_changed(self) -> bool:
        changed, self._state_changed = self._state_changed, False
        return changed
