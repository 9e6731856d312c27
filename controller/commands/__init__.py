"""The control commands: every command with the one role it needs (controller/access.py)
and the arguments it takes (controller/commands/args.py, checked before it runs). The
tables in docs/control-api.md are generated from these registrations
(tools/control_roles.py). The handlers live by concern: play.py (the dealer's and the
floor's), reports.py (read-only), verify.py, device_tests.py and software.py."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controller.access import Role
from controller.commands.args import COMMAND_ARGS
from controller.commands.device_tests import DeviceTests
from controller.commands.guards import after_history_check, guarded, refusing
from controller.commands.host import CommandHost
from controller.commands.play import PlayCommands
from controller.commands.reports import Reports
from controller.commands.software import SoftwareCommands
from controller.commands.verify import ChainCheck
from controller.control import ControlServer


class Commands:
    """The daemon's command handlers, one collaborator per concern."""

    def __init__(self, daemon: CommandHost) -> None:
        self._daemon = daemon
        self.play = PlayCommands(daemon)
        self.reports = Reports(daemon)
        self.verify = ChainCheck(daemon)
        self.device_tests = DeviceTests(daemon)
        self.software = SoftwareCommands(daemon)

    def register(self, control: ControlServer) -> None:
        READ, DEALER, TECHNICIAN, SUPERVISOR = Role  # noqa: N806
        daemon, play, reports = self._daemon, self.play, self.reports
        table, status = daemon.table, reports.status

        def reg(name: str, handler: Any, **how: Any) -> None:
            control.register(name, handler, args=COMMAND_ARGS.get(name), **how)

        def guard(fn: Any) -> Any:
            return guarded(table, fn, status)

        def after_check(fn: Any) -> Any:
            return after_history_check(daemon.history_checked, fn)

        def with_status(key: str, fn: Any) -> Any:
            """A supervisor's ruling: what it did, and the table's status after it."""
            return after_check(lambda a: {key: refusing(lambda: fn(a)), **status()})

        def awards(args: Mapping[str, Any]) -> Any:
            progressive = daemon.progressive
            return [w.as_dict() for w in progressive.pending_awards()] if progressive else []

        # The storage's flush times with the status command only: the status that answers
        # every command changing the table (a wager's) does without them. Beside them (with
        # where the flushes run, docs/rulings.md C30), the sealing the store applies (C29,
        # the operator's option).
        flush_times = daemon.store.durability.flush_times
        store_options = {"seal_every_step": daemon.config.store_seal_every_step}
        reg("status", lambda a: {**status(), "storage": {**flush_times.status(), **store_options}},
            role=READ,
            description="table state, shoe, round, fault, the storage's flushes")
        reg("devices", lambda a: reports.device_report(), role=READ,
            description="each device's health")
        reg("rounds", reports.rounds, role=READ, description="game recall of the last rounds")
        reg("events", reports.events, role=READ, description="event log entries")
        reg("seat_totals", lambda a: {str(k): v for k, v in daemon.store.seat_totals().items()},
            role=READ, description="each seat's net result, amount wagered and vigorish owed, in cents")
        reg("verify_chain", self.verify.shared, role=READ, description="the critical-memory "
            "check: the event log's MAC chain, the sealed tables, the anchor (full=true: every "
            "entry)")
        reg("open", after_check(guard(play.open_table)), role=DEALER,
            description="open the table")
        reg("shuffle", guard(play.shuffle), role=DEALER,
            description="shuffle a batch for a new shoe")
        reg("shoe_loaded", guard(play.shoe_loaded), role=DEALER,
            description="the dealer loaded the shoe: checked like the shoe's own report")
        reg("place_wager", guard(play.place_wager), role=DEALER,
            description="accept a wager at a seat")
        reg("no_more_bets", guard(lambda a: table.cmd_no_more_bets("dealer")),
            role=DEALER, description="lock every seat")
        reg("new_dealer", guard(lambda a: table.cmd_new_dealer(a["dealer"])),
            role=DEALER,
            description="a new dealer takes over between rounds (681a.7(c): burns one card)")
        reg("acknowledge_fault", with_status(
            "acknowledgement", lambda a: table.cmd_acknowledge_fault(a["_supervisor"])),
            role=SUPERVISOR,
            description="a floor supervisor's ruling: clears what a ruling can, names what "
                        "still holds the table (docs/faults.md)")
        reg("disclosed_player_third", with_status(
            "ruling", lambda a: table.cmd_disclosed_player_third(a["_supervisor"])),
            role=SUPERVISOR,
            description="the floor declares the last card a Player third card dealt in error "
                        "and disclosed (631a.15(c))")
        reg("self_test", self.device_tests.self_test, role=TECHNICIAN,
            description="run a device's self-test")
        reg("seat_leaves", after_check(lambda a: {
            "collected_cents": refusing(lambda: table.cmd_seat_leaves(a["seat"]))}),
            role=DEALER, description="collect the vigorish marked at a seat whose player leaves")
        reg("adjust_meter", after_check(play.adjust_meter), role=SUPERVISOR,
            description="an audited correction of a progressive meter (reason required)")
        reg("light_test", self.device_tests.light_test, role=TECHNICIAN,
            description="a light pattern the technician watches: every seat LED, every win light")
        reg("meters", lambda a: daemon.progressive.meters() if daemon.progressive else [],
            role=READ, description="every progressive meter with its 605a.7 companions")
        reg("awards", awards, role=READ, description="progressive awards awaiting validation")
        reg("validate_award", after_check(play.validate_award), role=SUPERVISOR,
            description="a floor supervisor validates a progressive award (631c.6(c)(5))")
        reg("software_change", self.software.change, role=SUPERVISOR,
            description="a floor supervisor allows a release's activation or rollback, "
                        "between shoes only (tablectl software activate, rollback)")
        reg("software_record", self.software.record, role=TECHNICIAN,
            description="a release staged, or rolled back by itself after a failed start, "
                        "into the log")
