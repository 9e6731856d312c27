"""End-to-end latency through the daemon process, and the flushes a shoe costs.

    .venv/bin/python bench/bench_latency.py [--shoes 12] [--flush-delay-ms 5] [--no-strace]
                                            [--traced-shoes 3] [--flushes-only [--witness]]

The daemon runs as its own process on simulated hardware (hil/table_harness.py,
as `./run-simulated-table` runs it) and three figures are taken:

* card -> decision: from the simulated shoe putting a CardDrawn frame on the
  pseudo-terminal to a control-socket subscriber receiving the daemon's prompt
  saying where the next card goes. Target (issue 31) p99 <= 2x the same run's floor
  with normal storage, and <= 5 ms when every flush takes `--flush-delay-ms` longer
  (`[store] flush_delay_ms`, an SD card). A card that completes a round is timed apart,
  to the prompt after the settlement: the settlement is money and is flushed before
  the daemon reports it (docs/architecture.md, "Durable writes"), so it carries
  one flush by design: p99 <= 3x the floor, and <= 7 ms with 5 ms flushes.
* lock-out -> lock saved and reported: from the GPIO bridge driving the lock-out
  pin to the subscriber receiving the `no_more_bets` event, which the daemon
  publishes only after the lock's step is flushed: p99 <= 7 ms with 5 ms flushes.
* the floor, same run: a frame of the same size written to a pseudo-terminal at a
  dealer's pace, read by a bare relay process that answers it on the pty and writes one
  line to its socket, read by a watcher of the same kind. That is the path's hops and
  wake-ups with no daemon work at all; the card -> decision percentiles are also printed
  as a ratio to it, which says what the daemon adds on this machine on this day. Its
  frames go in segments, one just before each of the daemon's shoes with normal storage
  (as many frames as the shoe's decided cards), so that a VM whose speed drifts or slows
  for a stretch during the run moves the floor with the daemon.
* one flush alone, same run: a few pages written and fdatasync'd in the same directory,
  as is and made to take `--flush-delay-ms` in all, as the daemon's own flushes are made to
  (an SD card's flush replaces this disk's; it does not come after it).
  The round's end and the lock-out carry one flush by design; their lines say how far their
  p99 is beyond this one's, which is what the daemon adds to the disk's own time.
* flushes per shoe: fsync/fdatasync calls of the daemon's process during
  `--traced-shoes` shoes (3 by default, at least 3: a WAL checkpoint or an anchor write
  lands in one shoe of several, and the average says what a shoe costs), counted with
  strace, printed as the average per shoe and as the total, beside the rounds and the money-changing steps
  (wagers accepted, locks, settlements and voids, vigorish, meters and awards), and by
  source (`strace -y` names each call's file): the steps' (the WAL, from the group-commit
  thread), the WAL checkpoints' and the anchor's. Target (issue 31): a round's wagers share
  one flush (group commit, the dealer sends them together), its lock one, its settlement
  one: at most three a round. `--flushes-only --witness` counts a witnessed table's (the
  witness on the PostgreSQL at 127.0.0.1:5432, as `./run-simulated-table` sets it up):
  its outbox's flushes are printed apart, beyond the target's count.

Twelve shoes by default (`--shoes`), about 3,880 decided cards, as a table deals many
shoes per start of the daemon: their p99 is the 39th-slowest card. Over one or three
shoes it was the fourth or tenth, and a few wake-ups this VM's host delays decided it
(docs/performance.md). The first shoe after the start (first use of every path, cold
caches) is also printed on its own. The flushes are counted in a run of their own
(strace slows what it traces); `--flushes-only` runs just that.

A card is stamped as the simulated shoe's link is asked to send it (it encodes
and writes the frame in that call), and a lock-out as the bridge is asked to
drive the pin. The subscriber is
a process of its own at normal priority (`--realtime-observer`: SCHED_FIFO, as an
earlier version ran it) blocked on its socket, stamping each read as it returns, so
neither end waits for the simulated dealer's event loop. The figures still
include the pseudo-terminal, one local socket hop and the two processes' wake-ups:
they are an upper bound of what the daemon itself adds. All stamps are
CLOCK_MONOTONIC (`time.perf_counter_ns`), the same clock in every process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pty
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tty
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.machine import header, pi4, write_figures  # noqa: E402
from firmware_bridge import messages as wire  # noqa: E402
from controller.config import load_config  # noqa: E402
from controller.memory.anchor import ANCHOR_INTERVAL_S  # noqa: E402
from controller.memory.durability import slow_storage_wait  # noqa: E402
from hil.table_harness import TableHarness, normal_scheduling  # noqa: E402
from hil.witness_sim import SimulatedWitness, postgres_answers  # noqa: E402

CONFIG = ROOT / "config" / "simulated-table.toml"
# Issue 31's targets for what this benchmark measures (bench/done_when.py judges by them too).
CARD_TARGET_FLOORS = 2  # card -> decision p99, in the same run's floor p99s
LAST_CARD_TARGET_FLOORS = 3  # the round's last card -> settled, p99, likewise
BEYOND_SLOW_FLUSH_TARGET_MS = 2  # with slow flushes, the lock-out's and round end's p99 beyond
#                                  the flush's own delay (7 ms at 5 ms): one flush each
FLUSHES_A_ROUND = 3  # its wagers' (group commit), its lock's, its settlement's
MONEY_KINDS = ("wager_accepted", "no_more_bets", "round_settled", "round_void",
               "vigorish_collected", "progressive_accepted", "progressive_wagers_returned",
               "jackpot_validated")
MONEY_PREFIXES = ("meter_", "progressive_award", "award_")


class FlushedCards:
    """Which of the shoe's cards wait for a flush that ruling C26 keeps before they are
    reported: a shoe's first card (the first burn card, 631a.5(f), flushed as its own
    step) and the card after the cover card (behind the cover card's flush, in log
    order). Two a shoe of about 320 decided cards, among the slowest by design: the card's
    figure is printed with and without them, since whether C26's steps count in issue
    31's card item is its author's to say (docs/performance.md)."""

    def __init__(self) -> None:
        self._shoe: int | None = None
        self._after_cover = False

    def cover_card(self) -> None:
        self._after_cover = True

    def card(self, shoe: int) -> bool:
        """A card drawn while `shoe` shoes were complete: whether C26 flushes before it."""
        flushed = self._after_cover or shoe != self._shoe
        self._shoe, self._after_cover = shoe, False
        return flushed


@dataclass
class Timings:
    """What the benchmark's own process saw: when each card frame and each lock-out press
    went out. The prompts and locks are stamped by the watcher process (`watch`)."""

    card_sent: list[tuple[int, float]] = field(default_factory=list)  # (perf ns, time.time())
    card_shoe: list[int] = field(default_factory=list)  # shoes completed when each was sent
    card_flushed: list[bool] = field(default_factory=list)  # C26 flushes before each
    flushed_cards: FlushedCards = field(default_factory=FlushedCards)
    lock_pressed: list[tuple[int, float]] = field(default_factory=list)


class TimedTable(TableHarness):
    """The simulated table, stamping the moment a card frame goes to the pseudo-terminal
    and the moment the lock-out pin is driven."""

    timings: Timings
    _timed_link: Any = None

    async def _do(self, action: str, payload: dict[str, Any]) -> bool:
        if action in ("burn", "deal", "set_aside"):
            self._time_card_frames()
        return await super()._do(action, payload)

    def _time_card_frames(self) -> None:
        """Wrap the shoe's device-side link (new after a replug) so that a CardDrawn is
        stamped as the shoe sends it, not when the dealer decided to draw: the simulated
        dealer's own queueing is not the daemon's latency. AsyncLink.send encodes the frame
        and writes it before its first await, in the call stamped: the stamp is taken just
        before it (after the write this process may lose the CPU for longer than the daemon
        takes to answer, and the stamp would come after the answer)."""
        link = self.shoe.link
        if link is None or link is self._timed_link:
            return
        self._timed_link = link
        timings, send, result = self.timings, link.send, self.result
        flushed = timings.flushed_cards

        async def timed_send(message: wire.Message) -> None:
            if isinstance(message, wire.CardDrawn):
                timings.card_shoe.append(result.shoes_completed)
                timings.card_flushed.append(flushed.card(result.shoes_completed))
                timings.card_sent.append((time.perf_counter_ns(), time.time()))
            elif isinstance(message, wire.CoverCardDrawn):
                flushed.cover_card()
            await send(message)

        link.send = timed_send

    def _press_lockout(self) -> None:
        # Stamped before: the bridge drives the pin, and the daemon may act, before it answers.
        self.timings.lock_pressed.append((time.perf_counter_ns(), time.time()))
        super()._press_lockout()


_WATCHER = r"""
import json, os, socket, sys, time
stamp = time.perf_counter_ns
priority = "normal"  # an outside observer, as a display or a floor system is
if os.environ.get("BENCH_REALTIME_OBSERVER"):  # --realtime-observer: ahead of the simulators
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
        priority = "SCHED_FIFO 10"
    except (AttributeError, PermissionError):
        priority = "normal (SCHED_FIFO not permitted)"
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.connect(sys.argv[1])
sock.sendall(b'{"id": 1, "cmd": "subscribe", "args": {"after_seq": 0}}\n')
print("ready", priority, flush=True)
seen, buffer = [], b""
while True:
    data = sock.recv(1 << 16)
    now = stamp()  # every line of this read arrived now
    if not data:
        break
    buffer += data
    *lines, buffer = buffer.split(b"\n")
    for line in lines:
        item = json.loads(line)
        event = item.get("event")
        if event and event["kind"] in ("prompt", "no_more_bets"):
            seen.append([now, event["at"], event["kind"],
                         event["payload"].get("action", "")])
json.dump(seen, sys.stdout)
"""


async def watch(socket: str) -> tuple[subprocess.Popen[str], str]:
    """The subscriber: a process of its own with a blocking socket, so that nothing else
    in the benchmark (the simulated dealer and shoe run in this process's event loop) can
    delay the moment it notes a prompt's arrival. Returns it and its scheduling."""
    watcher = subprocess.Popen([sys.executable, "-c", _WATCHER, socket],
                               stdout=subprocess.PIPE, text=True, preexec_fn=normal_scheduling)
    assert watcher.stdout is not None
    ready = await asyncio.to_thread(watcher.stdout.readline)
    if not ready.startswith("ready "):
        raise RuntimeError(f"the watcher process did not start: {ready!r}")
    await asyncio.sleep(0.2)  # subscribed: the daemon answered before the shoe starts
    return watcher, ready.removeprefix("ready ").strip()


_RELAY = r"""
import json, os, socket, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_NOCTTY)
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind(sys.argv[2])
server.listen(1)
print("ready", flush=True)
conn, _ = server.accept()
conn.recv(4096)  # the watcher's subscribe line
size, pending = int(sys.argv[3]), 0
while True:
    try:
        data = os.read(fd, 4096)
    except OSError:  # the bench closed the pty's other side
        break
    if not data:
        break
    pending += len(data)
    while pending >= size:  # one answer per frame, also when a late read finds two
        pending -= size
        os.write(fd, b"\x06")  # answered on the link, as the daemon acknowledges a frame
        event = {"kind": "prompt", "at": time.time(), "payload": {"action": "deal"}}
        conn.sendall(json.dumps({"event": event}).encode() + b"\n")
conn.close()
"""
FLOOR_FRAME = bytes(16)  # a CardDrawn frame's size on the wire (COBS, header, CRC)
FLOOR_FRAMES_A_SHOE = 320  # about a shoe's decided cards (323 at the bench's seed): one segment


async def floor(frames: int, workdir: Path, seed: int = 7) -> list[int]:
    """The same-run floor (module docstring): frame stamp to the watcher's receipt, ns."""
    workdir.mkdir(parents=True, exist_ok=True)
    master, slave = pty.openpty()
    tty.setraw(slave)
    socket_path = str(workdir / "floor.sock")
    relay = subprocess.Popen([sys.executable, "-c", _RELAY, os.ttyname(slave), socket_path,
                              str(len(FLOOR_FRAME))],
                             stdout=subprocess.PIPE, text=True, preexec_fn=normal_scheduling)
    assert relay.stdout is not None
    try:
        if not (await asyncio.to_thread(relay.stdout.readline)).startswith("ready"):
            raise RuntimeError("the floor's relay process did not start")
        os.close(slave)
        watcher, _ = await watch(socket_path)
        pace, sent = random.Random(seed), []
        for _ in range(frames):
            await asyncio.sleep(pace.uniform(0.002, 0.006))  # the simulated dealer's pace
            sent.append((time.perf_counter_ns(), time.time()))
            os.write(master, FLOOR_FRAME)
        await asyncio.sleep(0.2)
    finally:
        os.close(master)
        relay.wait(timeout=30)
    seen_json, _ = await asyncio.to_thread(watcher.communicate, timeout=30)
    return [spent for spent, _ in answers(sent, json.loads(seen_json), ("prompt",))]


def answers(sent: list[tuple[int, float]], seen: list[list[Any]], kinds: tuple[str, ...]
            ) -> list[tuple[int, str]]:
    """For each stamp sent, the first entry of `kinds` received after it that the daemon
    logged after it (an entry logged earlier answers an earlier card): (ns, action)."""
    found, index = [], 0
    for sent_ns, sent_wall in sent:
        while index < len(seen) and (seen[index][0] <= sent_ns or seen[index][1] < sent_wall
                                     or seen[index][2] not in kinds):
            index += 1
        if index == len(seen):
            break
        found.append((seen[index][0] - sent_ns, seen[index][3]))
        index += 1
    return found


def own_flushes(label: str, storage: dict[str, Any]) -> str:
    """The daemon's own account of its flushes in that run (`tablectl status`'s storage, a
    histogram's bounds): the disk's part of a money step's report as the daemon saw it."""
    return (f"the daemon's own flushes, {label}: {storage.get('flushes')}; half within "
            f"{storage.get('half_within_ms')} ms, 99 % within {storage.get('p99_within_ms')} ms, "
            f"slowest {storage.get('slowest_ms')} ms (its status)")


def is_money(kind: str) -> bool:
    return kind in MONEY_KINDS or kind.startswith(MONEY_PREFIXES)


@dataclass
class Figures:
    card_ns: list[int] = field(default_factory=list)  # -> where the next card goes
    card_ns_without_c26: list[int] = field(default_factory=list)  # FlushedCards' left out
    first_shoe_card_ns: list[int] = field(default_factory=list)  # those of the first shoe
    round_end_ns: list[int] = field(default_factory=list)  # -> settled, flushed, next prompt
    lock_ns: list[int] = field(default_factory=list)
    watcher_scheduling: str = ""
    storage: dict[str, Any] = field(default_factory=dict)  # the daemon's own flush times
    floor_segments: list[list[int]] = field(default_factory=list)  # one before each shoe


async def run_shoes(shoes: int, workdir: Path, flush_delay_ms: float,
                    count_flushes: bool, extra_overrides: list[str] | None = None, *,
                    floor_frames: int = 0, config: Path = CONFIG
                    ) -> tuple[Figures, dict[str, int]]:
    """`floor_frames`: a segment of that many floor frames (`floor`) before each shoe,
    while the daemon waits between shoes, kept in `Figures.floor_segments`. `config`: the
    table dealt (`--config`; the simulated table's by default)."""
    timings = Timings()
    overrides = [f"store.flush_delay_ms={flush_delay_ms}"] if flush_delay_ms else []
    overrides += extra_overrides or []
    # The table's default anchor interval ([store] anchor_interval_s, docs/rulings.md C24)
    # is what is counted: a benchmark shoe takes seconds, a real one most of an hour.
    # The daemon at the normal policy, whatever this process's (`--simulators`).
    table = TimedTable(config, workdir, seed=7, extra_overrides=overrides,
                       daemon_normal_scheduling=True)
    table.timings = timings
    async with table:
        assert table.daemon is not None
        watcher, scheduling = await watch(table.socket)
        tracer, trace = None, workdir / "flushes.strace"
        if count_flushes:
            # -y names each call's file: the flushes are told apart by what they flush.
            tracer = subprocess.Popen(
                ["strace", "-f", "-qq", "-y", "-e", "trace=fsync,fdatasync", "-o", str(trace),
                 "-p", str(table.daemon.pid)],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            await asyncio.sleep(1.0)  # attached to every thread before the shoe starts
        segments: list[list[int]] = []
        for shoe in range(shoes):
            if floor_frames:
                segments.append(await floor(floor_frames, workdir / f"floor-{shoe}", seed=shoe))
            result = await table.play(shoes=1)
        counts = {"shoes": shoes, "rounds": len(result.rounds) + len(result.void_rounds),
                  "money_steps": sum(1 for e in result.events if is_money(e["kind"])),
                  "shoe_steps": sum(1 for e in result.events if e["kind"] in SHOE_STEP_KINDS),
                  "flushes": -1}
        if tracer is not None:
            await asyncio.sleep(0.5)
            tracer.send_signal(2)  # SIGINT: strace detaches
            tracer.communicate(timeout=30)
            by_source = flushes_by_source(trace.read_text(), table.daemon.pid)
            counts.update(by_source, flushes=sum(by_source.values()))
            # The WAL file keeps its largest cycle's size (SQLite writes it over from the
            # start after a checkpoint): how far the checkpoints let it grow.
            wal = Path(table.store_path + "-wal")
            counts["wal_bytes"] = wal.stat().st_size if wal.exists() else 0
        await asyncio.sleep(0.2)  # the last prompt reaches the watcher
        storage = (await table.call("status"))["storage"]
    seen_json, _ = await asyncio.to_thread(watcher.communicate, timeout=30)  # daemon gone: EOF
    seen = json.loads(seen_json)
    figures = Figures(watcher_scheduling=scheduling, storage=storage, floor_segments=segments)
    for (spent, action), shoe, flushed in zip(answers(timings.card_sent, seen, ("prompt",)),
                                              timings.card_shoe, timings.card_flushed):
        decided_card = action in ("deal", "burn", "set_aside")
        (figures.card_ns if decided_card else figures.round_end_ns).append(spent)
        if decided_card and not flushed:
            figures.card_ns_without_c26.append(spent)
        if decided_card and shoe == 0:
            figures.first_shoe_card_ns.append(spent)
    figures.lock_ns = [spent for spent, _ in answers(timings.lock_pressed, seen,
                                                    ("no_more_bets",))]
    return figures, counts


SHOE_STEP_KINDS = ("shuffle_requested", "shuffle_complete", "shoe_loaded", "burn_first_card",
                   "cover_card", "table_opened")
"""The durable steps of a shoe that belong to no round: each is flushed on its own (the
daemon acts on it; docs/architecture.md, "Durable writes")."""

FLUSH_SOURCES = ("steps", "checkpoints", "anchor", "witness", "other")


def flushes_by_source(strace_out: str, pid: int) -> dict[str, int]:
    """The daemon's fsync and fdatasync calls (`strace -f -y` lines: thread id, call, the
    file) by what made them: a step's flush (the WAL), a WAL checkpoint (the database file,
    and the same thread's WAL flushes right before it and right after it: before the copy
    and the new cycle's header), the anchor (its file beside the key), the witness's outbox
    (beside it, a witnessed table only), anything else. A file beside the key replaced
    whole flushes its directory after it, from the same thread: that flush is the file's
    writer's. Told apart by order, not by thread: a step's flush runs on the loop's thread
    too (`[store] flush_in`, docs/rulings.md C30). `pid` is the daemon's (its threads' ids
    differ; each is the strace line's first field)."""
    counts = dict.fromkeys(FLUSH_SOURCES, 0)
    beside_the_key: dict[int, str] = {}  # a thread's last file there: whose it was
    store_flushes: list[tuple[int, str]] = []  # (thread, "wal" or "db"), in order
    for match in re.finditer(r"^(\d+)\s+(?:fsync|fdatasync)\(\d+<([^>]*)>", strace_out,
                             re.MULTILINE):
        thread, path = int(match.group(1)), match.group(2)
        if path.endswith(".critical"):  # the directory itself
            counts[beside_the_key.get(thread, "anchor")] += 1
        elif ".critical" in path:
            source = "witness" if Path(path).name.startswith("witness_outbox") else "anchor"
            beside_the_key[thread] = source
            counts[source] += 1
        elif path.endswith("-wal") or path.endswith(".sqlite"):
            store_flushes.append((thread, "db" if path.endswith(".sqlite") else "wal"))
        else:
            counts["other"] += 1
    checkpoint = [kind == "db" for _, kind in store_flushes]
    for at, (thread, kind) in enumerate(store_flushes):
        if kind != "db":
            continue
        for step in (-1, 1):  # the same thread's WAL flush just before it and just after
            near = at + step
            while 0 <= near < len(store_flushes) and store_flushes[near][0] != thread:
                near += step
            if 0 <= near < len(store_flushes) and store_flushes[near][1] == "wal":
                checkpoint[near] = True
    counts["checkpoints"] = sum(checkpoint)
    counts["steps"] = len(checkpoint) - counts["checkpoints"]
    return counts


def flush_reference(workdir: Path, delay_ms: float, samples: int = 400,
                    seed: int = 7) -> list[int]:
    """The same run's flush, alone (ns each): a step's few pages written into a file in the
    same directory (in place once the file has grown, as the WAL is after its first cycle),
    fdatasync'd, then, with `delay_ms`, made to take that long in all, as the daemon's
    `[store] flush_delay_ms` makes its own (controller/memory/durability.py). The figures
    that carry one flush by design are printed beside it: what a flush costs this disk
    today is not the daemon's."""
    workdir.mkdir(parents=True, exist_ok=True)
    fd = os.open(workdir / "flush-probe", os.O_RDWR | os.O_CREAT, 0o600)
    pages, pace, spent = os.urandom(3 * 4096), random.Random(seed), []
    try:
        for number in range(samples):
            os.pwrite(fd, pages, (number % 64) * len(pages))
            started, started_s = time.perf_counter_ns(), time.perf_counter()
            os.fdatasync(fd)
            if delay_ms:
                slow_storage_wait(delay_ms / 1000, started_s)
            spent.append(time.perf_counter_ns() - started)
            time.sleep(pace.uniform(0.002, 0.006))
    finally:
        os.close(fd)
    return spent


def p50_p99_ms(samples_ns: list[int]) -> tuple[float, float]:
    ms = sorted(s / 1e6 for s in samples_ns)
    return statistics.median(ms), ms[min(len(ms) - 1, int(len(ms) * 0.99))]


def line(name: str, samples_ns: list[int], target_ms: float | None, note: str = "", *,
         floor_p99: float | None = None, flush_p99: float | None = None) -> str:
    """One figure's line: its percentiles, and its verdict against `target_ms` if it has
    one (with a Pi 4 estimate), else `note`; a target set as a multiple of the same run's
    floor (`floor_p99`) is printed as that ratio; a figure that carries one flush by design
    also says how far its p99 is beyond the same run's flush alone (`flush_p99`)."""
    if not samples_ns:
        return f"{name}: no samples"
    p50, p99 = p50_p99_ms(samples_ns)
    figures = (f"{name:<44} n={len(samples_ns):4d}  p50 {p50:6.2f} ms  "
               f"p99 {p99:6.2f} ms  max {max(samples_ns) / 1e6:6.2f} ms   ")
    if target_ms is None:
        return figures + note
    verdict = "OK" if p99 <= target_ms else "OVER"
    if flush_p99 is not None:
        figures += f"{p99 - flush_p99:+.2f} ms beyond one flush   "
    if floor_p99 is not None:
        return (figures + f"p99 {p99 / floor_p99:.1f}x the floor's, target <= "
                f"{target_ms / floor_p99:g}x {verdict}")
    return (figures + f"target p99 <= {target_ms:g} ms {verdict}"
            f"   (Pi 4 estimate p99 {pi4(p99):5.2f} ms)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shoes", type=int, default=12)
    parser.add_argument("--flush-delay-ms", type=float, default=5.0)
    parser.add_argument("--no-strace", action="store_true", help="skip the flush count")
    parser.add_argument("--config", type=Path, default=CONFIG,
                        help="the table to deal (default: the simulated table's; e.g. "
                             "config/progressive-heavenly9-mystery.toml, a progressive one)")
    parser.add_argument("--traced-shoes", type=int, default=3,
                        help="shoes whose flushes are counted (at least 3: a checkpoint or an "
                             "anchor write is amortised over them)")
    parser.add_argument("--flushes-only", action="store_true",
                        help="count the flushes only (no timings)")
    parser.add_argument("--witness", action="store_true",
                        help="with --flushes-only: the table witnessed, as "
                             "./run-simulated-table sets it up on the PostgreSQL at "
                             "127.0.0.1:5432, so that its outbox's flushes are counted too")
    parser.add_argument("--json", type=Path, metavar="PATH",
                        help="also write the timed figures and the flush count to PATH "
                             "(bench/done_when.py reads them)")
    parser.add_argument("--simulators", choices=SIMULATOR_POLICIES, default="batch",
                        help="the scheduling policy of this process, which runs the simulated "
                             "shoe, dealer and players (default: batch; normal: as the "
                             "daemon and the observer, the measurement before 2026-12-07)")
    parser.add_argument("--realtime-observer", action="store_true",
                        help="run the watcher at SCHED_FIFO priority (default: normal, the "
                             "figures the targets are stated for)")
    args = parser.parse_args()
    if not args.config.is_file():
        parser.error(f"--config {args.config}: no such file (a table's configuration, such "
                     "as config/simulated-table.toml)")
    if args.traced_shoes < 3:
        parser.error(f"--traced-shoes {args.traced_shoes}: at least 3 (one shoe's count "
                     "holds a whole checkpoint or none)")
    if args.witness and not args.flushes_only:
        parser.error("--witness: only with --flushes-only (the timed figures are the "
                     "unwitnessed table's)")
    simulators = run_simulators_at(args.simulators)
    if args.flushes_only:
        if shutil.which("strace") is None:
            parser.error("--flushes-only needs strace")
        witness, overrides = None, []
        if args.witness:
            absent = postgres_answers()
            if absent is not None:
                parser.error(f"--witness needs the witness's PostgreSQL: {absent}")
            witness = SimulatedWitness()
            overrides = witness.set_up(load_config(args.config).table_id)
        try:
            with tempfile.TemporaryDirectory() as tmp:
                _, counts = asyncio.run(run_shoes(args.traced_shoes, Path(tmp) / "traced", 0,
                                                  True, overrides, config=args.config))
        finally:
            if witness is not None:
                witness.drop()
        print(flush_lines(counts))
        write_figures(args.json, flush_figures(counts))
        return 0
    if args.realtime_observer:
        os.environ["BENCH_REALTIME_OBSERVER"] = "1"  # the watcher process inherits it
    header("bench_latency: through the daemon process, the pseudo-terminal and the GPIO bridge")
    with tempfile.TemporaryDirectory() as tmp:
        # The floor is taken in segments, one just before each of the daemon's shoes with
        # normal storage (while the daemon waits between shoes), so that a VM whose speed
        # drifts within the run, or slows for a stretch, moves both sides of the ratio
        # (each segment's p99 is printed: far apart, the host moved during the run).
        normal, _ = asyncio.run(run_shoes(args.shoes, Path(tmp) / "normal", 0, False,
                                          floor_frames=FLOOR_FRAMES_A_SHOE,
                                          config=args.config))
        slow, _ = asyncio.run(run_shoes(args.shoes, Path(tmp) / "slow", args.flush_delay_ms,
                                        False, config=args.config))
        print(f"watcher (the subscriber process): {normal.watcher_scheduling} scheduling; "
              f"the daemon and the floor's relay: normal; the simulated shoe, dealer and "
              f"players (this process): {simulators}")
        bare = [spent for segment in normal.floor_segments for spent in segment]
        bare_p50, bare_p99 = p50_p99_ms(bare)
        segment_p99 = sorted(p50_p99_ms(segment)[1] for segment in normal.floor_segments)
        print(line("floor: pty -> bare relay process -> watcher", bare, None,
                   f"(same run, no daemon work; a segment before each of the daemon's shoes, "
                   f"their p99 {segment_p99[0]:.2f} to {segment_p99[-1]:.2f} ms)"))
        flush = flush_reference(Path(tmp) / "probe", 0)
        slow_flush = flush_reference(Path(tmp) / "probe", args.flush_delay_ms)
        flush_p99, slow_flush_p99 = p50_p99_ms(flush)[1], p50_p99_ms(slow_flush)[1]
        print(line("one flush alone: fdatasync", flush, None, "(same run, same disk)"))
        print(line(f"one flush alone: fdatasync, {args.flush_delay_ms:g} ms in all", slow_flush, None,
                   "(same run, same disk)"))
        for label, figures in (("normal storage", normal), (f"{args.flush_delay_ms:g} ms flushes",
                                                            slow)):
            print(own_flushes(label, figures.storage))
        # Issue 31's targets are ratios to this run's floor: they hold on a slow day too.
        print(line("card -> decision, normal storage", normal.card_ns,
                   CARD_TARGET_FLOORS * bare_p99, floor_p99=bare_p99))
        print(line("  of which the first shoe after the start", normal.first_shoe_card_ns,
                   None, "(the daemon's cold start included)"))
        print(line(f"card -> decision, {args.flush_delay_ms:g} ms flushes", slow.card_ns, 5.0))
        card_p50, card_p99 = p50_p99_ms(normal.card_ns)
        print(f"card -> decision over the floor: p50 {card_p50 / bare_p50:.1f}x  "
              f"p99 {card_p99 / bare_p99:.1f}x (target <= {CARD_TARGET_FLOORS}x)   daemon's own "
              f"share at p50 {card_p50 - bare_p50:.2f} ms")
        without_c26 = normal.card_ns_without_c26
        print(line("  without the cards C26 flushes before", without_c26,
                   CARD_TARGET_FLOORS * bare_p99, floor_p99=bare_p99) +
              f"   ({len(normal.card_ns) - len(without_c26)} left out: each shoe's first "
              "burn card and the card after its cover card)")
        print(line("last card -> settled (one flush), normal", normal.round_end_ns,
                   LAST_CARD_TARGET_FLOORS * bare_p99, floor_p99=bare_p99, flush_p99=flush_p99))
        slow_target_ms = args.flush_delay_ms + BEYOND_SLOW_FLUSH_TARGET_MS
        print(line(f"last card -> settled, {args.flush_delay_ms:g} ms flushes", slow.round_end_ns,
                   slow_target_ms, flush_p99=slow_flush_p99))
        print(line("lock-out -> saved and reported, normal", normal.lock_ns, 5.0,
                   flush_p99=flush_p99))
        print(line(f"lock-out -> saved and reported, {args.flush_delay_ms:g} ms flushes",
                   slow.lock_ns, slow_target_ms, flush_p99=slow_flush_p99))
        figures = {"floor_p99_ms": bare_p99, "card_p99_ms": card_p99,
                   "card_p99_without_c26_ms": p50_p99_ms(without_c26)[1],
                   "last_card_p99_ms": p50_p99_ms(normal.round_end_ns)[1],
                   "flush_delay_ms": args.flush_delay_ms,
                   "slow_round_end_p99_ms": p50_p99_ms(slow.round_end_ns)[1],
                   "slow_lock_p99_ms": p50_p99_ms(slow.lock_ns)[1],
                   "slow_flush_p99_ms": slow_flush_p99}
        if args.no_strace or shutil.which("strace") is None:
            print("flushes per shoe: not counted (strace absent or --no-strace)")
            write_figures(args.json, figures)
            return 0
        _, counts = asyncio.run(run_shoes(args.traced_shoes, Path(tmp) / "traced", 0, True,
                                          config=args.config))
    print(flush_lines(counts))
    write_figures(args.json, {**figures, **flush_figures(counts)})
    return 0


SIMULATOR_POLICIES = ("batch", "normal")


def run_simulators_at(policy: str) -> str:
    """Put this process, which runs the simulated shoe, dealer and players, at `policy`
    (`--simulators`); its threads inherit it, and so would its children, but the daemon, the
    observer and the floor's relay are each started at the normal policy
    (`normal_scheduling`). Returns what it runs at, for the report.

    At a table the shoe is a device of its own and the dealer a person: neither takes the
    Pi's CPU. Here they share two cores with the daemon and the observer, and at normal
    policy each wake-up of theirs may preempt either one: a settlement report wakes the
    simulated dealer, whose next round then runs in front of the observer's wake-up, which
    is the simulator's time in the daemon's figure (docs/performance.md, 2026-12-07).
    SCHED_BATCH takes the simulators' wake-up preemption away and nothing else: they keep
    their share of the CPU, at the same nice value. The floor's frames are written by this
    process too, so both sides of the ratio are measured the same way."""
    if policy == "normal":
        return "normal"
    try:
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
    except (AttributeError, OSError) as exc:  # not Linux, or refused: measured as before
        return f"normal (SCHED_BATCH refused: {exc})"
    return "SCHED_BATCH"


def issue31_flushes(counts: dict[str, int]) -> tuple[int, int]:
    """(the traced shoes' flushes as issue 31 counts them, its bound): the table's own, not
    its witness's outbox; FLUSHES_A_ROUND a round."""
    return counts["flushes"] - counts.get("witness", 0), FLUSHES_A_ROUND * counts["rounds"]


def flush_figures(counts: dict[str, int]) -> dict[str, float]:
    """`issue31_flushes` a shoe, and the shoe's own durable steps among them."""
    shoes = counts["shoes"]
    table_own, bound = issue31_flushes(counts)
    return {"flushes_a_shoe": table_own / shoes, "flush_bound_a_shoe": bound / shoes,
            "shoe_steps_a_shoe": counts["shoe_steps"] / shoes}


def flush_lines(counts: dict[str, int]) -> str:
    """The flushes of the traced shoes, by source, beside issue 31's bound: a round's wagers
    share a flush (group commit), its lock has one, its settlement one. Averaged per shoe:
    a WAL checkpoint (every CHECKPOINT_AFTER_COMMITS commits) falls in one shoe of several,
    and an anchor write once an interval."""
    shoes, rounds, total = counts["shoes"], counts["rounds"], counts["flushes"]
    table_own, bound = issue31_flushes(counts)
    verdict = ("OK" if 0 <= table_own <= bound
               else f"OVER by {(table_own - bound) / shoes:.1f} a shoe")
    steps_bound = bound + counts["shoe_steps"]
    steps_verdict = "OK" if counts["steps"] <= steps_bound else "OVER"

    # A benchmark shoe lasts seconds, so its anchor writes are at most a few; a table's shoe
    # lasts about an hour, with a durable group every 20 s or so: one write an interval.
    dealer_pace_anchor = rounds / shoes * min(3.0, 60.0 / ANCHOR_INTERVAL_S)

    def each(name: str) -> str:
        return f"{counts[name]:5d} ({counts[name] / shoes:6.1f} a shoe)"

    return "\n".join([
        f"flushes (fsync+fdatasync) over {shoes} shoes: {total} ({total / shoes:.1f} a shoe, "
        f"{total / max(1, rounds):.2f} a round)   rounds {rounds} ({rounds / shoes:.1f} a shoe)"
        f"   money-changing steps {counts['money_steps']}",
        f"  steps' (group commit)  {each('steps')}   bound {FLUSHES_A_ROUND} a round + the "
        f"shoes' own durable steps ({counts['shoe_steps']}: {', '.join(SHOE_STEP_KINDS)}) = "
        f"{steps_bound} {steps_verdict}",
        f"  WAL checkpoints        {each('checkpoints')}   (3 each: the WAL, the database, "
        "the new WAL's header)",
        f"  the anchor             {each('anchor')}   (one a write, at most one write an "
        "interval)",
        *([f"  the witness's outbox   {each('witness')}   (its new heads at each durable "
           "group, its rewrites once the witness holds them: beyond issue 31's count, "
           "which is the table's)"] if counts.get("witness") else []),
        f"  anything else          {each('other')}",
        f"  the WAL file at the end: {counts.get('wal_bytes', 0) / 2**20:.1f} MiB (its "
        "largest cycle between checkpoints)",
        f"  issue 31's bound: one a round for its wagers, one for its lock, one for its "
        f"settlement = {bound} ({bound / shoes:.1f} a shoe)   {verdict}",
        f"  at a dealer's pace (a round a minute, its three durable groups about 20 s apart) "
        f"the anchor alone adds about {dealer_pace_anchor:.0f} a shoe (one a round at most "
        f"every {ANCHOR_INTERVAL_S:g} s; three a round at 1 s): estimated, not traced"])


if __name__ == "__main__":
    sys.exit(main())
