"""The table's consent to a change of software, and a release's staging or automatic
rollback recorded in the log (docs/deployment.md, "Upgrade and roll back")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.commands.host import CommandHost
from controller.control import ControlError
from controller.events.system_records import (
    SoftwareActivated,
    SoftwareRolledBack,
    SoftwareStaged,
)
from controller.table.machine import TableState

# Between shoes, or nothing to play: a release may be activated or rolled back.
SOFTWARE_CHANGE_STATES = (TableState.CLOSED, TableState.END_OF_SHOE, TableState.OUT_OF_ORDER)


class SoftwareCommands:
    def __init__(self, daemon: CommandHost) -> None:
        self._daemon = daemon

    def change(self, args: Mapping[str, Any]) -> Any:
        """Only between shoes (or out of order, when nothing can be played), recorded with
        the supervisor before tablectl moves the `current` link and restarts."""
        daemon = self._daemon
        action, release = args["action"], args["release"]
        if daemon.table.state not in SOFTWARE_CHANGE_STATES:
            raise ControlError(
                f"a change of software is allowed only between shoes; the table is "
                f"{daemon.table.state.value} (allowed: "
                f"{', '.join(s.value for s in SOFTWARE_CHANGE_STATES)})", "refused")
        change = SoftwareActivated(release, daemon.software.get("release"),
                                   str(args.get("_supervisor", "")))
        if action == "activate":
            daemon.record(change)
        else:
            daemon.record(SoftwareRolledBack(change.release, change.from_release,
                                             change.supervisor, automatic=False))
        return change.payload()

    def record(self, args: Mapping[str, Any]) -> Any:
        event, release = args["event"], args["release"]
        if event == "staged":
            self._daemon.record(SoftwareStaged(release))
        else:
            self._daemon.record(SoftwareRolledBack(release, args["from_release"], supervisor="",
                                                   automatic=True))
        return {"recorded": event, "release": release}
