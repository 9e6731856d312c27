"""tabled: the table controller daemon.

Wires the configuration's devices to the table state machine, the store and the
control socket, then runs until SIGTERM/SIGINT. Device I/O runs in the drivers'
own tasks; the table only ever sees events from one queue, on the loop's thread.
The control commands are in controller/commands/, the checks of critical memory at
start in controller/memory/; this module records what they report.
"""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import sys
import time
from collections.abc import Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any

import structlog

from cards import BackColour
from controller import __version__
from controller.access import AccessPolicy
from controller.access_log import AccessLog
from controller.auth import PinGuard, PinPolicy
from controller.card_commits import CardCommits
from controller.collector import RoundCollector
from controller.commands import Commands
from controller.config import ConfigError, TableConfig, load_config
from controller.events import system_records as ev
from controller.control import ControlServer
from controller.daemon_args import command_line
from controller.intake import QUEUE_LIMIT, EventIntake
from controller.limits import connection_budget, open_files_limit
from controller.logsetup import bind_table, configure_logging
from controller.memory.boot_check import check_at_boot
from controller.memory.critical import IntegrityError
from controller.memory.history_check import check_history
from controller.memory.lifecycle import describe
from controller.memory.store import Store
from controller.metrics_http import MetricsEndpoint
from controller.offload import StoreWork
from controller.panel import Panel
from controller.rules.batches import BatchTracker
from controller.sdnotify import SdNotifier
from controller.table.machine import TableState
from controller.table.rules_seam import RulesAdapter
from controller.table.table import Table
from controller.watchdog import Health, WatchdogPinger
from controller.wiring import build_devices, device_as, open_checked_store, secure_store_files
from drivers.protocols import Device, DeviceEvent, LinkState, ProgressiveDisplay, SeatPanel, Shuffler

log = structlog.get_logger("tabled")

EXIT_OK, EXIT_CONFIG = 0, 6  # --init-store / --clear-store's failure: lifecycle.EXIT_STORE


class Daemon:
    def __init__(self, config: TableConfig, devices: Mapping[str, Device] | None = None) -> None:
        from controller.rules.game import build_game

        self.config = config
        self.game = build_game(config.submission)
        self.store, self.store_failure = open_checked_store(config)
        self.devices = dict(devices) if devices is not None else build_devices(config)
        self.started_monotonic = time.monotonic()
        # The whole history is checked at every start, after ready (`_check_history`); the
        # table settles nothing, and opens to no one, until it passes.
        self.history_checked = asyncio.Event()
        self.history_check: Mapping[str, Any] = {"state": "not started"}
        self.software: dict[str, Any] = {"mode": config.software.mode, "verified": False,
                                         "release": None, "detail": "not checked yet"}
        # Each optional device as the Protocol the daemon calls it through.
        seats, display, shuffler = (device_as(self.devices, name, protocol) for name, protocol
                                    in (("seats", SeatPanel), ("display", ProgressiveDisplay),
                                        ("shuffler", Shuffler)))
        self.seats = seats if isinstance(seats, SeatPanel) else None
        self.display = display if isinstance(display, ProgressiveDisplay) else None
        self.shuffler = shuffler if isinstance(shuffler, Shuffler) else None
        self.panel = Panel(self.display)
        self.progressive = None
        if config.progressive is not None:
            from controller.progressive.system import ProgressiveSystem

            # No network I/O on the loop: linked meters sync from their own task.
            self.progressive = ProgressiveSystem.from_config(
                config.progressive, self.store, win_light=self.panel.win_light, sync_on_open=False)
        self.table = Table(
            table_id=config.table_id, seats=config.submission.table.seats,
            rules=RulesAdapter(self.game), store=self.store, announce=self._show_prompt,
            lock_seats=self.seats.lock if self.seats is not None else None,
            open_seats=self.seats.open_betting if self.seats is not None else None,
            set_led=self.seats.set_led if self.seats is not None else None,
            progressive=self.progressive,
            batches=BatchTracker(*(BackColour[c.upper()] for c in config.shuffler.batches))
            if config.shuffler.batches else None,
            vig_collection=(config.submission.game.vigorish.collection
                            if config.submission.game.vigorish else "at-payout"),
        )
        access = config.access
        pins = PinGuard(config.supervisor_pin_hashes, PinPolicy(
            access.pin_lockout_after, access.pin_lockout_s, access.pin_delay_s,
            access.pin_max_delay_s))  # it records through the control server's refusal log
        self.access_log = AccessLog(self.store, pins)
        self.record = self.access_log.record
        self.control = ControlServer(
            config.control_socket, mode=config.control_socket_mode,
            access=AccessPolicy(access), record=self.record, pins=pins,
            on_supervisor_command=self.access_log.audit_supervisor)
        self.store_work = StoreWork(self.store)
        self.witness = self._witness()
        self.commands = Commands(self)
        self.commands.register(self.control)
        # Protocol 1.2 (docs/protocol.md 6.6): the shoe forgets a card once it is on the disk.
        self.card_commits = CardCommits.attach(self.devices, self.table, self.store)
        self.intake = EventIntake(self.card_commits.stepping(self._handle), self.history_checked)
        self._tasks: set[asyncio.Task[Any]] = set()
        self.collector = RoundCollector()
        self.metrics_port = 0  # where [metrics] listen serves, once it does

    def status(self) -> dict[str, Any]:
        """What `tablectl status` shows (controller/commands/reports.py)."""
        return self.commands.reports.status()

    # --- wiring -----------------------------------------------------------------

    def _show_prompt(self, action: str) -> None:
        if action == "reshuffle":  # back in SHUFFLING after a fault: ask the shuffler again
            self.spawn(self.commands.play.request_shuffle(None))
        self.panel.prompt(action)

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def hold_out_of_order(self, exc: IntegrityError, event: str = "integrity_failed") -> None:
        """A failed check of critical memory: logged, said on stderr, and the table out of
        order naming what failed; nothing is cleared automatically."""
        self.store_failure = exc
        log.critical(event, check=exc.check, detail=exc.detail, action=exc.action)
        print(f"tabled: table out of order: {describe(exc)}", file=sys.stderr, flush=True)
        self.table.mark_out_of_order(f"{exc.check}: {exc.detail}")

    # --- start-up ---------------------------------------------------------------

    def check_integrity(self) -> None:
        """The critical-memory check ran when the store was opened (controller/memory/critical.py);
        the meters are cross-checked against the log (controller/memory/boot_check.py)."""
        result = check_at_boot(self.store, self.store_failure, self.progressive)
        if result.failure is not None:
            self.hold_out_of_order(result.failure)
        else:
            log.info("integrity_ok", entries_checked=result.entries, log_seq=result.log_seq)

    def check_software(self) -> None:
        """The program's own files against the release's signed manifest (controller/software.py).
        With `[software] verify = "enforce"` a file that differs, is missing or is not in the
        release keeps the table out of order, naming it; "warn" logs it; "off" skips it."""
        from controller.software import start_check

        self.software, hold = start_check(self.config.software)
        if self.software["verified"]:
            log.info("software_verified", **self.software)
        elif hold:
            log.critical("software_verification_failed", **self.software)
        else:  # "off", or "warn" (a development tree): said at every start
            log.warning("software_not_verified", **self.software)
        if hold:
            print(f"tabled: table out of order: software: {self.software['detail']}",
                  file=sys.stderr, flush=True)
            held = self.table.out_of_order_reason  # a failed store check is named first
            self.table.mark_out_of_order(
                (f"{held}; " if held else "") + f"software: {self.software['detail']}")

    async def _check_history(self) -> None:
        """The whole history, at every start (controller/memory/history_check.py); until it
        passes no device event reaches the table and no command that opens the table or
        moves money runs. A check that could not run holds the table out of order."""
        self.history_check = {"state": "running"}
        try:
            result = await check_history(
                lambda: self.commands.verify.shared({"full": True}))
            self.history_check = result.status
            if result.error is not None:
                log.error("history_check_failed", exc_info=result.error)
            if result.hold:
                self.table.mark_out_of_order(result.hold)
            if result.passed:
                self.record(ev.HistoryVerified(**result.status))
        finally:
            self.history_checked.set()

    # --- the witness (controller/witness/) ----------------------------------------------

    def _witness(self) -> Any:
        """The table's witness, when `[witness]` names one and the store passed its check."""
        if self.config.witness is None or self.store_failure is not None:
            return None
        from controller.witness.table_side import TableWitness

        return TableWitness(self.config.witness, self.store, record=self.record,
                            out_of_order=self._witness_failed)

    async def _start_witness(self) -> None:
        if self.witness is None:
            if self.config.witness is None:
                log.warning("unwitnessed", detail="no [witness] in the configuration: the "
                            "table's heads are kept by no one off the table")
            return
        if self.table.state is not TableState.OUT_OF_ORDER:
            await self.witness.start()

    def _witness_failed(self, exc: IntegrityError) -> None:
        """The witness holds a head this store does not: out of order, naming both heads."""
        if self.store_failure is None:
            self.hold_out_of_order(exc)

    def fit_connections(self, open_files: int | None) -> bool:
        """The connection cap that fits the open-files limit (controller/limits.py): kept,
        lowered with one line naming the limit, or False (one line: start refused)."""
        linked = self.progressive is not None and self.progressive.linked is not None
        budget = connection_budget(self.config.access.max_connections,
                                   len(self.devices) + (2 if linked else 0), open_files)
        if budget.refused:
            print(f"tabled: not started: {budget.line}", file=sys.stderr, flush=True)
            log.error("open_files_too_few", detail=budget.line)
        elif budget.line:
            log.warning("connection_cap_lowered", cap=budget.cap, detail=budget.line)
            self.control.max_connections = budget.cap
            self.control.cap_source = f"lowered to fit the open-files limit {open_files}"
        return not budget.refused

    async def run(self, stop: asyncio.Event) -> int:
        self.intake.bind()
        bind_table(self.config.table_id)
        if not self.fit_connections(open_files_limit()):
            self.store.close()
            return EXIT_CONFIG
        self.table.restore()
        self.check_integrity()
        self.check_software()
        await self._start_witness()  # before anything can move money (its boot comparison)
        if self.store_failure is None:
            self.spawn(self._check_history())
        else:  # out of order already: nothing to hold for
            self.history_check = {"state": "not run", "detail": "the check at start failed"}
            self.history_checked.set()
        if self.progressive is not None and self.table.state is not TableState.OUT_OF_ORDER:
            for award in self.progressive.recover():  # an award a crash interrupted
                with self.store.transaction():
                    self.table._announce_award(award)
            self.progressive.publish_all()
            if self.progressive.linked is not None:
                self.spawn(self.panel.follow_linked(self.progressive))
            if self.progressive.feeds.pit is not None:  # the pit page's view of this table
                self.spawn(self.progressive.follow_pit(self.status))
        # Shared flushes (issue 31), where [store] flush_in says (docs/rulings.md C30).
        self.store.group_commits(asyncio.get_running_loop(), flush_in=self.config.store_flush_in)
        self.control.follow(self.store)
        self.control.set_history(self.store.events_from)
        self.access_log.resume_pin_guard()
        secure_store_files(self.store.path)
        if self.control.access.missing_groups:  # nobody holds those roles (docs/deployment.md)
            log.warning("access_groups_missing", groups=self.control.access.missing_groups)
        if self.config.access.inline_pin_hashes and self.config.supervisor_pin_hashes:
            self.record(ev.PinHashesExposed(self.config.source, (
                "[access] inline_pin_hashes: PIN hashes are in the table's configuration file; "
                "a real table keeps them in the secrets file")))
        await self.control.start()
        metrics = await self._serve_metrics()
        for device in self.devices.values():
            await device.start(self.intake.emit)
        if self.table.state is TableState.BETTING_OPEN:
            self.table.arm_seats()  # restored mid-betting: the sensors must be live again
        elif self.table.state is TableState.SHUFFLING:
            self.spawn(self.commands.play.request_shuffle(None))  # the request may have died with us
        with self.store.transaction():
            self.store.append_event(ev.DaemonStarted(
                __version__, self.table.state.value, release=self.software["release"],
                software_verified=self.software["verified"]))
        from controller import crash_points  # HIL power-cut test only; inert unless its env is set

        crash_points.install(self.store._db, listen=self.store.subscribe)
        self.collector.start()
        self.intake.start()
        notifier = SdNotifier()
        notifier.ready(f"table {self.table.state.value}")
        pinger = WatchdogPinger(notifier, self.health).start()
        log.info("ready", state=self.table.state.value, socket=self.config.control_socket)
        await stop.wait()
        notifier.stopping("stopping: closing devices and the store")
        pinger.cancel()
        self.intake.stop()
        with self.store.transaction():
            self.store.append_event(ev.DaemonStopping(self.table.state.value))
            self.access_log.save_pin_guard()  # the lockouts' time left, as of this stop
        log.info("control_closed", connections_closed=await self.control.close())
        if metrics is not None:
            await metrics.close()
        for device in self.devices.values():
            await device.stop()
        if self.witness is not None:  # the last heads, or the outbox keeps them
            await self.witness.stop()
        if self.progressive is not None:  # the pit page is told "offline", not "lost"
            await asyncio.to_thread(self.progressive.feeds.close)
        self.store.close()
        self.collector.stop()
        return EXIT_OK

    async def _serve_metrics(self) -> MetricsEndpoint | None:
        """`[metrics] listen`: the daemon's own /metrics on the loopback interface."""
        if self.config.metrics_listen is None:
            return None
        endpoint = MetricsEndpoint(self.commands.reports.metrics_text)
        host, port = self.config.metrics_listen
        self.metrics_port = await endpoint.start(host, port)
        log.info("metrics_serving", url=f"http://{host}:{self.metrics_port}/metrics")
        return endpoint

    def _handle(self, event: DeviceEvent) -> None:
        """One event through the table (controller/intake.py decides when)."""
        try:
            self.table.handle(event)
            self.panel.meters(self.progressive)
            self.collector.after_report(self.table, self.store.when_durable)
        except sqlite3.DatabaseError as exc:  # the store itself failed: disk full, I/O
            self._store_lost(exc)
        except Exception:  # one bad event must not stop the table; it is logged loudly
            log.exception("event_handling_failed", device_event=repr(event))
            with self.store.transaction():
                self.store.append_event(ev.InternalError(repr(event)))

    def _store_lost(self, exc: sqlite3.DatabaseError) -> None:
        """The store stopped taking writes in play. The step was rolled back; the table goes
        out of order on an in-memory stand-in (nothing more is written to the file, which
        keeps every committed step), and the daemon stays up to say why: no restart loop."""
        from controller.memory.critical import unusable

        self.table.store = Store(":memory:")  # before the table records its state
        self.hold_out_of_order(unusable(Path(self.store.path), exc), "store_failed")

    def health(self) -> Health:
        """For the systemd watchdog: can this process still do its job?

        A disconnected device is a table fault the daemon reports and recovers
        from itself, so it does not fail the check; a dead event consumer or a
        backed-up queue does (a restart is the cure for those).
        """
        consumer_alive = self.intake.alive()
        backlog = self.intake.queue.qsize()
        down = [name for name, d in self.devices.items() if d.health().link is not LinkState.UP]
        summary = f"table {self.table.state.value}" + (
            f"; waiting for {', '.join(down)}" if down else "; all devices up")
        if not consumer_alive:
            return Health(False, "the table's event consumer stopped")
        if backlog > QUEUE_LIMIT // 2:
            return Health(False, f"{backlog} device events waiting: the table is not keeping up")
        return Health(True, summary)


def main(argv: Sequence[str] | None = None) -> int:
    parser = command_line()
    args = parser.parse_args(argv)
    configure_logging(level=args.log_level)
    try:
        config = load_config(args.config, args.set)
    except ConfigError as exc:
        print(str(exc), file=sys.stderr)
        log.error("bad_configuration", problems=exc.problems, source=exc.source)
        return EXIT_CONFIG
    if args.init_store or args.clear_store or args.register_witness:
        from controller.memory.lifecycle import run_once

        return run_once(config, args)
    return asyncio.run(_amain(config))


async def _amain(config: TableConfig) -> int:
    try:
        daemon = Daemon(config)
    except sqlite3.OperationalError as exc:
        # Validation judged the path as far as it could; opening is the last word (a disk
        # full, a permission this account lacks). A configuration error: exit 6, no restart.
        problem = (f"store.path = {config.store_path!r}: cannot be opened ({exc}); allowed: a "
                   "writable file path for user tabled, e.g. /var/lib/tabled/table.sqlite")
        print(str(ConfigError(config.source, [problem])), file=sys.stderr)
        log.error("bad_configuration", problems=[problem], source=config.source)
        return EXIT_CONFIG
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    return await daemon.run(stop)


if __name__ == "__main__":
    sys.exit(main())
