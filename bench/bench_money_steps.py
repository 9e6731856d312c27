"""CPU time of the daemon's money steps, in-process, beside a bare SQLite commit.

    .venv/bin/python bench/bench_money_steps.py [--shoes 2] [--profile wager|lock|settle|card]

`bench_latency.py` times the round's last card and the lock-out end to end, with the
flush each one carries; `bench_daemon.py` times a HIL shoe against its wire. Both are
bound by what the daemon's loop spends on the money steps (issue 31): this benchmark
times that alone, in the loop thread's own CPU time, on a daemon built in this process
with the simulated table's configuration (the real wiring: the table, the control
server and its connections, the seat panel on gpiozero's mock pins, the daemon's logging
at its level written to /dev/null, group commit with its flush in a thread of its own).
Per step:

- **wager**: a round's five `place_wager` requests sent at once on a control connection,
  as the HIL dealer sends them (`ControlClient.call_many`; the client is a thread of this
  process with a blocking socket). "step" is one request's `ControlServer.dispatch` (the
  request parsed, the role and arguments checked, the table's step, the reply: the
  table's status); "to report" is all the loop's thread did from the requests' sending
  until the last reply was read, a fifth of it each (the connection's reads, the replies'
  encoding and writes, the shared flush's hand-offs);
- **lock**: the seat panel's LockedOut through the daemon's step (`EventIntake`'s step:
  the round opened, its row, the saved state, the deal prompt);
- **settle**: the round's last card through the same step: the settlement, the round's row
  closed, the next round's prompt, the seats armed again;
- **card**: a card decided inside a round, the same way (for scale);

and, for the last three, "to report" is the CPU from the step's start until its entries
are given out after their flush and two caught-up subscribers' lines are made (the flush's
own thread is not counted). The same-run reference is one bare SQLite commit
(`bench_card_step.py`). `--profile STEP` collects that step's calls under cProfile, in
thread CPU time, and prints the functions that cost the most (the profiler's own cost
inflates every figure: read its proportions, not its times). `--callgrind` deals one shoe
under valgrind's callgrind and prints the instructions the loop's thread executed per round
of dealing (its wagers, lock, cards and settlement, with their connection and flush
hand-offs; not the start-up): a count that does not move with the machine's load.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import functools
import itertools
import os
import re
import shutil
import subprocess
import pstats
import queue
import random
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_card_step import (  # noqa: E402 - the same table, wagers and floor
    CONFIG,
    IN_ROUND,
    SUBSCRIBERS,
    WAGERS,
    bare_commit_ns,
    quantiles,
)
from bench.machine import header, pi4  # noqa: E402
from cards import BackColour, Card, Rank, Suit  # noqa: E402
from controller.access import Caller  # noqa: E402
from controller.config import load_config  # noqa: E402
from controller.control_wire import line  # noqa: E402
from controller.daemon import Daemon  # noqa: E402
from controller.logsetup import configure_logging  # noqa: E402
from controller.memory.delivery import until_durable  # noqa: E402
from controller.memory.lifecycle import init_store  # noqa: E402
from controller.table.machine import TableState  # noqa: E402
from drivers.protocols import CardDrawn, ShuffleComplete  # noqa: E402
from drivers.seats import GpioSeatPanel, SeatPins  # noqa: E402
from hil.stand_in import StandInDevice  # noqa: E402

STEPS = ("wager", "lock", "settle", "card")


class Samples:
    """Thread CPU ns per step kind: the step itself, and through to its report; which cards
    settled (their number among the shoe's card steps), and for a counted shoe those to
    count as settling (a first deal of the same shoe says which)."""

    def __init__(self, settling: frozenset[int] = frozenset()) -> None:
        self.step: dict[str, list[int]] = {kind: [] for kind in STEPS}
        self.report: dict[str, list[int]] = {kind: [] for kind in STEPS}
        self.profiles: dict[str, list[cProfile.Profile | None]] = {kind: [] for kind in STEPS}
        self.settled: list[int] = []
        self.settling = settling


# Under callgrind, each kind of step runs inside a C function of its own that nothing in
# the daemon calls, so that function's inclusive count is the kind's instructions.
COUNTED_IN = {"lock": "filterfalse_next", "card": "takewhile_next", "settle": "starmap_next"}


def counted_step(kind: str, run: Callable[[], Any]) -> None:
    if kind == "settle":
        list(itertools.starmap(run, [()]))
    elif kind == "lock":
        list(itertools.filterfalse(lambda _: run(), [None]))
    else:
        list(itertools.takewhile(lambda _: (run(), False)[1], [None]))


def build(folder: Path) -> Daemon:
    config = load_config(CONFIG, [f"store.path={folder / 'table.sqlite'}",
                                  f"control.socket={folder / 'control.sock'}",
                                  "gpio.pin_factory=mock"])
    init_store(config.store_path, config.critical_dir, operator="bench",
               table_id=config.table_id).close()
    seats = GpioSeatPanel(
        "seats", {w.seat: SeatPins(w.sensor_pin, w.led_pin) for w in config.gpio.seats},
        config.gpio.lockout_pin, pin_factory="mock", debounce_s=config.gpio.debounce_ms / 1000)
    return Daemon(config, devices={"shoe": StandInDevice("shoe"), "seats": seats})


class Dealer:
    """The dealer's connection: a thread of this process with a blocking socket, sending a
    round's wagers together and reading their replies (`ControlClient.call_many`)."""

    def __init__(self, path: str, loop: asyncio.AbstractEventLoop) -> None:
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.connect(path)
        self._loop = loop
        self._jobs: queue.SimpleQueue[tuple[bytes, int, asyncio.Future[list[bytes]]] | None] = \
            queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="bench-dealer", daemon=True)
        self._thread.start()

    def send(self, lines: list[bytes]) -> asyncio.Future[list[bytes]]:
        answered: asyncio.Future[list[bytes]] = self._loop.create_future()
        self._jobs.put((b"".join(lines), len(lines), answered))
        return answered

    def close(self) -> None:
        self._jobs.put(None)
        self._thread.join()
        self._sock.close()

    def _run(self) -> None:
        reader = self._sock.makefile("rb")
        while (job := self._jobs.get()) is not None:
            wire, count, answered = job
            self._sock.sendall(wire)
            replies = [reader.readline() for _ in range(count)]
            self._loop.call_soon_threadsafe(answered.set_result, replies)


async def deal(daemon: Daemon, seed: int, samples: Samples, profiled: str | None,
               counted: bool = False) -> int:
    """One shoe; returns the rounds dealt. `counted`: each step runs in its kind's C
    function (`counted_step`)."""
    table, store = daemon.table, daemon.store
    deck = [Card(rank, suit) for rank in Rank for suit in Suit] * 8
    random.Random(seed).shuffle(deck)
    cards = iter(enumerate(deck))
    sent = [0] * SUBSCRIBERS
    step = daemon.intake._step  # the daemon's step of a device event (card commits around it)
    dealer = Dealer(daemon.config.control_socket, asyncio.get_running_loop())
    dispatched = _time_dispatch(daemon, samples)

    def draw() -> CardDrawn:
        index, card = next(cards)
        return CardDrawn("shoe", index, card, BackColour.RED, False)

    async def timed(kind: str, run: Callable[[], Any], counted_as: str | None = None) -> None:
        profiler = _profiler(kind, profiled)
        started = time.thread_time_ns()
        if profiler is not None:
            profiler.enable()
        if counted_as is not None:
            counted_step(counted_as, run)
        else:
            run()
        stepped = time.thread_time_ns()
        await until_durable(store.when_durable)
        _stream(daemon, sent)
        if profiler is not None:
            profiler.disable()
        samples.step[kind].append(stepped - started)
        samples.report[kind].append(time.thread_time_ns() - started)
        samples.profiles[kind].append(profiler)

    table.cmd_open()
    table.cmd_shuffle(8)
    step(ShuffleComplete("shuffler", BackColour.RED, len(deck), 0, 0, 0))
    table.on_shoe_loaded(BackColour.RED)
    while table.state is TableState.BURN:
        step(draw())
    await until_durable(store.when_durable)
    rounds = 0
    request = 0
    card_no = 0
    try:
        while table.state is TableState.BETTING_OPEN and len(deck) - table.shoe.cards_drawn > 12:
            lines = []
            for seat, wager, cents in WAGERS:
                request += 1
                lines.append(line({"id": request, "cmd": "place_wager",
                                   "args": {"seat": seat, "wager": wager, "amount_cents": cents}}))
            profiler = _profiler("wager", profiled)
            started = time.thread_time_ns()
            if profiler is not None:
                profiler.enable()
            replies = await dealer.send(lines)
            _stream(daemon, sent)
            if profiler is not None:
                profiler.disable()
            spent = time.thread_time_ns() - started
            samples.profiles["wager"].append(profiler)
            samples.report["wager"] += [spent // len(lines)] * len(lines)
            assert all(b'"ok":true' in reply for reply in replies), replies
            assert dispatched == [len(lines)], dispatched
            dispatched[0] = 0
            seats = daemon.seats
            assert isinstance(seats, GpioSeatPanel)
            locked = seats.lock("button")  # the GPIO thread's part, not the loop's
            await timed("lock", lambda locked=locked: step(locked), "lock" if counted else None)
            while table.state in IN_ROUND:
                event = draw()
                card_no += 1
                counted_as = (None if not counted else
                              "settle" if card_no in samples.settling else "card")
                await timed("card", lambda event=event: step(event), counted_as)
                if table.state not in IN_ROUND:  # this card ended the round: it settled
                    samples.settled.append(card_no)
                    for kept in (samples.step, samples.report, samples.profiles):
                        kept["settle"].append(kept["card"].pop())  # type: ignore[attr-defined]
            rounds += 1
    finally:
        dealer.close()
    return rounds


def _profiler(kind: str, profiled: str | None) -> cProfile.Profile | None:
    """A profile of one step, in thread CPU time (for the settling card, every card's, kept
    for those that settle)."""
    if kind == profiled or (kind == "card" and profiled == "settle"):
        return cProfile.Profile(time.thread_time)
    return None


def _time_dispatch(daemon: Daemon, samples: Samples) -> list[int]:
    """Each request's `dispatch`, timed where the connection awaits it (a wager's completes
    without waiting, so its interval is its CPU); returns the count, for the caller to
    check and clear."""
    control = daemon.control
    dispatch = type(control).dispatch
    count = [0]

    async def timed(wire: bytes, caller: Caller) -> dict[str, Any]:
        started = time.thread_time_ns()
        reply = await dispatch(control, wire, caller)
        samples.step["wager"].append(time.thread_time_ns() - started)
        count[0] += 1
        return reply

    control.dispatch = timed  # type: ignore[method-assign]
    return count


def _stream(daemon: Daemon, sent: list[int]) -> None:
    """What each caught-up subscriber's stream sends once the entries are given out."""
    for number, after in enumerate(sent):
        page = daemon.control.streams.stream_page(after)
        if page:
            b"".join(text for _, text in page)
            sent[number] = page[-1][0]


async def start(folder: Path) -> Daemon:
    """A daemon on a new table's store, started as `Daemon.run` starts it (less the witness,
    the metrics and the checks)."""
    daemon = build(folder)
    daemon.intake.bind()
    daemon.history_checked.set()
    daemon.table.restore()
    daemon.store.group_commits(asyncio.get_running_loop(), flush_in=daemon.config.store_flush_in)
    daemon.control.follow(daemon.store)
    daemon.control.set_history(daemon.store.events_from)
    await daemon.control.start()
    for device in daemon.devices.values():
        await device.start(daemon.intake.emit)
    daemon.collector.start()
    return daemon


async def stop(daemon: Daemon) -> None:
    for device in daemon.devices.values():
        await device.stop()
    await daemon.control.close()
    daemon.store.close()
    daemon.collector.stop()


def run_shoe(folder: Path, seed: int, samples: Samples, profiled: str | None,
             counted: bool = False) -> int:
    """One shoe on a new daemon; returns its rounds. `counted`: the dealing runs inside
    `functools.reduce`, the C function callgrind collects in (the start and the stop do not)."""
    loop = asyncio.new_event_loop()
    try:
        daemon = loop.run_until_complete(start(folder))
        try:
            def dealt(_: object = None, __: object = None) -> int:
                return loop.run_until_complete(deal(daemon, seed, samples, profiled, counted))

            return int(functools.reduce(dealt, [None], 0) if counted else dealt())
        finally:
            loop.run_until_complete(stop(daemon))
    finally:
        loop.close()


def counted_child(seed: int) -> int:
    configure_logging(level="info", stream=open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115
    with tempfile.TemporaryDirectory() as tmp:
        first = Samples()  # not counted: which cards settle
        run_shoe(Path(tmp) / "first", seed, first, None)
        samples = Samples(frozenset(first.settled))
        rounds = run_shoe(Path(tmp) / "counted", seed, samples, None, counted=True)
    print(f"rounds {rounds} cards {len(samples.step['card'])}")
    return 0


def instructions(seed: int) -> tuple[int, int, dict[str, int]]:
    """(instructions of the loop's thread while dealing, rounds, the instructions of each
    kind of step by itself: `COUNTED_IN`) under callgrind."""
    with tempfile.TemporaryDirectory() as tmp:
        run = subprocess.run(
            ["valgrind", "--tool=callgrind", "--toggle-collect=functools_reduce",
             "--separate-threads=yes", f"--callgrind-out-file={tmp}/callgrind.out",
             sys.executable, __file__, "--counted-child", "--seed", str(seed)],
            capture_output=True, text=True, check=True)
        main_thread = Path(f"{tmp}/callgrind.out-01")
        found = re.search(r"^(?:summary|totals): (\d+)", main_thread.read_text(), re.M)
        annotated = subprocess.run(["callgrind_annotate", "--inclusive=yes", str(main_thread)],
                                   capture_output=True, text=True, check=True).stdout
    rounds = re.search(r"rounds (\d+) cards (\d+)", run.stdout)
    if found is None or rounds is None:
        raise SystemExit(f"callgrind gave no count:\n{run.stderr[-2000:]}")
    kinds = {}
    for kind, function in COUNTED_IN.items():
        inclusive = re.search(rf"^\s*([\d,]+) .*itertoolsmodule\.c:{function} ", annotated, re.M)
        kinds[kind] = int(inclusive.group(1).replace(",", "")) if inclusive else 0
    kinds["cards"] = int(rounds.group(2))  # the card steps that did not settle
    return int(found.group(1)), int(rounds.group(1)), kinds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shoes", type=int, default=2)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--profile", choices=STEPS,
                        help="cProfile that step's calls and print the costliest functions")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--sort", default="tottime", help="pstats order (tottime, cumtime)")
    parser.add_argument("--callgrind", action="store_true",
                        help="also count the loop thread's instructions per round under "
                             "valgrind's callgrind (one more shoe, a few minutes)")
    parser.add_argument("--counted-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.counted_child:
        return counted_child(args.seed)
    header("bench_money_steps: the daemon's CPU for a wager, the lock and the settling card")
    # The daemon's logging, at its level, written nowhere (the journal's write is not counted).
    configure_logging(level="info", stream=open(os.devnull, "w", encoding="utf-8"))  # noqa: SIM115
    samples = Samples()
    with tempfile.TemporaryDirectory() as tmp:
        rounds = 0
        for shoe in range(args.shoes):
            folder = Path(tmp) / f"shoe{shoe}"
            folder.mkdir()
            rounds += run_shoe(folder, args.seed + shoe, samples, args.profile)
        bare = bare_commit_ns(Path(tmp))
    b10, b50, b99 = quantiles(bare)
    print(f"{rounds} rounds over {args.shoes} shoes; CPU of the loop's thread")
    for kind in STEPS:
        p10, p50, p99 = quantiles(samples.step[kind])
        r10, r50, r99 = quantiles(samples.report[kind])
        print(f"{kind:8s} n={len(samples.step[kind]):5d}  step p50 {p50:7.1f} us  p99 "
              f"{p99:7.1f} us  ({p50 / b50:5.1f}x a bare commit)   to report p50 {r50:7.1f} us  "
              f"p99 {r99:7.1f} us   (Pi 4 estimate p50 {pi4(r50):7.1f} us)")
    print(f"{'bare commit':11s} n={len(bare):5d}  p10 {b10:7.1f} us  p50 {b50:7.1f} us  "
          f"p99 {b99:7.1f} us")
    per_round = {kind: sum(samples.report[kind]) / rounds / 1e3 for kind in STEPS}
    print("a round's money steps, to report, mean: " + ", ".join(
        f"{kind} {per_round[kind]:.0f} us" for kind in STEPS)
        + f"; total {sum(per_round.values()):.0f} us a round")
    if args.callgrind:
        if shutil.which("valgrind") is None:
            print("callgrind: valgrind is not installed (apt install valgrind): not counted")
            return 1
        counted, dealt, kinds = instructions(args.seed)
        print(f"callgrind: the loop's thread executed {counted / dealt:,.0f} instructions a round "
              f"of dealing (n={dealt} rounds; deterministic up to the flushes' timing)")
        each = {"lock": dealt, "settle": dealt, "card": kinds.pop("cards")}
        print("callgrind, each step by itself (to its return; its flush's hand-off, the "
              "wagers and their replies are in the rest): " + ", ".join(
                  f"{kind} {kinds[kind] / each[kind]:,.0f}" for kind in COUNTED_IN)
              + f"; the rest {(counted - sum(kinds.values())) / dealt:,.0f} a round")
    if args.profile:
        profiles = [p for p in samples.profiles[args.profile] if p is not None]
        stats = pstats.Stats(profiles[0])
        for more in profiles[1:]:
            stats.add(more)
        print(f"\ncProfile of {len(profiles)} {args.profile} steps, to their report")
        stats.sort_stats(args.sort).print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
