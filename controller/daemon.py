"""tabled: the table controller daemon.

Wires the configuration's devices to the table state machine, the store and the
control socket, then runs until SIGTERM/SIGINT. Device I/O runs in the drivers'
own tasks; the table only ever sees events from one queue, on the loop's thread.
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import gc
import json
import os
import signal
import sqlite3
import sys
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import structlog

from controller import __version__
from controller.access import AccessPolicy, Role
from controller.auth import PIN_GUARD_META, PinGuard, PinPolicy
from controller.config import ConfigError, TableConfig, load_config
from controller.control import ControlError, ControlServer, event_json
from controller.control_args import FLAG, Arg, choice, number, shown, text, whole
from controller.events import KINDS, SEVERITIES
from controller.limits import connection_budget, open_files_limit
from controller.metrics_http import MetricsEndpoint
from controller.offload import StoreWork
from controller.logsetup import bind_table, configure_logging
from cards import BackColour
from controller.sdnotify import SdNotifier
from controller.rules.batches import BatchTracker
from controller.store import IntegrityError, Store
from controller.table import CommandRefused, RulesAdapter, Table, TableState
from controller.table_snapshot import wager_json
from controller.watchdog import Health, WatchdogPinger
from drivers.protocols import (
    CardDrawn, Device, DeviceEvent, LinkState, ProgressiveDisplay, SeatPanel, Shuffler,
)

log = structlog.get_logger("tabled")

EXIT_OK, EXIT_CONFIG = 0, 6  # --init-store / --clear-store's failure: critical_store.EXIT_STORE
LIGHT_TEST_STEP_S = 0.3  # long enough for a technician to see each seat light in turn
LIGHT_TEST_ALL_ON_S = 1.5
LINKED_SYNC_S = 2.0  # a pit display lagging a hit at another table by 2 s is acceptable
SHUFFLE_RETRY_S = 0.5  # waiting for the shuffler's link; its own reconnect backoff is slower
GC_YOUNG_LIMIT = 50_000
"""Allocations after which Python's cyclic collector runs by itself (700 by default). At the
default a young collection (0.1-1 ms here, about four times that on a Pi) fell in about one
card step in fifty: the p99 of card -> decision. The daemon collects the young generations
itself between rounds (`_collect_between_rounds`); this bounds a table that deals long
without a round ending."""
GC_BETWEEN_ROUNDS = 2_000  # allocations since the last collection that make one worth it
BOOT_CHAIN_LIMIT = 20_000
"""At start, the log's entries since the last full check are read before ready only if there
are at most this many (about 0.1 s here, 0.5 s on a Pi 4): a tampered recent entry then puts
the table out of order at once. Any longer stretch, and all of the history in any case, is
left to the full check that follows ready (`Daemon._check_history`)."""
HISTORY_WAIT_S = 10.0
"""How long a command that opens the table or moves money waits for the start's check of the
whole history before it is refused (a million entries take a few seconds here)."""
GC_FULL_AFTER = 10  # young collections between full ones
GC_QUIET = (TableState.BETTING_OPEN, TableState.END_OF_SHOE, TableState.SHUFFLING,
            TableState.CLOSED, TableState.OPENING)  # no card is expected at once
QUEUE_LIMIT = 10_000  # device events waiting for the table; a full queue means the loop is stuck
HEALTH_STALL_S = 5.0  # the loop is unhealthy if an event waited longer than this


def build_devices(config: TableConfig) -> dict[str, Device]:
    """Create the drivers the configuration names (nothing is opened yet)."""
    from controller.rules.submission import seat_rule
    from drivers.seats import GpioSeatPanel, SeatPins
    from drivers.shoe import SerialShoe

    devices: dict[str, Device] = {
        "shoe": SerialShoe("shoe", config.shoe.url, baudrate=config.shoe.baudrate,
                           firmware_versions=config.shoe.firmware_versions),
        "seats": GpioSeatPanel(
            "seats",
            {w.seat: SeatPins(w.sensor_pin, w.led_pin) for w in config.gpio.seats},
            config.gpio.lockout_pin, pin_factory=config.gpio.pin_factory,
            factory_options=dict(config.gpio.factory_options),
            debounce_s=config.gpio.debounce_ms / 1000,
            led_pin_factory=config.gpio.led_pin_factory,
            led_factory_options=dict(config.gpio.led_factory_options),
            seat_rule=seat_rule(config.submission.game.family)),
    }
    if config.shuffler.enabled:
        from drivers.shuffler import UsbShuffler

        devices["shuffler"] = UsbShuffler("shuffler", config.shuffler.vendor_id,
                                          config.shuffler.product_id,
                                          backend=config.shuffler.backend,
                                          firmware_versions=config.shuffler.firmware_versions)
    if config.display.enabled:
        from drivers.display import SerialDisplay

        devices["display"] = SerialDisplay("display", config.display.url,
                                           baudrate=config.display.baudrate,
                                           firmware_versions=config.display.firmware_versions)
    return devices


class Daemon:
    def __init__(self, config: TableConfig, devices: Mapping[str, Device] | None = None) -> None:
        from controller.rules.game import build_game

        self.config = config
        self.game = build_game(config.submission)
        self.store, self.store_failure = _open_store(config)
        self.devices = dict(devices) if devices is not None else build_devices(config)
        self.queue: asyncio.Queue[DeviceEvent] = asyncio.Queue(maxsize=QUEUE_LIMIT)
        self.started_monotonic = time.monotonic()
        # The whole history is checked at every start, after ready (`_check_history`); the
        # table settles nothing, and opens to no one, until it passes.
        self.history_checked = asyncio.Event()
        self.history_check: dict[str, Any] = {"state": "not started"}
        self.software: dict[str, Any] = {"mode": config.software.mode, "verified": False,
                                         "release": None, "detail": "not checked yet"}
        self._last_event_wait = 0.0
        # Each optional device as the Protocol the daemon calls it through.
        seats, display, shuffler = (_device_as(self.devices, name, protocol) for name, protocol
                                    in (("seats", SeatPanel), ("display", ProgressiveDisplay),
                                        ("shuffler", Shuffler)))
        self.seats = seats if isinstance(seats, SeatPanel) else None
        self.display = display if isinstance(display, ProgressiveDisplay) else None
        self.shuffler = shuffler if isinstance(shuffler, Shuffler) else None
        self.progressive = None
        if config.progressive is not None:
            from controller.progressive.system import ProgressiveSystem

            # No network I/O on the loop: linked meters sync from their own task.
            self.progressive = ProgressiveSystem.from_config(
                config.progressive, self.store, win_light=self._win_light, sync_on_open=False)
        self._shown_meters: dict[str, int] = {}
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
        self.control = ControlServer(
            config.control_socket, mode=config.control_socket_mode,
            access=AccessPolicy(access), record=self._record,
            pins=PinGuard(config.supervisor_pin_hashes, PinPolicy(
                access.pin_lockout_after, access.pin_lockout_s, access.pin_delay_s,
                access.pin_max_delay_s)),  # it records through the control server's refusal log
            on_supervisor_command=self._audit_supervisor)
        self.store_work = StoreWork(self.store)
        self.witness = self._witness()
        self._register_commands()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0  # the loop's thread, once it runs
        self._from_threads: deque[DeviceEvent] = deque()
        self._handling = False  # the table is in a step (an event must then wait its turn)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._consumer: asyncio.Task[None] | None = None
        self.metrics_port = 0  # where [metrics] listen serves, once it does

    # --- wiring -----------------------------------------------------------------

    def _emit(self, event: DeviceEvent) -> None:
        """Device callback: safe from any thread; only enqueues. On the loop's own thread (the
        shoe's serial reader, the shuffler's callbacks) the event is queued at once, not one
        loop turn and a wake-up of the loop's self-pipe later; from another thread (a GPIO
        edge callback) it waits in `_from_threads` for the loop. Either way the table sees
        events in the order they were emitted: a thread's event emitted first is queued
        first."""
        assert self._loop is not None
        if threading.get_ident() == self._loop_thread:
            if self._from_threads:
                self._take_from_threads()
            self._enqueue(event)
        else:
            self._from_threads.append(event)  # deque.append is atomic: no lock needed
            self._loop.call_soon_threadsafe(self._hand_over)

    def _hand_over(self) -> None:
        """The loop takes what threads emitted (a GPIO edge: the lock-out button, a seat)."""
        self._take_from_threads(at_once=True)

    def _take_from_threads(self, *, at_once: bool = False) -> None:
        while self._from_threads:
            self._enqueue(self._from_threads.popleft(), at_once=at_once)

    def _enqueue(self, event: DeviceEvent, *, at_once: bool = False) -> None:
        """Into the queue, or, for an event that finds the table waiting, straight to the
        table: the queue would only add a loop turn before its step. Straight only where no
        driver's code is under the call, half way through its own bookkeeping (a driver may
        emit mid-update, and the step may call that driver back): the loop's hand-over of
        what threads emitted (`at_once`), and the shoe's card, which its driver emits as the
        last thing it does with a frame (drivers/shoe.py)."""
        if (at_once or type(event) is CardDrawn) and self._idle():
            self._handle(event)
            return
        try:
            self.queue.put_nowait(event)
        except asyncio.QueueFull:
            log.error("event_queue_full", dropped=type(event).__name__)

    def _idle(self) -> bool:
        """The table is waiting for its next event: not in a step (an event a step causes
        waits for it to end), nothing queued or handed to the consumer (an item stays in the
        queue until the woken consumer takes it), and the consumer is running."""
        consumer = self._consumer
        return (not self._handling and self.queue.empty() and not self._from_threads
                and consumer is not None and not consumer.done()
                and self.history_checked.is_set())

    def _show_prompt(self, action: str, detail: Mapping[str, Any]) -> None:
        if action == "reshuffle":  # back in SHUFFLING after a fault: ask the shuffler again
            self._spawn(self._request_shuffle(None))
        if self.display is not None:
            self.display.show_prompt(action.replace("_", " "))

    def _win_light(self, seat: int, on: bool) -> None:
        """631c.6(c)(5): the light the dealer verifies before a progressive is paid."""
        if self.display is not None:
            self.display.win_light(seat, on)

    def _show_meters(self) -> None:
        if self.progressive is None:
            return
        amounts = dict(self.progressive.display_amounts())
        if amounts != self._shown_meters and self.display is not None:
            self.display.show_meters(amounts)
        self._shown_meters = amounts

    async def _sync_linked(self) -> None:
        """Linked progressives (605a.8): flush the outbox and follow the shared meter."""
        assert self.progressive is not None
        while True:
            await self.progressive.sync_async()
            self._show_meters()
            await asyncio.sleep(LINKED_SYNC_S)

    async def _feed_pit(self) -> None:
        """The pit page's view of this table over MQTT (controller/progressive/pit_feed.py)."""
        from controller.progressive.pit_feed import FEED_INTERVAL_S

        assert self.progressive is not None
        while True:
            self.progressive.feed_pit(self.status())
            await asyncio.sleep(FEED_INTERVAL_S)

    def _audit_supervisor(self, who: str, command: str, args: Mapping[str, Any]) -> None:
        with self.store.transaction():
            self.store.append_event("supervisor_command", {"supervisor": who, "command": command,
                                                           "args": dict(args)})
            self._save_pin_guard()  # the accepted PIN started the name's count over

    def _resume_pin_guard(self) -> None:
        """Wrong PINs and lockouts survive a restart (controller/auth.py, PinGuard.resume),
        from what the guard last saved in the store; no clock is read."""
        try:
            saved = json.loads(self.store.meta(PIN_GUARD_META) or "{}")
        except json.JSONDecodeError:  # the meta table is sealed: only a bug could write this
            saved = {}
        resumed = self.control.pins.resume(saved if isinstance(saved, dict) else {})
        if resumed:
            self._record("pin_guard_resumed", {"supervisors": resumed}, "warning")

    def _save_pin_guard(self) -> None:
        self.store.put_meta(PIN_GUARD_META, json.dumps(self.control.pins.saved(),
                                                       sort_keys=True))

    def _record(self, kind: str, payload: Mapping[str, Any], severity: str) -> None:
        """Access events (refusals, PIN failures, lockouts, dropped subscribers) into the log;
        a wrong PIN or a lockout saves the PIN guard in the same step."""
        with self.store.transaction():
            self.store.append_event(kind, payload, severity=severity)
            if kind in ("pin_failed", "pin_lockout"):
                self._save_pin_guard()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # --- start-up ---------------------------------------------------------------

    def check_integrity(self) -> None:
        """The critical-memory check ran when the store was opened (controller/critical.py);
        the meters are cross-checked against the log here. A failure puts the table out of
        order with a message naming what failed, and nothing is cleared automatically."""
        try:
            if self.store_failure is not None:
                raise self.store_failure
            problems = self.progressive.verify() if self.progressive is not None else []
            if problems:
                raise IntegrityError("progressive meters", "; ".join(problems))
            verified = self.store.verified
            log.info("integrity_ok", entries_checked=verified.entries if verified else 0,
                     log_seq=verified.log_seq if verified else 0)
        except IntegrityError as exc:
            self.store_failure = exc
            log.critical("integrity_failed", check=exc.check, detail=exc.detail,
                         action=exc.action)
            print(f"tabled: table out of order: {describe(exc)}", file=sys.stderr, flush=True)
            self.table.mark_out_of_order(f"{exc.check}: {exc.detail}")

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
        """The whole history, at every start: every log entry's MAC from the first, every
        sealed row (settled rounds too), the seal and the anchor, on a snapshot of its own
        while the devices connect. The start itself checked the seal, the anchor, the log's
        head and at most BOOT_CHAIN_LIMIT entries, so that ready does not wait on the
        history's length; until this
        passes no device event reaches the table (nothing is settled) and no command that
        opens the table or moves money runs. A failure puts the table out of order, as the
        boot check's would."""
        started = time.monotonic()
        self.history_check = {"state": "running"}
        try:
            verified = await self._verify_shared({"full": True})
        except ControlError as exc:
            self.history_check = {"state": "failed", "detail": str(exc)}
        except Exception as exc:  # the check could not run: say so, hold the table
            log.exception("history_check_failed")
            self.history_check = {"state": "failed", "detail": repr(exc)}
            self.table.mark_out_of_order(f"history check: could not run ({exc!r})")
        else:
            self.history_check = {"state": "passed", "entries": verified["entries"],
                                  "seconds": round(time.monotonic() - started, 3)}
            self._record("history_verified", dict(self.history_check), "info")
        finally:
            self.history_checked.set()

    def _after_history_check(self, handler: Any) -> Any:
        """A command that opens the table or moves money waits for the history's check (at
        most HISTORY_WAIT_S, then it is refused with the reason)."""
        async def run(args: Mapping[str, Any]) -> Any:
            if not self.history_checked.is_set():
                try:
                    await asyncio.wait_for(self.history_checked.wait(), HISTORY_WAIT_S)
                except TimeoutError:
                    raise ControlError("the check of the table's whole history at start is "
                                       "still running; the table opens when it passes "
                                       "(tablectl status: history_check)") from None
            result = handler(args)
            return await result if asyncio.iscoroutine(result) else result
        return run

    # --- the witness (controller/witness/) ----------------------------------------------

    def _witness(self) -> Any:
        """The table's witness, when `[witness]` names one and the store passed its check."""
        if self.config.witness is None or self.store_failure is not None:
            return None
        from controller.witness.table_side import TableWitness

        return TableWitness(self.config.witness, self.store, record=self._record,
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
        if self.store_failure is not None:
            return
        self.store_failure = exc
        log.critical("integrity_failed", check=exc.check, detail=exc.detail, action=exc.action)
        print(f"tabled: table out of order: {describe(exc)}", file=sys.stderr, flush=True)
        self.table.mark_out_of_order(f"{exc.check}: {exc.detail}")

    def _place_wager(self, args: Mapping[str, Any]) -> None:
        refusal = self.witness.refusal() if self.witness is not None else None
        if refusal is not None:
            raise CommandRefused(refusal)
        self.table.cmd_place_wager(args["seat"], args["wager"], args["amount_cents"])

    async def _verify(self, args: Mapping[str, Any]) -> Any:
        """`tablectl events verify [--full]`: the boot check again, on a connection of its
        own in a child process so the table keeps running. A failure found now puts the
        table out of order; a full pass moves the checkpoint later boots start from."""
        from controller.critical import as_mapping
        from controller.critical import reason_text as critical_reason
        from controller.critical_store import RECHECK_EVENT

        if self.store_failure is not None:
            raise _integrity_answer(self.store_failure)
        full = args["full"]

        async def check() -> Any:
            return await self.store_work.verify_file(self.store.path, self.store.key,
                                                     self.store.paths, full=full)

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
                self._record(RECHECK_EVENT, {"first": critical_reason(first),
                                             "recheck": as_mapping(verified)}, "critical")
        except IntegrityError as exc:
            self.store_failure = exc
            log.critical("integrity_failed", check=exc.check, detail=exc.detail)
            self.table.mark_out_of_order(f"{exc.check}: {exc.detail}")
            raise _integrity_answer(exc) from None
        if full and verified.log_seq:
            # The entry and MAC the check ended on, from the check's own snapshot: the table
            # kept writing meanwhile, so anything read now from this connection (the log's
            # head) is later than the check and would not link.
            self.store.set_checkpoint(verified.log_seq, verified.log_mac, verified.settled)
        return as_mapping(verified)

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
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        bind_table(self.config.table_id)
        if not self.fit_connections(open_files_limit()):
            self.store.close()
            return EXIT_CONFIG
        self.table.restore()
        self.check_integrity()
        self.check_software()
        await self._start_witness()  # before anything can move money (its boot comparison)
        if self.store_failure is None:
            self._spawn(self._check_history())
        else:  # out of order already: nothing to hold for
            self.history_check = {"state": "not run", "detail": "the check at start failed"}
            self.history_checked.set()
        if self.progressive is not None and self.table.state is not TableState.OUT_OF_ORDER:
            for award in self.progressive.recover():  # an award a crash interrupted
                with self.store.transaction():
                    self.table._announce_award(award)
            self.progressive.publish_all()
            if self.progressive.linked is not None:
                self._spawn(self._sync_linked())
            if self.progressive.feeds.pit is not None:
                self._spawn(self._feed_pit())
        self.control.follow(self.store)
        self.control.set_history(self.store.events_from)
        self._resume_pin_guard()
        secure_store_files(self.store.path)
        if self.control.access.missing_groups:  # nobody holds those roles (docs/deployment.md)
            log.warning("access_groups_missing", groups=self.control.access.missing_groups)
        if self.config.access.inline_pin_hashes and self.config.supervisor_pin_hashes:
            self._record("pin_hashes_exposed", {"config": self.config.source, "reason": (
                "[access] inline_pin_hashes: PIN hashes are in the table's configuration file; "
                "a real table keeps them in the secrets file")}, "warning")
        await self.control.start()
        metrics = await self._serve_metrics()
        for device in self.devices.values():
            await device.start(self._emit)
        if self.table.state is TableState.BETTING_OPEN:
            self.table.arm_seats()  # restored mid-betting: the sensors must be live again
        elif self.table.state is TableState.SHUFFLING:
            self._spawn(self._request_shuffle(None))  # the request may have died with us
        with self.store.transaction():
            self.store.append_event("daemon_started", {
                "version": __version__, "state": self.table.state.value,
                "release": self.software["release"],
                "software_verified": self.software["verified"]})
        from controller import crash_points  # HIL power-cut test only; inert unless its env is set

        crash_points.install(self.store._db)
        threshold = gc.get_threshold()
        gc.collect()
        gc.freeze()  # what start-up built stays: no collection walks it again
        gc.set_threshold(GC_YOUNG_LIMIT, *threshold[1:])
        self._consumer = asyncio.create_task(self._consume(), name="table-events")
        notifier = SdNotifier()
        notifier.ready(f"table {self.table.state.value}")
        pinger = WatchdogPinger(notifier, self.health).start()
        log.info("ready", state=self.table.state.value, socket=self.config.control_socket)
        await stop.wait()
        notifier.stopping("stopping: closing devices and the store")
        pinger.cancel()
        self._consumer.cancel()
        with self.store.transaction():
            self.store.append_event("daemon_stopping", {"state": self.table.state.value})
            self._save_pin_guard()  # the lockouts' time left, as of this stop
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
        gc.set_threshold(*threshold)  # a daemon run inside another program (the tests)
        gc.unfreeze()
        return EXIT_OK

    async def _serve_metrics(self) -> MetricsEndpoint | None:
        """`[metrics] listen`: the daemon's own /metrics on the loopback interface."""
        if self.config.metrics_listen is None:
            return None
        endpoint = MetricsEndpoint(self.metrics_text)
        host, port = self.config.metrics_listen
        self.metrics_port = await endpoint.start(host, port)
        log.info("metrics_serving", url=f"http://{host}:{self.metrics_port}/metrics")
        return endpoint

    def metrics_text(self) -> str:
        """The daemon's Prometheus text: the table's families (controller/metrics_text.py)
        and the control socket's, every counter since the daemon started."""
        from controller.metrics_text import MetricsWriter, table_families

        t, control = self.table, self.control
        w = MetricsWriter(t.table_id)
        table_families(w, state=t.state.value, devices=self.device_report(), fault=t.fault,
                       shoe_rounds=t.shoe.rounds_in_shoe,
                       software=self.software)
        w.family("tabled_control_connections", "gauge", "connections open on the control socket",
                 [({}, control.connections)])
        w.family("tabled_control_connections_max", "gauge", "the control socket's connection "
                 "cap in force ([access] max_connections, or lower to fit the open-files limit)",
                 [({}, control.max_connections)])
        w.family("tabled_control_refusals_total", "counter", "refusals on the control socket "
                 "by kind (command_refused, pin_failed, pin_lockout, pin_refused, pin_delay, "
                 "subscriber_dropped), "
                 "each counted whether or not it was written to the log one by one",
                 [({"kind": k}, n) for k, n in sorted(control.refusals.totals.items())])
        w.family("tabled_daemon_uptime_seconds", "gauge", "seconds since the daemon started",
                 [({}, round(time.monotonic() - self.started_monotonic, 3))])
        return w.text()

    async def _consume(self) -> None:
        await self.history_checked.wait()  # device events wait in the queue until then
        while True:
            self._handle(await self.queue.get())

    def _handle(self, event: DeviceEvent) -> None:
        """One event through the table: the consumer's, or a card's at once (`_enqueue`)."""
        self._handling = True
        try:
            self.table.handle(event)
            self._show_meters()
            self._collect_between_rounds()
        except sqlite3.DatabaseError as exc:  # the store itself failed: disk full, I/O
            self._store_lost(exc)
        except Exception:  # one bad event must not stop the table; it is logged loudly
            log.exception("event_handling_failed", device_event=repr(event))
            with self.store.transaction():
                self.store.append_event("internal_error", {"event": repr(event)},
                                        severity="error")
        finally:
            self._handling = False

    def _collect_between_rounds(self) -> None:
        """The young generations' collection, when the step left the table where no card is
        expected at once (a round ended: its result is already out): never in a card's."""
        if self.table.state in GC_QUIET and gc.get_count()[0] >= GC_BETWEEN_ROUNDS:
            # Every tenth time the old generation too, as the collector itself would after
            # ten young collections (its default), or a week's cycles would never be freed.
            gc.collect(2 if gc.get_count()[2] >= GC_FULL_AFTER else 1)

    def _store_lost(self, exc: sqlite3.DatabaseError) -> None:
        """The store stopped taking writes in play. The step was rolled back; the table goes
        out of order on an in-memory stand-in (nothing more is written to the file, which
        keeps every committed step), and the daemon stays up to say why: no restart loop."""
        from controller.critical import unusable

        failure = unusable(Path(self.store.path), exc)
        self.store_failure = failure
        log.critical("store_failed", check=failure.check, detail=failure.detail,
                     action=failure.action)
        print(f"tabled: table out of order: {describe(failure)}", file=sys.stderr, flush=True)
        self.table.store = Store(":memory:")
        self.table.mark_out_of_order(f"{failure.check}: {failure.detail}")

    def health(self) -> Health:
        """For the systemd watchdog: can this process still do its job?

        A disconnected device is a table fault the daemon reports and recovers
        from itself, so it does not fail the check; a dead event consumer or a
        backed-up queue does (a restart is the cure for those).
        """
        consumer_alive = self._consumer is not None and not self._consumer.done()
        backlog = self.queue.qsize()
        down = [name for name, d in self.devices.items() if d.health().link is not LinkState.UP]
        summary = f"table {self.table.state.value}" + (
            f"; waiting for {', '.join(down)}" if down else "; all devices up")
        if not consumer_alive:
            return Health(False, "the table's event consumer stopped")
        if backlog > QUEUE_LIMIT // 2:
            return Health(False, f"{backlog} device events waiting: the table is not keeping up")
        return Health(True, summary)

    # --- control commands -----------------------------------------------------------

    def _register_commands(self) -> None:
        """Every command with the one role it needs (controller/access.py) and the arguments
        it takes (controller/control_args.py: checked before it runs); the tables in
        docs/control-api.md are generated from these (tools/control_roles.py)."""
        READ, DEALER, TECHNICIAN, SUPERVISOR = Role  # noqa: N806

        def reg(name: str, handler: Any, **how: Any) -> None:
            self.control.register(name, handler, args=COMMAND_ARGS.get(name), **how)

        reg("status", lambda a: self.status(), role=READ, description="table state, shoe, round, fault")
        reg("devices", lambda a: self.device_report(), role=READ, description="each device's health")
        reg("rounds", self._rounds, role=READ, description="game recall of the last rounds")
        reg("events", self._events, role=READ, description="event log entries")
        reg("seat_totals", lambda a: {str(k): v for k, v in self.store.seat_totals().items()},
            role=READ, description="each seat's net result, amount wagered and vigorish owed, in cents")
        reg("verify_chain", self._verify_shared, role=READ, description="the critical-memory "
            "check: the event log's MAC chain, the sealed tables, the anchor (full=true: every "
            "entry)")
        reg("open", self._after_history_check(self._guard(lambda a: self._open_table())), role=DEALER, description="open the table")
        reg("shuffle", self._cmd_shuffle, role=DEALER, description="shuffle a batch for a new shoe")
        reg("shoe_loaded", self._guard(self._dealer_loaded_shoe), role=DEALER,
            description="the dealer loaded the shoe: checked like the shoe's own report")
        reg("place_wager", self._guard(self._place_wager), role=DEALER,
            description="accept a wager at a seat")
        reg("no_more_bets", self._guard(lambda a: self.table.cmd_no_more_bets("dealer")),
            role=DEALER, description="lock every seat")
        reg("new_dealer", self._guard(lambda a: self.table.cmd_new_dealer(a["dealer"])),
            role=DEALER,
            description="a new dealer takes over between rounds (681a.7(c): burns one card)")
        reg("acknowledge_fault", self._after_history_check(lambda a: {
            "acknowledgement": self._refusing(
                lambda: self.table.cmd_acknowledge_fault(a["_supervisor"])),
            **self.status()}), role=SUPERVISOR,
            description="a floor supervisor's ruling: clears what a ruling can, names what "
                        "still holds the table (docs/faults.md)")
        reg("disclosed_player_third", self._after_history_check(lambda a: {
            "ruling": self._refusing(
                lambda: self.table.cmd_disclosed_player_third(a["_supervisor"])),
            **self.status()}), role=SUPERVISOR,
            description="the floor declares the last card a Player third card dealt in error "
                        "and disclosed (631a.15(c))")
        reg("self_test", self._self_test, role=TECHNICIAN, description="run a device's self-test")
        reg("seat_leaves", self._after_history_check(lambda a: {
            "collected_cents": self._refusing(
                lambda: self.table.cmd_seat_leaves(a["seat"]))}), role=DEALER,
            description="collect the vigorish marked at a seat whose player leaves")
        reg("adjust_meter", self._after_history_check(self._adjust_meter), role=SUPERVISOR,
            description="an audited correction of a progressive meter (reason required)")
        reg("light_test", self._light_test, role=TECHNICIAN,
            description="a light pattern the technician watches: every seat LED, every win light")
        reg("meters", lambda a: self.progressive.meters() if self.progressive else [], role=READ,
            description="every progressive meter with its 605a.7 companions")
        reg("awards", lambda a: [w.as_dict() for w in self.progressive.pending_awards()]
            if self.progressive else [], role=READ,
            description="progressive awards awaiting validation")
        reg("validate_award", self._after_history_check(self._validate_award), role=SUPERVISOR,
            description="a floor supervisor validates a progressive award (631c.6(c)(5))")
        reg("software_change", self._software_change, role=SUPERVISOR,
            description="a floor supervisor allows a release's activation or rollback, "
                        "between shoes only (tablectl software activate, rollback)")
        reg("software_record", self._software_record, role=TECHNICIAN,
            description="a release staged, or rolled back by itself after a failed start, "
                        "into the log")

    def _software_change(self, args: Mapping[str, Any]) -> Any:
        """The table's consent to a change of software (docs/deployment.md, "Upgrade and roll
        back"): only between shoes (or out of order, when nothing can be played), recorded
        with the supervisor before tablectl moves the `current` link and restarts."""
        action, release = args["action"], args["release"]
        if self.table.state not in SOFTWARE_CHANGE_STATES:
            raise ControlError(
                f"a change of software is allowed only between shoes; the table is "
                f"{self.table.state.value} (allowed: "
                f"{', '.join(s.value for s in SOFTWARE_CHANGE_STATES)})", "not_allowed")
        payload = {"release": release, "from_release": self.software.get("release"),
                   "supervisor": str(args.get("_supervisor", ""))}
        if action == "activate":
            self._record("software_activated", payload, "warning")
        else:
            self._record("software_rolled_back", {**payload, "automatic": False}, "warning")
        return payload

    def _software_record(self, args: Mapping[str, Any]) -> Any:
        event, release = args["event"], args["release"]
        if event == "staged":
            self._record("software_staged", {"release": release}, "info")
        else:
            self._record("software_rolled_back", {
                "release": release, "from_release": args["from_release"],
                "supervisor": "", "automatic": True}, "warning")
        return {"recorded": event, "release": release}

    async def _verify_shared(self, args: Mapping[str, Any]) -> Any:
        """Callers asking while the same check runs share its answer: a burst of requests
        costs one pass over the log, not one each."""
        return await self.store_work.once(("verify", args["full"]), lambda: self._verify(args))

    async def _rounds(self, args: Mapping[str, Any]) -> Any:
        return await self.store_work.read(lambda store: store.rounds(
            limit=args["limit"], after_round_id=args["after_round_id"]))

    def _dealer_loaded_shoe(self, args: Mapping[str, Any]) -> None:
        """The dealer's word that the shoe is loaded is not a device fact: it becomes the
        same ShoeLoaded the shoe reports and meets the same 681a.3(b) batch check, with the
        batch the shuffler verified (or the colour the dealer names); every card then dealt
        is checked against it like any other."""
        from drivers.protocols import ShoeLoaded

        named = _back_colour(args["back"])
        if self.table.state is not TableState.CUT:
            raise CommandRefused(f"not allowed while the table is {self.table.state.value}")
        back = named if named is not None else self.table.batch_shuffled
        if back is None:
            raise ControlError("no batch was shuffled and verified: say which batch was "
                               "loaded ('back': red, blue, green or black)", "bad_request")
        # Recorded as the dealer's word; then checked and applied as the shoe's own report
        # (the shoe is the device the fact is about, so a mismatch stops play as it would).
        self._record("shoe_load_declared", {"back": back.name.lower(), "by": "dealer"}, "info")
        self.table.handle(ShoeLoaded("shoe", self.config.submission.game.decks * 52, back))

    def _guard(self, fn: Any) -> Any:
        def run(args: Mapping[str, Any]) -> Any:
            try:
                fn(args)
            except CommandRefused as exc:
                raise ControlError(str(exc)) from exc
            except Exception as exc:
                if type(exc).__name__ == "MachineError":  # transitions: trigger not allowed now
                    raise ControlError(f"not allowed while the table is "
                                       f"{self.table.state.value}") from exc
                raise
            return self.status()
        return run

    def _open_table(self) -> None:
        """A table opens only with a working shoe: nothing is dealt from a device in doubt."""
        shoe = self.devices.get("shoe")
        if shoe is not None:
            health = shoe.health()
            if health.link is not LinkState.UP:
                raise CommandRefused(
                    f"the shoe is {health.link.value}"
                    + (f" ({health.last_error})" if health.last_error else "")
                    + "; the table opens once it is up (tablectl devices)")
        self.table.cmd_open()

    async def _cmd_shuffle(self, args: Mapping[str, Any]) -> Any:
        back = _back_colour(args["back"])
        decks = self.config.submission.game.decks
        self._guard(lambda a: self.table.cmd_shuffle(decks))(args)
        self._spawn(self._request_shuffle(back))
        return self.status()

    async def _request_shuffle(self, back: BackColour | None) -> None:
        """Ask the shuffler for a shuffle, waiting for its link if it is not up yet.

        Runs as its own task (the table's state machine never awaits device I/O);
        it gives up when the table leaves the shuffling state.
        """
        from drivers.errors import DriverError, ShufflerBusyError, ShufflerNotConnectedError
        from drivers.protocols import DeviceFault, ShuffleComplete

        cards = self.config.submission.game.decks * 52
        shuffler = self.shuffler
        if shuffler is None:
            # 631a.5(a): shuffled by hand; the dealer confirms by loading the shoe.
            self._enqueue(ShuffleComplete("manual", back if back is not None else BackColour.RED,
                                            cards, 0, 0, 0))
            return
        while self.table.shuffle_wanted:
            # RED is 0, so each fallback tests for None, never for truth.
            batch = next((b for b in (back, shuffler.held_batch,
                                      self.table.batch_in_shuffler) if b is not None), None)
            try:
                if batch is None:
                    raise ShufflerNotConnectedError("the shuffler has not said which batch it holds")
                await shuffler.shuffle(batch, cards)
                return
            except ShufflerBusyError:
                return  # a shuffle is already running; its result arrives as events
            except ShufflerNotConnectedError:
                await asyncio.sleep(SHUFFLE_RETRY_S)
            except DriverError as exc:
                self._enqueue(DeviceFault("shuffler", "shuffle_request_failed", str(exc),
                                          "check the shuffler, then ask for the shuffle again"))
                return

    @staticmethod
    def _refusing(fn: Any) -> Any:
        try:
            return fn()
        except CommandRefused as exc:
            raise ControlError(str(exc)) from exc

    def _adjust_meter(self, args: Mapping[str, Any]) -> Any:
        from controller.progressive.errors import ProgressiveError

        if self.progressive is None:
            raise ControlError("this table offers no progressive wager")
        reason = args["reason"].strip()
        if not reason:
            raise ControlError("'reason' = blank: allowed: say why the meter is corrected",
                               "bad_request")
        try:
            return self.progressive.adjust_meter(
                args["progressive"], args["level"], args["delta_cents"],
                supervisor=args["_supervisor"], reason=reason)
        except (ProgressiveError, KeyError) as exc:
            raise ControlError(str(exc)) from exc

    def _validate_award(self, args: Mapping[str, Any]) -> Any:
        award_id = args["award_id"]
        display = self.display
        if display is not None and self.progressive is not None:
            award = next((a for a in self.progressive.pending_awards()
                          if a.award_id == award_id), None)
            if award is not None and not display.win_light_confirmed(award.seat):
                # 631c.6(c)(5): the dealer verifies the win light before the award is paid.
                raise ControlError(f"the win light for seat {award.seat} is not confirmed lit by "
                                   "the display; check the display before validating")
        try:
            return self.table.cmd_validate_award(award_id, args["_supervisor"])
        except CommandRefused as exc:
            raise ControlError(str(exc)) from exc

    async def _light_test(self, args: Mapping[str, Any]) -> Any:
        """Each seat's LED, then its win light, in turn, slowly enough to watch; then all at
        once. Only outside a round, so no player reads a test pattern as a win."""
        from drivers.protocols import LedState

        if self.table.state not in LIGHT_TEST_STATES:
            # Name the states that allow it: "no round in play" is true of the cut too, where
            # the test is still refused (the dealer is preparing the shoe at the table).
            allowed = ", ".join(state.value for state in LIGHT_TEST_STATES)
            raise ControlError(f"the light test runs only when the table is {allowed}; the "
                               f"table is {self.table.state.value}: run it at the end of the "
                               "shoe or with the table closed")
        from drivers.protocols import LinkState

        seats, display = self.seats, self.display
        if seats is None and display is None:
            raise ControlError("this table has no seat LEDs or display configured")
        unlit = ""  # why the seat LEDs could not be driven: then the test cannot pass
        if seats is not None and (health := seats.health()).link is not LinkState.UP:
            unlit = f"seat LEDs not driven: GPIO not available: {health.last_error or 'stopped'}"
            if display is None:
                raise ControlError(f"{unlit}; fix the seats' wiring or gpio.pin_factory and "
                                   "restart the table service (docs/faults.md gpio_unavailable)")
            seats = None
        numbers = [w.seat for w in self.config.gpio.seats]
        before = {n: seats.led(n) for n in numbers} if seats is not None else {}
        try:
            for seat in numbers:
                if seats is not None:
                    seats.set_led(seat, LedState.WON)
                if display is not None:
                    display.win_light(seat, True)
                await asyncio.sleep(LIGHT_TEST_STEP_S)
                if display is not None:
                    display.win_light(seat, False)
                if seats is not None:
                    seats.set_led(seat, LedState.OFF)
            for seat in numbers:
                if seats is not None:
                    seats.set_led(seat, LedState.ACCEPTED)
            await asyncio.sleep(LIGHT_TEST_ALL_ON_S)
        finally:
            for seat, state in before.items():
                if seats is not None:
                    seats.set_led(seat, state)
        with self.store.transaction():
            self.store.append_event("light_test", {"seats": numbers,
                                                   "display": display is not None})
        if unlit:
            return {"device": "lights", "passed": False,
                    "detail": f"{unlit}; {len(numbers)} win lights chased one by one"}
        return {"device": "lights", "passed": True,
                "detail": f"{len(numbers)} seat LEDs chased one by one, then all lit"
                          + ("; win lights with them" if display is not None else "")}

    async def _self_test(self, args: Mapping[str, Any]) -> Any:
        device = self.devices.get(args["device"])
        if device is None:
            raise ControlError(f"no device {args['device']!r}; allowed: "
                               f"{', '.join(self.devices)}", "bad_request")
        result = await device.self_test()
        return {"device": result.device, "passed": result.passed, "detail": result.detail}

    async def _events(self, args: Mapping[str, Any]) -> Any:
        """Up to 100,000 entries: read and made JSON-ready in a worker thread. A kind or a
        device that no entry can have is refused, naming the ones there are: a typo must
        not read as "nothing happened"."""
        for key, known in (("kind", sorted(KINDS)), ("device", sorted(self.devices))):
            value = args[key]
            if value is not None and value not in known:
                near = difflib.get_close_matches(value, known, n=1)
                raise ControlError(f"no event {key} {shown(value)}"
                                   + (f" (did you mean {near[0]}?)" if near else "")
                                   + f"; allowed: {', '.join(known)}", "bad_request")
        query = dict(args)
        query["since"] = float(args["since"]) if args["since"] is not None else None
        return await self.store_work.read(
            lambda store: [event_json(e) for e in store.events(**query)])

    def status(self) -> dict[str, Any]:
        t = self.table
        return {
            "table_id": t.table_id, "state": t.state.value, "seats": t.seats,
            "version": __version__,
            "batches": {"in_play": _colour(t.shoe.back), "shuffled": _colour(t.batch_shuffled),
                        "in_shuffler": _colour(t.batch_in_shuffler)},
            "game": self.config.submission.game.family,
            "variant": self.config.submission.game.variant,
            # Absolute: a technician's tablectl runs from another directory than the daemon.
            "config": str(Path(self.config.source).absolute()),
            "shoe": {"shoe_no": t.shoe.shoe_no, "cards_drawn": t.shoe.cards_drawn,
                     "cards_left": max(0, self.config.submission.game.decks * 52
                                       - t.shoe.cards_drawn) if t.shoe.shoe_no else None,
                     "cover_card_seen": t.shoe.cover_card_seen,
                     "cover_card_misplaced": t.shoe.cover_card_misplaced or None,
                     "last_hand": t.shoe.last_hand_announced,
                     "rounds": t.shoe.rounds_in_shoe},
            "round": {"round_id": t.round_id, "round_no": t.round_no,
                      "wagers": [wager_json(w) for w in t.wagers],
                      "next": t.coup.next_card().name.lower() if t.coup is not None else None},
            "fault": t.fault, "faults_holding": [f.holding() for f in t.faults.held],
            "out_of_order": t.out_of_order_reason or None,
            "history_check": self.history_check,
            "software": self.software,
            "witness": self.witness.status() if self.witness is not None else
            {"link": "unwitnessed", "detail": "no [witness] in the configuration"
             if self.config.witness is None else "the store failed its check"},
            "uptime_s": round(time.monotonic() - self.started_monotonic, 1),
        }

    def device_report(self) -> list[dict[str, Any]]:
        report = []
        for device in self.devices.values():
            h = device.health()
            report.append({
                "device": h.device, "kind": h.kind, "link": h.link.value, "port": h.port,
                "serial_number": h.serial_number, "firmware_version": h.firmware_version,
                "protocol_version": h.protocol_version,
                "uptime_s": round(time.monotonic() - h.connected_since_monotonic, 1)
                if h.connected_since_monotonic else None,
                "counters": dict(h.counters), "last_error": h.last_error,
            })
        return report


BACK_COLOURS = tuple(colour.name.lower() for colour in BackColour)
_SEAT = whole(1, 14, required=True)
_RELEASE = text("a release tag, e.g. v0.2.0", max_chars=64, required=True)
COMMAND_ARGS: Mapping[str, Mapping[str, Arg]] = {
    "rounds": {"limit": whole(1, 100_000, default=10), "after_round_id": whole(0, 2**63 - 1)},
    "events": {
        "after_seq": whole(0, 2**62, default=0), "limit": whole(1, 100_000, default=50),
        "kind": text("an event kind, e.g. card, device_fault, prompt", max_chars=64),
        "device": text("a device name: shoe, shuffler, seats, display", max_chars=64),
        "severity": choice(SEVERITIES),
        "since": number(0, 2**40, "seconds since the epoch (a number >= 0)"),
        "oldest_first": FLAG,
    },
    "verify_chain": {"full": FLAG},
    "shuffle": {"back": choice(BACK_COLOURS)},
    "shoe_loaded": {"back": choice(BACK_COLOURS)},
    "place_wager": {"seat": _SEAT,
                    "wager": text("a wager the rules offer, e.g. banker, player, tie",
                                  required=True),
                    "amount_cents": whole(1, 10**9, required=True)},
    "new_dealer": {"dealer": text("the dealer's name", default="")},
    "self_test": {"device": text("a configured device (tablectl devices)", max_chars=64,
                                 required=True)},
    "seat_leaves": {"seat": _SEAT},
    "adjust_meter": {"progressive": text("a progressive's name (tablectl meters)", required=True),
                     "level": text("a level of that progressive (tablectl meters)",
                                   required=True),
                     "delta_cents": whole(-10**12, 10**12, required=True, nonzero=True),
                     "reason": text("why the meter is corrected", required=True)},
    "validate_award": {"award_id": whole(1, 2**62, required=True)},
    "software_change": {"action": choice(("activate", "rollback"), required=True),
                        "release": _RELEASE},
    "software_record": {"event": choice(("staged", "automatic_rollback"), required=True),
                        "release": _RELEASE,
                        "from_release": text("the release that did not start", max_chars=64,
                                             default="")},
}
"""The arguments each control command takes (controller/control_args.py); a command not
named here takes none. Checked before any handler runs."""


def _device_as(devices: Mapping[str, Device], name: str, protocol: type) -> Device | None:
    """The configured device `name` as the Protocol the daemon drives it through, or None.

    A device object lacking one of the Protocol's methods is a wiring error: it is
    named with what is missing instead of failing later at the first call.
    """
    device = devices.get(name)
    if device is None:
        return None
    if not isinstance(device, protocol):
        missing = sorted(m for m in dir(protocol)
                         if not m.startswith("_") and not hasattr(device, m))
        raise TypeError(f"device {name!r} ({type(device).__name__}) lacks "
                        f"{', '.join(missing)}: it must implement {protocol.__name__} "
                        "(drivers/protocols.py)")
    return device


# Between shoes, or nothing to play: a release may be activated or rolled back.
SOFTWARE_CHANGE_STATES = (TableState.CLOSED, TableState.END_OF_SHOE, TableState.OUT_OF_ORDER)
# In the order the refusal names them.
LIGHT_TEST_STATES = (TableState.CLOSED, TableState.END_OF_SHOE, TableState.DEVICE_FAULT,
                     TableState.OUT_OF_ORDER)


def _colour(back: Any) -> str | None:
    if back is None:
        return None
    return BackColour(back).name.lower()


def _back_colour(value: str | None) -> BackColour | None:
    return BackColour[value.upper()] if value is not None else None


def secure_store_files(path: str) -> None:
    """The store holds the armed Must-Hit-By Mystery trigger: only the daemon's user may
    read it (the trigger's commitment is in the event log, which anyone may read)."""
    if path == ":memory:":
        return
    for name in (path, f"{path}-wal", f"{path}-shm"):
        try:
            os.chmod(name, 0o600)
        except FileNotFoundError:
            pass


def _open_store(config: TableConfig) -> tuple[Store, IntegrityError | None]:
    """The table's store, checked; or, if it fails, an empty in-memory stand-in (so the
    daemon can report the failure and refuse play) and the failure. The file on disk is
    then never written: it is the evidence."""
    from controller.critical_store import open_store

    try:
        return open_store(config.store_path, config.critical_dir,
                          flush_delay_s=config.store_flush_delay_ms / 1000,
                          chain_limit=BOOT_CHAIN_LIMIT), None
    except IntegrityError as exc:
        return Store(":memory:"), exc


def _integrity_answer(exc: IntegrityError) -> ControlError:
    """A failed check is an answer, not a bug: no traceback in the log. The message keeps
    the form tablectl and docs/control-api.md know ("IntegrityError: check: detail")."""
    return ControlError(f"IntegrityError: {exc.check}: {exc.detail}", "internal")


def describe(exc: IntegrityError) -> str:
    from controller.critical_store import describe as text

    return text(exc)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tabled", description="Baccarat table controller daemon")
    parser.add_argument("--version", action="version", version=f"tabled {__version__}")
    parser.add_argument("--config", required=True, help="the table's configuration (TOML)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a configuration value, e.g. shoe.url=/dev/ttyUSB1")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning"])
    once = parser.add_mutually_exclusive_group()
    once.add_argument("--init-store", action="store_true",
                      help="initialise a new table's critical memory (key, store, anchor) and "
                           "exit; run once, as the daemon's user (docs/deployment.md)")
    once.add_argument("--clear-store", action="store_true",
                      help="a supervisor clears critical memory: the old store is kept as "
                           "evidence, a new one records the last meter values; then exit")
    once.add_argument("--register-witness", action="store_true",
                      help="register this table's key with the witness [witness] names (a "
                           "table initialised before it had one); a table the witness knows "
                           "needs --supervisor, --reason and the PIN; then exit")
    parser.add_argument("--supervisor", help="with --clear-store: the supervisor's name")
    parser.add_argument("--reason", default="", help="with --clear-store: why")
    parser.add_argument("--pin-stdin", action="store_true",
                        help="with --clear-store: read the PIN from standard input")
    args = parser.parse_args(argv)
    configure_logging(level=args.log_level)
    try:
        config = load_config(args.config, args.set)
    except ConfigError as exc:
        print(str(exc), file=sys.stderr)
        log.error("bad_configuration", problems=exc.problems, source=exc.source)
        return EXIT_CONFIG
    if args.init_store or args.clear_store or args.register_witness:
        from controller.critical_store import run_once

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
