"""A simulated table around a real daemon process: the dealer, the players and the devices.

The daemon runs as its own process (`python -m controller.daemon`) exactly as
systemd would start it; only `--set` overrides tell it where the simulated
devices are: the shoe's pseudo-terminal, a GPIO bridge socket for the mock pin
factory, a scratch store and control socket. The simulated dealer does what the
daemon's prompts say and nothing else: it is the test of those prompts.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import resource
import signal
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from controller.control import ControlClient, ControlError
from controller.events import decode
from controller.events.records import (
    DeviceFaulted,
    RoundSettled,
    RoundVoid,
    ShoeComplete,
    ShuffleComplete,
)
from cards import BackColour
from hil.event_window import EventWindow

DAEMON_READY_TIMEOUT_S = 30.0  # cold start on a Pi 4 with the venv on an SD card is ~3 s
PROMPT_TIMEOUT_S = 30.0  # no prompt for this long means the daemon is stuck: fail loudly
RESTART_LOOKBACK = 1_000  # entries a restart may have lost: far more than wait in memory
POLL_INTERVAL_S = 0.02  # short next to a daemon start (~1 s); cheap for a local socket
T = TypeVar("T")
FIRST_SLOT = "player_first"
SLOTS_DEALT_AHEAD = ("banker_first", "player_second", "banker_second")
"""631a.9(c)'s first four cards, dealt in this order whatever they are (only the third cards
depend on the totals); with deal_ahead the dealer draws them at the first card's prompt."""


START_CRASHES_ALLOWED = 20
"""Crash points that may fire in the first start before it counts as the test's failure
(each start draws anew, controller/crash_points.py: a campaign's rate kills a few)."""


@dataclass(frozen=True)
class PlayerPlan:
    """Which seats play and how; drawn from a seeded generator so a run is reproducible."""

    seats: tuple[int, ...] = (1, 2, 4, 6, 8, 10)
    wagers: tuple[str, ...] = ("banker", "player", "tie")
    weights: tuple[int, ...] = (46, 46, 8)
    amounts_cents: tuple[int, ...] = (500, 1000, 2500, 5000, 10000)
    sit_out: float = 0.15  # chance that a seat skips a round
    progressive: float = 0.0  # chance that a playing seat also puts a chip on its sensor
    progressive_without_base: tuple[int, ...] = ()  # seats that touch the sensor, no wager
    # Seconds the players take over their bets: 0 in tests; a few for a person watching
    # the scoreboard and the dealer's screen (`python -m hil.run --pace`).
    betting_s: float = 0.0

    def wagers_for_round(self, rng: random.Random) -> list[tuple[int, str, int]]:
        placed = []
        for seat in self.seats:
            if rng.random() < self.sit_out:
                continue
            wager = rng.choices(self.wagers, self.weights)[0]
            placed.append((seat, wager, rng.choice(self.amounts_cents)))
        return placed


@dataclass
class PowerCuts:
    """When to cut the daemon's power: after a dealer action, with probability `rate`,
    following a random delay up to `max_delay_s` (so the kill lands mid-processing)."""

    rng: random.Random
    rate: float
    max_delay_s: float = 0.02
    limit: int | None = None
    done: int = 0
    checks: list[Callable[[TableHarness], Any]] = field(default_factory=list)

    def now(self) -> bool:
        if self.limit is not None and self.done >= self.limit:
            return False
        if self.rng.random() < self.rate:
            self.done += 1
            return True
        return False

    def delay(self) -> float:
        return self.rng.uniform(0, self.max_delay_s)

    async def after_restart(self, harness: TableHarness) -> None:
        for check in self.checks:
            result = check(harness)
            if asyncio.iscoroutine(result):
                await result


@dataclass
class HarnessResult:
    shoes_completed: int = 0
    rounds: list[dict[str, Any]] = field(default_factory=list)  # round_settled payloads
    # Every event the harness saw, numbered from the run's first; a long soak keeps only
    # the newest (TableHarness's keep_events).
    events: EventWindow = field(default_factory=EventWindow)
    cards_drawn_by_shoe: list[int] = field(default_factory=list)
    wagers_placed: list[tuple[int, int, str, int]] = field(default_factory=list)  # round_no,...
    stacks: list[tuple[list[Any], int]] = field(default_factory=list)  # (cards, cover_card_at)
    # Per locked round: the seats whose sensor the harness pressed before the lock-out
    # and that held a base wager: what the daemon must accept, no more, no less.
    progressive_expected: list[frozenset[int]] = field(default_factory=list)
    sensor_presses_after_lock: int = 0
    void_rounds: list[dict[str, Any]] = field(default_factory=list)
    power_cuts: int = 0
    # The daemon killed itself at a crash point inside a commit (controller/crash_points.py).
    crash_kills: int = 0
    # Wagers whose place_wager call the daemon died in: committed or not, never acknowledged.
    wagers_in_doubt: list[tuple[int, int, str, int]] = field(default_factory=list)
    # Entries the harness saw that a restarted daemon's log no longer held (a suffix: those
    # that waited in memory, docs/rulings.md C31, or a power cut's unflushed ones, C29).
    lost: list[dict[str, Any]] = field(default_factory=list)


def normal_scheduling() -> None:
    """In a child process before it runs (`preexec_fn`): the normal scheduling policy
    (SCHED_OTHER), whatever its parent runs at. Any process may move itself between
    SCHED_BATCH and SCHED_OTHER at its own nice value, so this needs no privilege. Where
    the system has no such policies (not Linux) every process already runs at its one."""
    if hasattr(os, "sched_setscheduler"):
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))


class TableHarness:
    """Start the simulated devices and the daemon; play shoes as the dealer and players."""

    def __init__(self, config: Path, workdir: Path, *, seed: int = 1,
                 players: PlayerPlan | None = None, on_line: Callable[[str], None] | None = None,
                 daemon_log: Path | None = None, extra_overrides: Sequence[str] = (),
                 gpio_claimed: bool = True, open_files: int | None = None,
                 daemon_normal_scheduling: bool = False,
                 tabled: Sequence[str] | None = None,
                 wait_for_history_check: bool = True, card_commit: bool = False,
                 extra_env: Mapping[str, str] | None = None, deal_ahead: bool = False,
                 on_event: Callable[[dict[str, Any]], None] | None = None,
                 keep_events: int | None = None) -> None:
        """`wait_for_history_check`: the daemon counts as started once the start's check of
        the whole history is over, not merely when its socket answers (a benchmark of
        start-to-ready says False). `card_commit`: the shoe is a protocol 1.2 shoe with the
        card commit acknowledgement (docs/protocol.md 6.6); otherwise a 1.1 shoe. `extra_env`:
        the daemon's environment besides this process's (a test seam's variable).
        `deal_ahead`: at a round's first "deal" prompt the dealer draws the four cards every
        round begins with (player, banker, player, banker) in one motion, as a dealer at a
        real table does, and waits for the prompt again only for a third card, which the
        daemon decides; False (the tests): the dealer waits for each card's prompt. The
        cards, and so every round, are the same either way; a benchmark of the shoe's
        throughput says True (bench/bench_daemon.py). `on_event`: called with every event the
        harness notes, as it notes it (a benchmark's clock). `keep_events`: how many of the
        newest events `result.events` keeps (None: all; a long soak's memory is otherwise
        its events)."""
        self.extra_env = dict(extra_env or {})
        self.deal_ahead = deal_ahead
        self.on_event = on_event
        self._dealt_ahead: set[str] = set()  # slots drawn before their prompt (deal_ahead)
        self._exit_watch: tuple[asyncio.subprocess.Process, asyncio.Future[int]] | None = None
        self.card_commit = card_commit
        from controller.config import load_config

        self.wait_for_history_check = wait_for_history_check
        self.config_path = Path(config)
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.rng = random.Random(seed)
        self.players = players or PlayerPlan()
        self.on_line = on_line or (lambda line: None)
        self.socket = str(self.workdir / "control.sock")
        self.gpio_socket = str(self.workdir / "gpio.sock")
        # The simulated shuffler lives in the daemon's process; faults reach it here.
        self.shuffler_socket = str(self.workdir / "shuffler.sock")
        self.store_path = str(self.workdir / "table.sqlite")
        self.daemon_log = daemon_log or self.workdir / "tabled.log"
        self._log_at_start = 0  # the log's length when the running daemon was started
        self.extra_overrides = list(extra_overrides)
        # How the daemon is started: this interpreter's controller.daemon, or an installed
        # release's `tabled` (tests/test_release.py's upgrades).
        self.tabled = list(tabled or (sys.executable, "-m", "controller.daemon"))
        # False: the daemon is started with pins it cannot claim (gpio_unavailable, a test
        # of that fault's exit): there is no pin bridge to connect to and the seats never
        # come up, so neither is waited for. Set it again before restart() once fixed.
        self.gpio_claimed = gpio_claimed
        # The daemon's soft open-files limit (RLIMIT_NOFILE), as `ulimit -n` or the unit's
        # LimitNOFILE= would set it; None: inherited from this process.
        self.open_files = open_files
        # True: the daemon starts at the normal scheduling policy even when this process
        # runs at another (bench/bench_latency.py runs its simulators at SCHED_BATCH).
        self.daemon_normal_scheduling = daemon_normal_scheduling
        self.table_config = load_config(self.config_path, self._overrides("/dev/null"))
        self.decks = self.table_config.submission.game.decks
        self.back = BackColour.RED
        self.shoe: Any = None
        self.pins: Any = None
        self.daemon: asyncio.subprocess.Process | None = None
        self.client: ControlClient | None = None
        self.result = HarnessResult(events=EventWindow(keep_events))
        self.last_seq = 0  # the last committed event the harness has seen
        # After a restart the harness acts on the restored state (_resume), never again on
        # a prompt committed before the cut: kept across play() calls, or the next call
        # would act on such a prompt a second time (a second shuffle, refused: issue 13).
        self._acted_through = 0
        self._shoes_target = 0
        # play(until=...) paused on a prompt it noted and did not act on: the daemon waits
        # for the dealer, so the next play() must first resync (it does, by itself).
        self._paused_on_prompt = False

    def _overrides(self, shoe_port: str) -> list[str]:
        return [f"shoe.url={shoe_port}", f"store.path={self.store_path}",
                f"control.socket={self.socket}",
                f"gpio.factory_options.bridge_socket={self.gpio_socket}",
                *self.extra_overrides]

    # --- lifecycle ---------------------------------------------------------------

    async def __aenter__(self) -> TableHarness:
        from hil.shoe_sim import SimulatedShoe

        self.shoe = SimulatedShoe([], self.back, 0, card_commit=self.card_commit)
        await self.shoe.start()
        try:
            for attempt in range(START_CRASHES_ALLOWED + 1):
                try:
                    await self.start_daemon_ready()
                    break
                except (ConnectionError, OSError, RuntimeError):
                    # A crash point fires in the first start as in any other (a power cut may
                    # come while a table starts): started again, as `_restart` does.
                    if attempt == START_CRASHES_ALLOWED or not await self._died_by_itself():
                        raise
                    await self.stop_daemon(signal.SIGKILL)  # already dead: just reaped
        except BaseException:
            await self.__aexit__(None, None, None)  # never leave a daemon or a pty behind
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop_daemon()
        if self.shoe is not None:
            await self.shoe.stop()

    def init_store(self) -> None:
        """A new table's critical memory is initialised once, explicitly (tabled --init-store);
        restarts and power cuts find it in place."""
        from controller.memory.lifecycle import initialise, is_initialised

        if not is_initialised(self.store_path, self.table_config.critical_dir):
            store = initialise(self.table_config, operator="hil")
            where = store.paths.directory if store.paths else ""
            store.close()
            self.on_line(f"Critical memory initialised (as tabled --init-store does): store "
                         f"{self.store_path}, key and anchor in {where}")

    def tabled_command(self, *options: str) -> list[str]:
        """`tabled` with this table's configuration, as systemd (or a supervisor running
        `--clear-store` beside the unit) would start it, and `options` after it."""
        command = [*self.tabled, "--config", str(self.config_path)]
        for override in self._overrides(self.shoe.port):
            command += ["--set", override]
        return [*command, *options]

    async def start_daemon(self, *, initialise: bool = True) -> None:
        """Start `tabled`; `initialise`: first make a new table's critical memory if it has
        none (False: as systemd starts it, which never does: the table is then out of
        order, not initialised)."""
        if initialise:
            self.init_store()
        log_file = open(self.daemon_log, "ab")  # noqa: SIM115 - handed to the child
        self._log_at_start = log_file.tell()  # where this daemon's own lines begin
        self.daemon = await asyncio.create_subprocess_exec(
            *self.tabled_command(), stdout=log_file, stderr=asyncio.subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1",
                 "TABLE_SIM_SHUFFLER_SOCKET": self.shuffler_socket, **self.extra_env},
            preexec_fn=self._in_daemon_child
            if self.open_files is not None or self.daemon_normal_scheduling else None)
        log_file.close()
        self.client = await self._connect()
        self.pins = await self._connect_pins() if self.gpio_claimed else None

    def _in_daemon_child(self) -> None:
        """In the daemon's child process, before it runs: its soft open-files limit and its
        scheduling policy, as set on this harness."""
        if self.open_files is not None:
            _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            resource.setrlimit(resource.RLIMIT_NOFILE, (self.open_files, hard))
        if self.daemon_normal_scheduling:
            normal_scheduling()

    async def start_daemon_ready(self) -> None:
        """Start the daemon and wait until its devices are up: a card drawn before the
        shoe's link is up would be lost."""
        await self.start_daemon()
        await self._wait_for_devices()

    def shuffler(self, request: str) -> str:
        """One fault-injection request to the simulated shuffler (hil/usb_shuffler.py's
        ShufflerControlServer line protocol), e.g. ``"JAM 20"``; returns its reply."""
        from hil.usb_shuffler import ShufflerControlClient

        client = ShufflerControlClient(self.shuffler_socket)
        try:
            return client.request(request)
        finally:
            client.close()

    async def _connect_pins(self) -> Any:
        """The daemon's pin factory opens the bridge when its GPIO driver starts."""
        from hil.mock_pins import PinBridgeClient, PinBridgeError

        async def attempt() -> Any:
            try:
                return PinBridgeClient(self.gpio_socket)
            except PinBridgeError:
                return None

        return await poll_until(attempt, DAEMON_READY_TIMEOUT_S,
                                 lambda: f"no pin bridge at {self.gpio_socket}")

    async def _connect(self) -> ControlClient:
        async def attempt() -> ControlClient | None:
            assert self.daemon is not None
            if self.daemon.returncode is not None:
                raise RuntimeError(f"tabled exited with {self.daemon.returncode}; see "
                                   f"{self.daemon_log}:\n{_tail(self.daemon_log)}")
            try:
                client = await ControlClient(self.socket).connect()
                status = await client.call("status")
            except (FileNotFoundError, ConnectionError, OSError):
                return None
            # Ready once the start's check of the whole history is over (passed, or failed
            # and the table out of order): before it, device events wait in the daemon.
            if self.wait_for_history_check and status.get("history_check", {}).get(
                    "state") in ("not started", "running"):
                await client.close()
                return None
            return client

        return await poll_until(attempt, DAEMON_READY_TIMEOUT_S, lambda: (
            f"tabled did not open {self.socket}:\n{_tail(self.daemon_log)}"))

    async def stop_daemon(self, sig: int = signal.SIGTERM) -> int | None:
        if self.client is not None:
            await self.client.close()
            self.client = None
        if self.daemon is None or self.daemon.returncode is not None:
            return self.daemon.returncode if self.daemon else None
        self.daemon.send_signal(sig)
        try:
            return await asyncio.wait_for(self.daemon.wait(), 20)
        except TimeoutError:
            self.daemon.kill()
            return await self.daemon.wait()

    # --- the dealer ------------------------------------------------------------------

    async def call(self, cmd: str, **args: Any) -> Any:
        assert self.client is not None
        return await self.client.call(cmd, **args)

    async def skip_history(self) -> None:
        """A table a previous run left in this workdir: its events are history, not prompts
        to act on again (play() would otherwise replay its rounds' prompts)."""
        head = await self.call("events", limit=1)
        self.last_seq = max(self.last_seq, int(head[-1]["seq"]) if head else 0)

    async def follow_a_new_log(self) -> None:
        """A supervisor cleared the store (`tabled --clear-store`): the new store's log starts
        again from entry 1. What the harness saw of the old one is evidence, not a position
        in this one; the new log's entries so far are history."""
        self.last_seq = self._acted_through = 0
        await self.skip_history()

    async def play(self, shoes: int = 1, *, power_cuts: PowerCuts | None = None,
                   until: Callable[[HarnessResult], bool] | None = None,
                   resume: bool = False) -> HarnessResult:
        """Deal `shoes` complete shoes, following the daemon's prompts.

        With `power_cuts`, the daemon is killed with SIGKILL at random instants right
        after the dealer acts (while the daemon is processing that action), restarted,
        and the dealer resumes from the state the daemon restored. With `until`, play
        pauses as soon as it holds, on the event it holds on, noted and not acted on (a test
        then injects a fault and calls `resync()`); when that event was a prompt, the next
        call resyncs first by itself, since the daemon is waiting for the dealer's action
        and no later prompt would come to act on.
        With `resume`, the dealer first does what the restored state needs (after
        skip_history(), for a table a previous run left between shoes).
        """
        from hil.mock_pins import PinBridgeError  # the GPIO bridge lives in the daemon

        assert self.client is not None
        if self._paused_on_prompt:
            await self.resync()
        target = self.result.shoes_completed + shoes
        self._shoes_target = target
        if (await self.call("status"))["state"] == "closed":
            await self.call("open")
        stream = await ControlClient(self.socket).connect()
        events = stream.subscribe(self.last_seq)
        act_after = max(self.last_seq, self._acted_through)
        if resume:
            await self._resume()
        try:
            while self.result.shoes_completed < target:
                died = acted = False
                try:
                    # asyncio.timeout, not wait_for: no task and no second wake-up per event
                    async with asyncio.timeout(PROMPT_TIMEOUT_S):
                        event = await anext(events)
                    self._note(event)
                    if until is not None and until(self.result):
                        self._paused_on_prompt = (event["kind"] == "prompt"
                                                  and event["seq"] > act_after)
                        break
                    if event["seq"] <= act_after or self.result.shoes_completed >= target:
                        continue  # replayed after a restart: noted, not acted on again
                    if event["kind"] == "prompt":  # nothing else is acted on (_act)
                        # A card drawn ahead of its prompt needs no action (nor a task of
                        # its own to watch the daemon's exit: three of a round's prompts).
                        acted = self._drawn_ahead(event["payload"]) or \
                            await self._while_alive(self._act(event))
                except (StopAsyncIteration, ConnectionError, OSError, PinBridgeError):
                    # A chip pressed onto a sensor the instant a crash point killed the
                    # daemon finds the bridge closed: the same death as a dropped stream.
                    died = await self._died_by_itself()
                    if not died:
                        raise
                cut = not died and acted and power_cuts is not None and power_cuts.now()
                if not (died or cut):
                    continue
                if cut:
                    assert power_cuts is not None
                    await asyncio.sleep(power_cuts.delay())
                await stream.close()
                stream = await self._restart(killed=cut, power_cuts=power_cuts)
                events = stream.subscribe(self.last_seq)  # catch up on what we missed
                act_after = self._acted_through
        finally:
            await stream.close()
        return self.result

    def _daemon_exit(self) -> asyncio.Future[int]:
        """The running daemon's exit, one waiter shared by every action. A cancelled
        `Process.wait()` leaves its future with the process until the process exits: one
        per action was 15,000 futures every ten shoes of a soak."""
        assert self.daemon is not None
        if self._exit_watch is None or self._exit_watch[0] is not self.daemon:
            self._exit_watch = (self.daemon, asyncio.ensure_future(self.daemon.wait()))
        return self._exit_watch[1]

    async def _while_alive(self, action: Awaitable[T]) -> T:
        """Run a dealer's action unless the daemon dies first: a card drawn waits for the
        host's acknowledgement, which a dead daemon never sends (the simulated shoe keeps
        the report and sends it again to the restarted daemon)."""
        act = asyncio.ensure_future(action)
        await asyncio.wait({act, self._daemon_exit()}, return_when=asyncio.FIRST_COMPLETED)
        if act.done():
            return act.result()
        act.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await act
        raise ConnectionError("the daemon died while the dealer was acting")

    async def _died_by_itself(self) -> bool:
        """The daemon went away without the harness killing it: a crash point fired (it
        writes crash_points.MARK to its log just before). A daemon that died otherwise (a
        traceback, an exit status) is a failure of the test, raised with its log's tail, not
        a kill to restart after."""
        from controller.crash_points import MARK

        if self.daemon is None:
            return False
        try:
            await asyncio.wait_for(self.daemon.wait(), DAEMON_READY_TIMEOUT_S)
        except TimeoutError:
            return False
        with open(self.daemon_log, "rb") as log:
            log.seek(self._log_at_start)
            marked = MARK in log.read()
        if self.daemon.returncode != -signal.SIGKILL or not marked:
            raise RuntimeError(f"tabled exited with {self.daemon.returncode}, not at a crash "
                               f"point; see {self.daemon_log}:\n{_tail(self.daemon_log)}")
        self.result.crash_kills += 1
        return True

    async def _restart(self, *, killed: bool, power_cuts: PowerCuts | None) -> ControlClient:
        """Restart after a power cut (``killed``: the harness's SIGKILL) or a crash point,
        run the checks, and resume; a crash point firing meanwhile restarts it again."""
        while True:
            try:
                if killed:
                    # Counted once: a crash point that kills the restarted daemon before it
                    # is ready brings us back here, and that restart is not another cut.
                    killed = False
                    await self.power_cut()
                else:
                    await self.stop_daemon(signal.SIGKILL)  # already dead: just reaped
                    await self.start_daemon_ready()
                self.last_seq = await self._last_seq_still_logged()
                if power_cuts is not None:
                    await power_cuts.after_restart(self)
                latest = await self.call("events", limit=1)
                self._acted_through = (latest or [{"seq": 0}])[-1]["seq"]
                await self._resume()
                return await ControlClient(self.socket).connect()
            except (ConnectionError, OSError, RuntimeError):
                if not await self._died_by_itself():
                    raise

    async def _last_seq_still_logged(self) -> int:
        """The last entry seen that the restarted daemon's log still holds, the same entry
        (its MAC). A daemon killed loses the entries that waited in memory (docs/rulings.md
        C31), and a power cut those not yet flushed (C7, C29): a suffix of what it gave out,
        whose numbers the log's next entries reuse (the restart's own among them)."""
        start = max(0, self.last_seq - RESTART_LOOKBACK)
        seen = {e["seq"]: e for e in self.result.events if e["seq"] > start}
        last = start
        for entry in await self.call("events", after_seq=start, limit=RESTART_LOOKBACK,
                                     oldest_first=True):
            if entry["seq"] > self.last_seq or seen.get(entry["seq"], entry)["hash"] != \
                    entry["hash"]:
                break
            last = entry["seq"]
        self.result.lost += [seen[seq] for seq in sorted(seen) if last < seq <= self.last_seq]
        return last

    async def resync(self) -> None:
        """After a test intervened: skip the prompts issued meanwhile and do what the
        table's present state needs."""
        self._paused_on_prompt = False
        latest = await self.call("events", limit=1)
        for event in await self.call("events", after_seq=self.last_seq, limit=100_000):
            self._note(event)
        self.last_seq = max(self.last_seq, latest[-1]["seq"] if latest else 0)
        await self._resume()

    async def wait_for_state(self, *states: str, timeout: float = PROMPT_TIMEOUT_S
                             ) -> dict[str, Any]:
        """Poll the daemon's status until the table is in one of `states`."""
        last: dict[str, Any] = {}

        async def attempt() -> dict[str, Any] | None:
            last.update(await self.call("status"))
            return dict(last) if last["state"] in states else None

        return await poll_until(attempt, timeout, lambda: (
            f"table stayed {last.get('state')}, expected {states}"))

    async def restart(self, while_stopped: Callable[[], None] = lambda: None) -> None:
        """The technician restarts the table service (systemctl restart: SIGTERM, then a
        new daemon on the same store), doing `while_stopped` in between: a repair that
        needs the daemon down (a store restored from its backup, a configuration fixed)."""
        code = await self.stop_daemon()
        if code != 0:
            raise RuntimeError(f"tabled exited with {code} on SIGTERM:\n{_tail(self.daemon_log)}")
        while_stopped()
        await self.start_daemon_ready()

    async def wait_for_events(self, kind: str, count: int, *, after_seq: int,
                              timeout: float = PROMPT_TIMEOUT_S) -> list[dict[str, Any]]:
        """Poll the event log until `count` events of `kind` follow `after_seq` (for what a
        test makes happen outside the dealer's prompts: a chip on a sensor, say)."""
        found: list[dict[str, Any]] = []

        async def attempt() -> list[dict[str, Any]] | None:
            found[:] = await self.call("events", kind=kind, after_seq=after_seq)
            return list(found) if len(found) >= count else None

        return await poll_until(attempt, timeout, lambda: (
            f"{len(found)} {kind} events after {after_seq}, expected {count}: {found}"))

    async def power_cut(self) -> None:
        """SIGKILL the daemon (no chance to clean up) and start it again on the same store."""
        await self.stop_daemon(signal.SIGKILL)
        self.result.power_cuts += 1
        await self.start_daemon_ready()

    async def power_cut_while(self, while_down: Callable[[], Awaitable[Any]]) -> None:
        """A power cut to the daemon alone, with ``while_down`` done before it is back: the
        dealer draws on while the Pi restarts, as at a table. Play then goes on from the
        restored state (the next ``play`` resyncs when it was paused on a prompt)."""
        await self.stop_daemon(signal.SIGKILL)
        while self.shoe.host_connected:  # the shoe's link notices the silence (5.6)
            await asyncio.sleep(0.01)
        self.result.power_cuts += 1
        await while_down()
        await self.start_daemon_ready()
        self.last_seq = await self._last_seq_still_logged()

    async def cover_cards_recorded(self) -> list[int]:
        """The index of every cover card in the table's log, oldest first: what a test holds
        against the simulated shoe's `covers_drawn`."""
        return [e["payload"]["index"] for e in await self.call(
            "events", after_seq=0, kind="cover_card", limit=100_000, oldest_first=True)]

    async def _wait_for_devices(self) -> None:
        links: dict[str, str] = {}

        async def attempt() -> bool | None:
            links.update({d["device"]: d["link"] for d in await self.call("devices")
                          if self.gpio_claimed or d["device"] != "seats"})
            return True if all(state == "up" for state in links.values()) else None

        await poll_until(attempt, DAEMON_READY_TIMEOUT_S, lambda: f"devices not up: {links}")

    def _note(self, event: dict[str, Any]) -> None:
        """Bookkeeping for every committed event, including ones replayed after a restart."""
        self.last_seq = max(self.last_seq, event["seq"])
        self.result.events.append(event)
        if self.on_event is not None:
            self.on_event(event)
        payload = event["payload"]
        # Every entry the daemon commits must be its kind's typed record (controller/events):
        # one that is not fails the run here (EventDecodeError names what does not fit).
        record = decode(event["kind"], payload)
        if isinstance(record, ShuffleComplete):
            self.back = record.back  # this batch goes into the shoe
        elif isinstance(record, RoundSettled):
            self.result.rounds.append({**payload, "round_id": event["round_id"]})
            if not record.simulated:
                self.on_line(render_round(record))
        elif isinstance(record, RoundVoid):
            self.result.void_rounds.append({**payload, "round_id": event["round_id"]})
            self.on_line(f"  -- round void: {record.reason} (every wager not yet settled returned)")
        elif isinstance(record, ShoeComplete):
            self.result.shoes_completed += 1
            self.result.cards_drawn_by_shoe.append(self.shoe.drawn)
        elif isinstance(record, DeviceFaulted):
            self.on_line(f"  !! {event['device']}: {record.detail} -> {record.action}")

    async def _act(self, event: dict[str, Any]) -> bool:
        """Do what a live prompt asks; returns whether the dealer did something."""
        if event["kind"] != "prompt":
            return False
        action = event["payload"]["action"]
        if action == "last_hand":
            self.on_line("  -- dealer: \"last hand\"")
            return False
        return await self._do(action, event["payload"])

    async def _do(self, action: str, payload: dict[str, Any]) -> bool:
        if action in ("inspect_cards", "shoe_complete"):
            if self.result.shoes_completed < self._target_shoes():
                await self.call("shuffle")  # the batch the shuffler holds
                return True
            return False
        if action == "cut":
            from hil.shoe_sim import build_stack

            stack, cover_at = build_stack(self.decks, self.rng)
            self.result.stacks.append((list(stack), cover_at))
            # The batch the daemon verified: after a restart the shuffle may have completed
            # before the harness read its event (681a.3(b): loading another is a fault).
            shuffled = (await self.call("status"))["batches"]["shuffled"]
            if shuffled:
                self.back = BackColour[shuffled.upper()]
            self.shoe.load(stack, self.back, cover_at)  # the shoe reports ShoeLoaded itself
            return True
        if action in ("burn", "deal", "set_aside"):
            if self._drawn_ahead(payload):
                return True
            slot = payload.get("next") if action == "deal" else None
            await self._draw()
            if self.deal_ahead and slot == FIRST_SLOT:
                self._dealt_ahead = set(SLOTS_DEALT_AHEAD)
                for _ in SLOTS_DEALT_AHEAD:
                    await self._draw()
            return True
        if action == "place_bets":
            await self._place_bets(payload.get("round_no", 0))
            return True
        if action == "resume":
            await self._resume()
            return True
        return False

    def _drawn_ahead(self, payload: dict[str, Any]) -> bool:
        """A "deal" prompt for a slot the dealer drew before the prompt came (`deal_ahead`):
        noted as done."""
        if payload.get("action") != "deal" or payload.get("next") not in self._dealt_ahead:
            return False
        self._dealt_ahead.discard(payload["next"])
        return True

    async def _draw(self) -> None:
        if await self.shoe.draw() is None:  # the cover card came out: 631a.10(d)
            self.on_line("  -- cover card: this hand is completed, then 'last hand'")
            await self.shoe.draw()

    def _target_shoes(self) -> int:
        return self._shoes_target

    async def _resume(self) -> None:
        """After a restart (or a recovered fault), do what the restored state needs next."""
        self._dealt_ahead.clear()  # the restored state's prompts say what is still to draw
        status = await self.call("status")
        state = status["state"]
        action = {"closed": None, "opening": "inspect_cards", "cut": "cut", "burn": "burn",
                  "betting_open": "place_bets", "no_more_bets": "deal", "dealing": "deal",
                  "third_cards": "deal", "end_of_shoe": "shoe_complete"}.get(state)
        if state == "closed":
            await self.call("open")
        elif state == "betting_open" and status["round"]["wagers"]:
            self._press_lockout()  # the bets are already on the layout
        elif action is not None:
            # Watched like any action: a card drawn here waits for its ACK, which the link
            # writes after the card's step (firmware_bridge/aio.py), so a crash point that
            # fires in that step leaves it unacknowledged; `_restart` starts the daemon again.
            await self._while_alive(
                self._do(action, {"round_no": status["round"]["round_no"] + 1}))

    async def _place_bets(self, round_no: int) -> None:
        if self.players.betting_s:
            await asyncio.sleep(self.players.betting_s)
        based: set[int] = set()
        # The round's wagers go together, as a table's betting terminals send them: the
        # daemon runs them in order and acknowledges them after one shared flush.
        wagers = list(self.players.wagers_for_round(self.rng))
        assert self.client is not None
        answered = 0
        try:
            async for reply in self.client.call_many([
                    ("place_wager", {"seat": seat, "wager": wager, "amount_cents": amount})
                    for seat, wager, amount in wagers]):
                seat, wager, amount = wagers[answered]
                answered += 1
                if isinstance(reply, ControlError):
                    self.on_line(f"  wager refused at seat {seat}: {reply}")
                else:
                    self.result.wagers_placed.append((round_no, seat, wager, amount))
                    based.add(seat)
        except (ConnectionError, OSError):
            self.result.wagers_in_doubt += [(round_no, *w) for w in wagers[answered:]]
            raise
        chips = [seat for seat in sorted(based) if self.rng.random() < self.players.progressive]
        chips += list(self.players.progressive_without_base)
        if not chips:
            self._press_lockout()
            self.result.progressive_expected.append(frozenset())
            return
        # The lock-out lands at a random instant among the chips going onto the sensors:
        # the bridge applies each change before it answers, so this order is the order
        # the daemon sees.
        sensor = {w.seat: w.sensor_pin for w in self.table_config.gpio.seats}
        lock_at = self.rng.randint(0, len(chips))
        self.rng.shuffle(chips)
        for position, seat in enumerate(chips):
            if position == lock_at:
                self._press_lockout()
            self.pins.press(sensor[seat])
        if lock_at == len(chips):
            self._press_lockout()
        self.result.progressive_expected.append(
            frozenset(chips[:lock_at]) & frozenset(based))
        self.result.sensor_presses_after_lock += len(chips) - lock_at
        for seat in chips:  # the chips come off (late changes, recorded, never wagers)
            self.pins.release(sensor[seat])

    def _press_lockout(self) -> None:
        """The dealer's "no more bets": the lock-out button, through the GPIO bridge."""
        self.pins.press_and_release(self.table_config.gpio.lockout_pin)


async def poll_until(attempt: Callable[[], Awaitable[T | None]], timeout: float,
                      failure: Callable[[], str]) -> T:
    """Call `attempt` until it returns something other than None, or raise TimeoutError
    with `failure()`'s words.

    For what the daemon offers no event for (a socket path appearing, a link coming up, a
    descriptor in /proc); everything else the harness waits on arrives as events.
    """
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        result = await attempt()
        if result is not None:
            return result
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"{failure()} (after {timeout:g} s)")
        await asyncio.sleep(POLL_INTERVAL_S)


# --- presentation -----------------------------------------------------------------------


def money(cents: int, *, sign: bool = False) -> str:
    text = f"${abs(cents) // 100:,}.{abs(cents) % 100:02d}"
    if cents < 0:
        return "-" + text
    return ("+" + text) if sign and cents > 0 else text


def render_round(settled: RoundSettled) -> str:
    r = settled.result
    winner = {"player": "PLAYER wins", "banker": "BANKER wins", "tie": "TIE"}[r.winner]
    extras = [label for flag, label in ((r.dragon_7, "Dragon 7"), (r.panda_8, "Panda 8"))
              if flag]
    player, banker = " ".join(map(str, r.player)), " ".join(map(str, r.banker))
    head = (f"Round {settled.round_no:>2}  Player {player:<11} ({r.player_total})"
            f"   Banker {banker:<11} ({r.banker_total})   {winner}"
            + (f" ({', '.join(extras)})" if extras else ""))
    lines = [head]
    for s in sorted(settled.settlements, key=lambda s: (s.seat, s.wager)):
        result = {"win": f"won {money(s.net_cents, sign=True)}",
                  "lose": f"lost {money(s.net_cents)}",
                  "push": "push (returned)", "void": "void (returned)"}[s.outcome]
        vig = f"  (vigorish {money(s.vigorish_cents)})" if s.vigorish_cents else ""
        lines.append(f"    seat {s.seat:>2}  {s.wager:<8} {money(s.amount_cents):>9}  "
                     f"{result}{vig}")
    return "\n".join(lines)


def render_summary(result: HarnessResult) -> str:
    rounds = result.rounds
    by_winner = {w: sum(1 for r in rounds if r["result"]["winner"] == w)
                 for w in ("banker", "player", "tie")}
    seats: dict[int, int] = {}
    wagered = vig = 0
    for r in rounds:
        for s in r["settlements"]:
            seats[s["seat"]] = seats.get(s["seat"], 0) + s["net_cents"]
            wagered += s["amount_cents"]
            vig += s["vigorish_cents"]
    table_net = sum(r["table_net_cents"] for r in rounds)
    lines = [
        "",
        "=" * 72,
        f"Shoes: {result.shoes_completed}   Rounds: {len(rounds)}   "
        f"Banker {by_winner['banker']}  Player {by_winner['player']}  Tie {by_winner['tie']}",
        f"Cards drawn from the shoe: {', '.join(map(str, result.cards_drawn_by_shoe))}",
        f"Total wagered: {money(wagered)}   Vigorish: {money(vig)}   "
        f"Table win/loss: {money(table_net, sign=True)}",
        "Seats:",
    ]
    for seat in sorted(seats):
        lines.append(f"    seat {seat:>2}  {money(seats[seat], sign=True):>12}")
    balance = table_net + sum(seats.values())
    lines.append(f"Balance check (table + seats): {money(balance)} "
                 f"{'OK' if balance == 0 else 'MISMATCH'}")
    return "\n".join(lines)


def _tail(path: Path, lines: int = 20) -> str:
    with contextlib.suppress(OSError):
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    return "(no log)"
