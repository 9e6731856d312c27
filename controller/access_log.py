"""The daemon's own entries in the event log: access events (refusals, PIN failures,
lockouts, dropped subscribers), supervisors' commands, and the PIN guard saved with them
so that wrong PINs and lockouts survive a restart (controller/auth.py)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from controller.auth import PIN_GUARD_META, PinGuard
from controller.events.codec import EventRecord
from controller.events.system_records import (
    PinFailed,
    PinGuardResumed,
    PinLockout,
    SupervisorCommand,
)
from controller.memory.store import Store


class AccessLog:
    def __init__(self, store: Store, pins: PinGuard) -> None:
        self._store = store
        self._pins = pins

    def record(self, record: EventRecord, severity: str | None = None) -> None:
        """One entry in its own step; a wrong PIN or a lockout saves the PIN guard in it.
        `severity`: the record's own unless the catalogue lets its kind have this one."""
        with self._store.transaction():
            self._store.append_event(record, severity=severity)
            if isinstance(record, PinFailed | PinLockout):
                self.save_pin_guard()

    def audit_supervisor(self, who: str, command: str, args: Mapping[str, Any]) -> None:
        with self._store.transaction():
            self._store.append_event(SupervisorCommand(who, command, dict(args)))
            self.save_pin_guard()  # the accepted PIN started the name's count over

    def resume_pin_guard(self) -> None:
        """Wrong PINs and lockouts survive a restart (PinGuard.resume), from what the guard
        last saved in the store; no clock is read."""
        try:
            saved = json.loads(self._store.meta(PIN_GUARD_META) or "{}")
        except json.JSONDecodeError:  # the meta table is sealed: only a bug could write this
            saved = {}
        resumed = self._pins.resume(saved if isinstance(saved, dict) else {})
        if resumed:
            self.record(PinGuardResumed(resumed))

    def save_pin_guard(self) -> None:
        self._store.put_meta(PIN_GUARD_META, json.dumps(self._pins.saved(), sort_keys=True))
