"""The table's consent to a change of software, and a release's staging or automatic
rollback recorded in the log (docs/deployment.md, "Upgrade and roll back")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.commands.host import CommandHost
from controller.control import ControlError
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
                f"{', '.join(s.value for s in SOFTWARE_CHANGE_STATES)})", "not_allowed")
        payload = {"release": release, "from_release": daemon.software.get("release"),
                   "supervisor": str(args.get("_supervisor", ""))}
        if action == "activate":
            daemon.record("software_activated", payload, "warning")
        else:
            daemon.record("software_rolled_back", {**payload, "automatic": False}, "warning")
        return payload

    def record(self, args: Mapping[str, Any]) -> Any:
        event, release = args["event"], args["release"]
        if event == "staged":
            self._daemon.record("software_staged", {"release": release}, "info")
        else:
            self._daemon.record("software_rolled_back", {
                "release": release, "from_release": args["from_release"],
                "supervisor": "", "automatic": True}, "warning")
        return {"recorded": event, "release": release}
