"""The daemon's start-to-ready time, resident memory during a shoe, and CPU use while idle.

    .venv/bin/python bench/bench_daemon.py [--idle-seconds 10] [--entries 1000000]
    .venv/bin/python bench/bench_daemon.py --start-only      # the two start-to-ready figures
    .venv/bin/python bench/bench_daemon.py --shoe-only       # one HIL shoe: wall / wire, CPU
    .venv/bin/python bench/bench_daemon.py --shoe-only --profile 30   # ... and where the CPU goes
    .venv/bin/python bench/bench_daemon.py --shoe-only --callgrind    # ... its instructions

Each figure is printed beside a reference measured in the same run:
- start-to-ready against a bare `python -c pass` of the same interpreter,
- start-to-ready with a store of `--entries` log entries (a busy table's year or more)
  beside the empty store's: before ready the boot check reads the log only from the last
  full check, and only if that is at most BOOT_CHAIN_LIMIT entries (the first start here
  has a day's entries since it, more than that), and every unsettled sealed row; after
  ready every start checks the whole history before play (its time is printed too,
  beside the same entries only read and MACed in as many fresh processes: what no check
  in Python can go under, whatever the day's speed of this VM's host),
- resident memory against that bare interpreter's,
- idle CPU against one core (100%),
- a HIL shoe's wall time against its serial traffic's time at 115200 8N1: both
  directions of the shoe's port one after the other (the shoe's reports one way, the
  link's acks and commits the other), which is what issue 31 calls a shoe's wire time,
  and, stricter, the busier direction alone (a UART sends and receives at once).
  The wall time holds the whole shoe: the table opened, the simulated shuffler counting
  the batch at its own pace, the cut, the burn and every round with its wagers, lock-out
  and flushes. The dealer draws a round's first four cards at its first 'deal' prompt, as
  a dealer does (631a.9(c) fixes their order), and waits for the prompt of every other
  card; `--wait-each-card` makes it wait for every card's prompt, as the tests' dealer does.
  The wall time of a round is split at the events the dealer sees: betting (the
  "place_bets" prompt to the lock-out reported: the wagers, their flush and replies, the
  lock-out button and its step; no traffic on the shoe's port) and dealing (the lock-out
  reported to the round settled: the cards, the shoe's traffic).
- `--profile N`: the daemon runs under cProfile (bench/daemon_profiled.py), on its loop's
  thread only, in thread CPU time, for the shoe only (not its start); prints the N
  functions that cost the most and the split of the loop's CPU among the daemon's parts.
  The profiler's own cost inflates every figure: read proportions, not times.
- `--callgrind`: the daemon runs under valgrind's callgrind, instrumented for the shoe
  only; prints the instructions of its loop's thread (a round's share too) and of all its
  threads: a count that the machine's load does not move (user space only: the kernel's
  work for a system call is not in it). About 15 s.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.machine import header, pi4, write_figures  # noqa: E402
from bench.bench_idle import thread_cpu  # noqa: E402
from hil.os_threads import SIMULATOR_THREAD_PREFIX  # noqa: E402
from hil.usb_shuffler import CARD_TIME_S  # noqa: E402
from hil.table_harness import TableHarness  # noqa: E402

CONFIG = ROOT / "config" / "simulated-table.toml"
TICKS = os.sysconf("SC_CLK_TCK")


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime


def bare_interpreter() -> tuple[float, int]:
    times = []
    for _ in range(5):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.perf_counter() - start)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(2)"])
    time.sleep(0.5)
    rss = rss_kib(proc.pid)
    proc.wait()
    return statistics.median(times), rss


@dataclass
class DaemonTool:
    """How the shoe's daemon runs under a tool (--profile, --callgrind): its command in
    place of `tabled`, and what is done to it (its pid) as the shoe starts and ends."""

    tabled: list[str]
    shoe_started: Callable[[int], Awaitable[None]]
    shoe_ended: Callable[[int], Awaitable[None]]


async def measure(idle_seconds: float, starts: int = 3, *,
                  deal_ahead: bool = True, tool: DaemonTool | None = None) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        ready_times = [0.0] if not starts else []
        for attempt in range(starts):
            ready_times.append((await start_to_ready(Path(tmp) / f"start{attempt}", attempt))[0])

        wire = WireCount()
        shuffled: list[tuple[float, int, int]] = []  # when the shuffle ended; wire bytes then

        phases = RoundPhases()

        def clock(event: dict[str, object]) -> None:
            phases.note(event)
            if event["kind"] == "shuffle_complete" and not shuffled:
                shuffled.append((time.perf_counter(), wire.bytes_in, wire.bytes_out))

        async with TableHarness(CONFIG, Path(tmp) / "shoe", seed=11, deal_ahead=deal_ahead,
                                on_event=clock,
                                tabled=tool.tabled if tool is not None else None) as table:
            assert table.daemon is not None
            wire.fd = table.shoe._master  # the device's end of the shoe's port
            pid = table.daemon.pid
            peak = 0
            sampler_done = asyncio.Event()

            async def sample() -> None:
                nonlocal peak
                while not sampler_done.is_set():
                    peak = max(peak, rss_kib(pid))
                    await asyncio.sleep(0.05)

            sampler = asyncio.create_task(sample())
            if tool is not None:
                await tool.shoe_started(pid)
            started = time.perf_counter()
            cpu_before, threads_before = cpu_seconds(pid), thread_cpu(pid)
            wakes_before = wake_ups(pid), wake_ups(os.getpid())
            rig_before = time.process_time()
            result = await table.play(shoes=1)
            ended = time.perf_counter()
            if tool is not None:
                await tool.shoe_ended(pid)
            shoe_wall = ended - started
            daemon_wakes = {key: spent - wakes_before[0].get(key, 0)
                            for key, spent in wake_ups(pid).items()}
            rig_wakes = sum(wake_ups(os.getpid()).values()) - sum(wakes_before[1].values())
            shoe_cpu = cpu_seconds(pid) - cpu_before
            rig_cpu = time.process_time() - rig_before
            used = {key: spent - threads_before.get(key, 0.0)
                    for key, spent in thread_cpu(pid).items()}
            sim_cpu = sum(spent for key, spent in used.items() if _simulator(key))
            own_wakes = sum(n for key, n in daemon_wakes.items() if not _simulator(key))
            shoe_bytes, wire_s = (wire.bytes_in, wire.bytes_out), wire.wire_s()
            at, bytes_in, bytes_out = shuffled[0]
            dealt_bytes = (wire.bytes_in - bytes_in, wire.bytes_out - bytes_out)
            dealt_wire_s = wire_seconds(*dealt_bytes)
            dealt_wall = ended - at
            wire.close()
            sampler_done.set()
            await sampler
            idle_before = cpu_seconds(pid)
            await asyncio.sleep(idle_seconds)
            idle_cpu = cpu_seconds(pid) - idle_before
        return {"ready_s": statistics.median(ready_times), "peak_rss_kib": peak,
                "rounds": len(result.rounds), "shoe_wall_s": shoe_wall, "shoe_cpu_s": shoe_cpu,
                "shoe_own_cpu_s": sum(used.values()) - sim_cpu, "rig_cpu_s": rig_cpu,
                "wire_s": wire_s, "shoe_bytes_in": shoe_bytes[0], "shoe_bytes_out": shoe_bytes[1],
                "dealt_wall_s": dealt_wall, "dealt_wire_s": dealt_wire_s,
                "dealt_traffic_s": traffic_seconds(*dealt_bytes),
                "traffic_s": traffic_seconds(*shoe_bytes),
                "shuffle_s": at - started, "own_wakes": own_wakes, "rig_wakes": rig_wakes,
                "deal_ahead": deal_ahead, "betting_s": phases.betting_s,
                "dealing_s": phases.dealing_s, "phased_rounds": phases.rounds,
                "idle_cpu_fraction": idle_cpu / idle_seconds if idle_seconds else 0.0}


class RoundPhases:
    """The wall time of the rounds, split where the dealer sees the lock-out reported:
    betting (its "place_bets" prompt to "no_more_bets") and dealing (from there to
    "round_settled"), summed over the rounds that had both."""

    def __init__(self) -> None:
        self.betting_s = self.dealing_s = 0.0
        self.rounds = 0
        self._bets_at: float | None = None
        self._locked_at: float | None = None

    def note(self, event: dict[str, object]) -> None:
        kind, now = event["kind"], time.perf_counter()
        payload = event.get("payload")
        if kind == "prompt" and isinstance(payload, dict) and payload.get("action") == \
                "place_bets":
            self._bets_at, self._locked_at = now, None
        elif kind == "no_more_bets" and self._bets_at is not None:
            self._locked_at = now
        elif kind == "round_settled" and self._bets_at is not None and \
                self._locked_at is not None:
            self.betting_s += self._locked_at - self._bets_at
            self.dealing_s += now - self._locked_at
            self.rounds += 1
            self._bets_at = self._locked_at = None


def profiled(top: int, out: Path) -> DaemonTool:
    """The daemon under bench/daemon_profiled.py: cProfile on for the shoe only."""
    async def start(pid: int) -> None:
        os.kill(pid, signal.SIGUSR1)
        await asyncio.sleep(0.05)  # the signal is handled between two of the loop's steps

    async def stop(pid: int) -> None:
        os.kill(pid, signal.SIGUSR2)
        for _ in range(100):
            if out.exists() and out.stat().st_size:
                return
            await asyncio.sleep(0.05)
        raise SystemExit(f"the profiled daemon wrote no {out}")

    return DaemonTool([sys.executable, str(ROOT / "bench" / "daemon_profiled.py"), str(out)],
                      start, stop)


# The daemon's parts, each by the function its work enters through (inclusive CPU of the
# loop's thread): the table's steps hold their store writes; the delivery holds the event
# streams' writes and the replies; a wager's step is in the table's, its request in the
# control socket's.
PARTS = [
    ("the table's steps for device events (cards, lock-out, sensors)",
     ("controller/table/table.py", "handle")),
    ("the table's steps for requests (wagers and the rest)", ("controller/commands/guards.py",
                                                                "run")),
    ("delivery after a flush (event streams, replies)", ("controller/memory/delivery.py",
                                                         "_give_out_all")),
    ("control requests, whole (read, parse, check, step, reply)",
     ("controller/control_session.py", "serve_requests")),
    ("serial link: bytes in, frames, acks out", ("firmware_bridge/aio.py", "data_received")),
    ("log lines", ("structlog/_base.py", "_proxy_to_logger")),
]


def print_profile(out: Path, top: int) -> None:
    import pstats

    stats = pstats.Stats(str(out))
    entries = stats.stats  # type: ignore[attr-defined]
    total = stats.total_tt  # type: ignore[attr-defined]
    print(f"profile of the daemon's loop thread over the shoe ({total:.2f} s of thread CPU "
          f"under the profiler, which inflates it): the parts, inclusive")
    for label, (path, name) in PARTS:
        spent = sum(cumulative for (file, _, function), (_, _, _, cumulative, _) in
                    entries.items() if file.endswith(path) and function == name)
        print(f"  {spent / total * 100:5.1f} %  {label}")
    print(f"the {top} functions that cost the most by their own time:")
    ranked = sorted(entries.items(), key=lambda item: -item[1][2])[:top]
    for (file, line, function), (_, calls, own, cumulative, _) in ranked:
        where = file.replace(str(ROOT) + "/", "").split("site-packages/")[-1]
        print(f"  {own / total * 100:5.1f} %  own, {cumulative / total * 100:5.1f} % with what it "
              f"calls, {calls:6d} calls  {function} ({where}:{line})")


def callgrind(out: Path) -> DaemonTool:
    """The daemon under callgrind, instrumenting only between the shoe's start and end."""
    async def control(*args: str) -> None:
        process = await asyncio.create_subprocess_exec(
            "callgrind_control", *args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        await process.wait()

    async def start(pid: int) -> None:
        await control("-i", "on", str(pid))

    async def stop(pid: int) -> None:
        await control("-d", str(pid))
        await control("-i", "off", str(pid))

    return DaemonTool(["valgrind", "--tool=callgrind", "--instr-atstart=no",
                       "--separate-threads=yes", f"--callgrind-out-file={out}",
                       sys.executable, "-m", "controller.daemon"], start, stop)


def callgrind_counts(out: Path) -> tuple[int, int]:
    """(the loop's thread, all threads): the instructions of the dump taken at the shoe's
    end (`OUT.1-NN`, one file a thread; 01 is the main thread, the daemon's loop)."""
    counts = {}
    for dump in out.parent.glob(out.name + ".1-*"):
        found = re.search(r"^(?:summary|totals): (\d+)", dump.read_text(), re.M)
        counts[dump.name.rsplit("-", 1)[1]] = int(found.group(1)) if found else 0
    if "01" not in counts:
        raise SystemExit(f"callgrind wrote no dump of the daemon's threads at {out}.1-*")
    return counts["01"], sum(counts.values())


BAUD_BITS_PER_BYTE = 10  # 8N1: a start bit, eight data bits, a stop bit
BAUD = 115200


def wire_seconds(bytes_in: int, bytes_out: int) -> float:
    """The line's time for the busier direction (a UART sends and receives at once): the
    least a shoe could take if reports and acks never waited for each other."""
    return max(bytes_in, bytes_out) * BAUD_BITS_PER_BYTE / BAUD


def traffic_seconds(bytes_in: int, bytes_out: int) -> float:
    """The line's time for both directions one after the other: issue 31's wire time ("a
    shoe's traffic is 0.87-0.90 s" is this sum), each report waiting for its answer."""
    return (bytes_in + bytes_out) * BAUD_BITS_PER_BYTE / BAUD


def _simulator(thread_key: str) -> bool:
    """A simulator's thread in the daemon's process ('tid name'): the rig's, not the daemon's."""
    return thread_key.split(" ", 1)[1].startswith(SIMULATOR_THREAD_PREFIX)


def wake_ups(pid: int) -> dict[str, int]:
    """Voluntary context switches per thread of `pid` ('tid name'): how often each went to
    sleep to wait (for a read, a lock, a timer). A count, which load changes little."""
    out: dict[str, int] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            status = (task / "status").read_text()
        except OSError:
            continue  # the thread ended meanwhile
        for line in status.splitlines():
            if line.startswith("voluntary_ctxt_switches:"):
                out[f"{task.name} {name}"] = int(line.split()[1])
    return out


class WireCount:
    """The bytes the simulated shoe's link reads and writes on its pseudo-terminal (this
    process's end of the daemon's serial port): firmware_bridge.aio's `os`, seen through a
    counter for that one descriptor. A pseudo-terminal carries them at memory speed; a
    115200-baud line would need BAUD_BITS_PER_BYTE / BAUD s a byte, both ways at once."""

    def __init__(self) -> None:
        import firmware_bridge.aio as aio

        self._aio, self._os = aio, aio.os
        self.fd = -1
        self.bytes_in = self.bytes_out = 0  # from the daemon, to the daemon
        aio.os = self  # type: ignore[assignment]

    def __getattr__(self, name: str) -> object:
        return getattr(self._os, name)

    def read(self, fd: int, size: int) -> bytes:
        data: bytes = self._os.read(fd, size)
        if fd == self.fd:
            self.bytes_in += len(data)
        return data

    def write(self, fd: int, data: bytes) -> int:
        written: int = self._os.write(fd, data)
        if fd == self.fd:
            self.bytes_out += written
        return written

    def wire_s(self) -> float:
        return wire_seconds(self.bytes_in, self.bytes_out)

    def close(self) -> None:
        self._aio.os = self._os


ENTRIES_PER_ROUND = 20     # wagers, locks, cards, prompts, settlement: a round's log entries
ENTRIES_PER_DAY = 24_000   # 60 rounds an hour for 20 hours
# Issue 31's targets for what this benchmark measures (bench/done_when.py judges by them too).
READY_TARGET_MS = 1000  # start-to-ready at 1,000,000 entries, with or without a recent check
SHOE_TARGET_WIRES = 1.0  # a HIL shoe's wall time, in its traffic's time at BAUD


def build_large_store(workdir: Path, entries: int) -> float:
    """A table's store with `entries` log entries and one settled round per 20 of them,
    written directly (not by playing) through the store's own MAC code: every entry's
    HMAC chained as Store.append_event makes it, every round row through the digest
    triggers. The last full check is put one day's entries before the end. Returns the
    seconds the build took."""
    from controller.config import load_config
    from controller.memory.critical import (
        CriticalPaths,
        canonical,
        entry_mac,
    )
    from controller.memory.lifecycle import init_store

    started = time.perf_counter()
    config = load_config(CONFIG, [f"store.path={workdir / 'table.sqlite'}"])
    init_store(config.store_path, operator="bench", table_id=config.table_id).close()
    from controller.memory.store import Store
    from controller.memory.lifecycle import load_key_for

    store = Store(config.store_path, key=load_key_for(config.store_path),
                  paths=CriticalPaths.for_store(config.store_path))
    key = store.key
    with store.transaction() as db:
        seq, prev = db.execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        at = 1_790_000_000.0
        rows = []
        checkpoint: tuple[int, str] | None = None
        rounds = []
        for n in range(seq + 1, entries + 1):
            round_id = n // ENTRIES_PER_ROUND + 1
            kind, payload = ("card", {"index": n % 6, "card": "9H", "hand": "player"}) \
                if n % ENTRIES_PER_ROUND < 6 else ("prompt", {"action": "draw"})
            payload_json = canonical(payload)
            at += 0.5
            mac = entry_mac(key, prev, n, at, kind, "info", "shoe", round_id, payload_json)
            rows.append((n, at, kind, "info", "shoe", round_id, payload_json, prev, mac))
            prev = mac
            if n == entries - ENTRIES_PER_DAY:
                checkpoint = (n, mac)
            if n % ENTRIES_PER_ROUND == 0:
                rounds.append((round_id, 1 + round_id // 70, round_id % 70, "settled",
                               canonical([{"seat": 3, "wager": "banker", "amount_cents": 2500}]),
                               canonical([{"index": i, "card": "9H", "hand": "player"}
                                          for i in range(6)]),
                               canonical({"winner": "banker"}),
                               canonical([{"seat": 3, "amount_cents": 2500, "net_cents": 2375}]),
                               at - 30, at))
            if len(rows) == 50_000:
                db.executemany("INSERT INTO events VALUES (?,?,?,?,?,?,?,?,?)", rows)
                rows.clear()
        db.executemany("INSERT INTO events VALUES (?,?,?,?,?,?,?,?,?)", rows)
        db.executemany("INSERT INTO rounds(round_id, shoe_no, round_no, state, wagers, cards,"
                       " result, settlements, opened_at, settled_at)"
                       " VALUES (?,?,?,?,?,?,?,?,?,?)", rounds)
    if checkpoint is not None:
        # What the last daily full check left: the log's checkpoint and the settled rounds
        # it had seen (critical.SETTLED_PREFIX), a day before the end.
        from controller.memory.critical import digest_of, table_columns

        last_round = checkpoint[0] // ENTRIES_PER_ROUND
        rows, acc = digest_of(store._db, key, "rounds", table_columns(store._db, "rounds"),
                              up_to_rowid=last_round)
        store.set_checkpoint(*checkpoint, {"rounds": {"last_rowid": last_round, "rows": rows,
                                                      "acc": acc}})
    store.close()
    return time.perf_counter() - started


async def start_to_ready(workdir: Path, seed: int) -> tuple[float, float, dict]:
    """Seconds from starting tabled to its control socket answering (READY is sent then),
    wall clock and the daemon's own CPU time (which others' load disturbs far less); and the
    check of the whole history that every start runs after ready (`history_check` in the
    status: its entries and seconds)."""
    from cards import BackColour
    from hil.shoe_sim import SimulatedShoe

    harness = TableHarness(CONFIG, workdir, seed=seed, wait_for_history_check=False)
    harness.init_store()  # a no-op for a built store; outside the timed part either way
    harness.shoe = SimulatedShoe([], BackColour.RED, 0)
    await harness.shoe.start()
    start = time.perf_counter()
    await harness.start_daemon()  # returns once the control socket answers
    took = time.perf_counter() - start
    assert harness.daemon is not None
    cpu = cpu_seconds(harness.daemon.pid)
    status = await harness.call("status")
    while status["history_check"]["state"] in ("not started", "running"):
        await asyncio.sleep(0.05)
        status = await harness.call("status")
    assert status["state"] != "out_of_order", status["out_of_order"]
    await harness.stop_daemon()
    await harness.shoe.stop()
    return took, cpu, status["history_check"]


def rows_read_and_maced(path: str, key: bytes, lo: int, hi: int) -> int:
    """The whole history's check's floor in Python, for one range of the log: every column
    of entries `lo`..`hi` read as the chain's check reads them (controller/memory/chain.py),
    and one HMAC-SHA256 each, by the same `mac_of`, over stored texts about as long as the
    entry's MAC material (its MAC, its previous MAC and its payload: 145-167 bytes on the
    benchmark's store against the material's 138-165, as many SHA-256 blocks). What the
    check adds is the material written out (the time's repr, the JSON strings), the links
    and MACs compared, and the protected tables and SQLite's page check in the check's own
    process. Returns the rows read."""
    import sqlite3

    from controller.memory.chain import _ROWS  # the check's own query: the same columns
    from controller.memory.macs import mac_of

    db = sqlite3.connect(f"{Path(path).as_uri()}?mode=ro", uri=True)
    try:
        rows = 0
        for row in db.execute(_ROWS, (lo, hi)):
            mac_of(key, (row[8] + row[7] + row[6]).encode("utf-8"))
            rows += 1
        return rows
    finally:
        db.close()


def rows_read_and_maced_s(path: str, key: bytes, entries: int, workers: int) -> float:
    """Wall seconds for `rows_read_and_maced` over the whole log, split into `workers`
    ranges each in a fresh process of its own, started at once, split as the daemon's full
    check splits the log among its chain's workers (controller/memory/chain.py, `ranges`).
    Meant for the benchmark's million entries: below `PARALLEL_CHAIN_ENTRIES` the check reads
    the log in one pass of its own, and process starts are most of either figure."""
    from controller.fresh_process import FreshProcess
    from controller.memory.chain import ranges

    started = time.perf_counter()
    running = [FreshProcess("bench.bench_daemon:rows_read_and_maced", path, key, lo, hi)
               for lo, hi in ranges(1, entries, workers)]
    read = sum(process.result() for process in running)
    took = time.perf_counter() - started
    if read != entries:
        raise SystemExit(f"the reference read {read:,} entries, not {entries:,}")
    return took


async def measure_large(entries: int) -> dict[str, float]:
    from controller.memory.chain import full_check_workers
    from controller.memory.lifecycle import load_key_for

    with tempfile.TemporaryDirectory() as tmp:
        empty = [await start_to_ready(Path(tmp) / f"empty{n}", n) for n in range(3)]
        large_dir = Path(tmp) / "large"
        build_s = build_large_store(large_dir, entries)
        large = [await start_to_ready(large_dir, n) for n in range(3)]
        store = large_dir / "table.sqlite"
        size = store.stat().st_size
        checked = large[0][2]["entries"]  # the whole history's check's entries
        workers = full_check_workers()  # as many as the daemon's full check
        key = load_key_for(str(store))
        floor = [rows_read_and_maced_s(str(store), key, checked, workers) for _ in range(3)]
    return {"empty_s": statistics.median(t for t, _, _ in empty),
            "large_s": statistics.median(t for t, _, _ in large),
            "large_first_s": large[0][0],  # its last full check a day's entries back
            "empty_cpu_s": statistics.median(c for _, c, _ in empty),
            "large_cpu_s": statistics.median(c for _, c, _ in large),
            "history_s": statistics.median(h["seconds"] for _, _, h in large),
            "history_entries": checked,
            "build_s": build_s, "size_mib": size / 2**20,
            "floor_s": statistics.median(floor), "floor_workers": workers}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle-seconds", type=float, default=10.0)
    parser.add_argument("--entries", type=int, default=1_000_000,
                        help="log entries in the large store (default 1,000,000)")
    parser.add_argument("--start-only", action="store_true",
                        help="only the start-to-ready figures (empty and large store)")
    parser.add_argument("--shoe-only", action="store_true",
                        help="only the HIL shoe's figures (wall / wire, CPU), no large store")
    parser.add_argument("--wait-each-card", action="store_true",
                        help="the dealer waits for every card's prompt, the first four too")
    parser.add_argument("--json", type=Path, metavar="PATH",
                        help="also write the figures to PATH (bench/done_when.py reads them)")
    parser.add_argument("--profile", type=int, metavar="N", default=0,
                        help="with --shoe-only: the daemon's loop under cProfile during the "
                             "shoe; print its parts and the N functions that cost the most")
    parser.add_argument("--callgrind", action="store_true",
                        help="with --shoe-only: the daemon under callgrind during the shoe; "
                             "print its instructions (needs valgrind)")
    args = parser.parse_args()
    if (args.profile or args.callgrind) and not args.shoe_only:
        parser.error("--profile and --callgrind go with --shoe-only")
    if args.profile and args.callgrind:
        parser.error("--profile or --callgrind, not both")
    header("bench_daemon: start-to-ready, memory during a shoe, idle CPU of the whole process")
    if args.shoe_only:
        with tempfile.TemporaryDirectory() as tools:
            out = Path(tools) / ("daemon.prof" if args.profile else "callgrind.out")
            tool = (profiled(args.profile, out) if args.profile else
                    callgrind(out) if args.callgrind else None)
            m = asyncio.run(measure(0.0, starts=0, deal_ahead=not args.wait_each_card,
                                    tool=tool))
            if tool is not None:
                print("(the daemon ran under a tool: its wall and CPU figures below are the "
                      "tool's, not comparable)")
            print_shoe(m)
            if args.profile:
                print_profile(out, args.profile)
            elif args.callgrind:
                loop_thread, threads = callgrind_counts(out)
                print(f"callgrind: the daemon's loop thread executed {loop_thread:,} "
                      f"instructions during the shoe, {loop_thread / m['rounds']:,.0f} a round "
                      f"({m['rounds']} rounds); all its threads {threads:,} (its simulators' "
                      f"threads among them)")
        write_figures(args.json, shoe_figures(m))
        return 0
    large = asyncio.run(measure_large(args.entries))
    print(f"start-to-ready, {args.entries:,}-entry store, median of 3:   "
          f"{large['large_s'] * 1000:8.0f} ms   empty store: {large['empty_s'] * 1000:6.0f} ms"
          f"   ratio {large['large_s'] / large['empty_s']:6.2f}x   (store {large['size_mib']:.0f}"
          f" MiB, built in {large['build_s']:.0f} s; target <= {READY_TARGET_MS} ms)")
    print(f"  the daemon's CPU time to ready, same starts:               "
          f"{large['large_cpu_s'] * 1000:8.0f} ms   empty store: "
          f"{large['empty_cpu_s'] * 1000:6.0f} ms   ratio "
          f"{large['large_cpu_s'] / large['empty_cpu_s']:6.2f}x   (Pi 4 estimate "
          f"{pi4(large['large_cpu_s']) * 1000:.0f} ms)")
    print(f"  the first start, {ENTRIES_PER_DAY:,} entries after its last full check:     "
          f"{large['large_first_s'] * 1000:8.0f} ms   (target <= {READY_TARGET_MS} ms)")
    per_entry_us = large["history_s"] / large["history_entries"] * 1e6
    print(f"  then the whole history checked before play, median of 3: "
          f"{large['history_s'] * 1000:8.0f} ms   for {large['history_entries']:,} entries"
          f" = {per_entry_us:.2f} us an entry (target <= 2 us; Pi 4 estimate "
          f"{pi4(large['history_s']):.1f} s)")
    floor_us = large["floor_s"] / large["history_entries"] * 1e6
    print(f"  reference: the same entries only read and MACed, median of 3:"
          f" {large['floor_s'] * 1000:5.0f} ms = {floor_us:.2f} us an entry"
          f" ({large['floor_workers']} fresh processes, as the check's chain workers)"
          f"   the check's ratio {per_entry_us / floor_us:4.2f}x")
    start = {"ready_ms": large["large_s"] * 1000, "entries": args.entries,
             "ready_first_ms": large["large_first_s"] * 1000,
             "history_us_an_entry": per_entry_us}
    if args.start_only:
        write_figures(args.json, start)
        return 0
    bare_start, bare_rss = bare_interpreter()
    m = asyncio.run(measure(args.idle_seconds, deal_ahead=not args.wait_each_card))
    print(f"start-to-ready (control socket answering), median of 3: {m['ready_s'] * 1000:8.0f} ms"
          f"   bare interpreter start: {bare_start * 1000:6.0f} ms"
          f"   ratio {m['ready_s'] / bare_start:6.1f}x")
    print(f"resident memory, peak during a shoe:                    {m['peak_rss_kib'] / 1024:8.1f} MiB"
          f"   bare interpreter:       {bare_rss / 1024:6.1f} MiB"
          f"   ratio {m['peak_rss_kib'] / bare_rss:6.1f}x")
    print(f"CPU while idle ({args.idle_seconds:.0f} s, whole process, simulators too):   "
          f"{m['idle_cpu_fraction'] * 100:8.2f} %   of one core (100 %)"
          f"   ratio {m['idle_cpu_fraction']:.4f}")
    print_shoe(m)
    write_figures(args.json, {**start, **shoe_figures(m)})
    return 0


def shoe_figures(m: dict[str, float]) -> dict[str, float]:
    """A shoe's wall time against the issue's wire time (both directions one after the
    other), for the whole shoe and from the shuffle's end."""
    return {"shoe_wall_s": m["shoe_wall_s"],
            "shoe_wire_s": m["traffic_s"],
            "dealt_wall_s": m["dealt_wall_s"], "dealt_wire_s": m["dealt_traffic_s"]}


def print_shoe(m: dict[str, float]) -> None:
    print(f"one shoe: {m['rounds']} rounds in {m['shoe_wall_s']:.2f} s wall, daemon CPU "
          f"{m['shoe_cpu_s']:.2f} s ({m['shoe_cpu_s'] / m['rounds'] * 1000:.1f} ms a round; "
          f"Pi 4 estimate {pi4(m['shoe_cpu_s']) / m['rounds'] * 1000:.0f} ms)")
    traffic_s = m["traffic_s"]
    print(f"the shoe's serial traffic: {m['shoe_bytes_out']:,} bytes to the daemon, "
          f"{m['shoe_bytes_in']:,} from it: {traffic_s:.2f} s on a {BAUD}-baud 8N1 line, both "
          f"directions one after the other (issue 31's wire time); wall / wire "
          f"{m['shoe_wall_s'] / traffic_s:.2f}x (target <= {SHOE_TARGET_WIRES:.1f})")
    print(f"  against the busier direction alone ({m['wire_s']:.2f} s: reports and acks never "
          f"waiting for each other, stricter than the issue's): "
          f"{m['shoe_wall_s'] / m['wire_s']:.2f}x")
    # What that wall time holds, in order: the table opened, the inspect prompt, the
    # simulated shuffler counting the batch (hil/usb_shuffler.py's CARD_TIME_S a card, no
    # wire of the shoe's), the cut and the shoe loaded, the burn, then every round.
    print(f"  of which up to the shuffle's end {m['shuffle_s']:.2f} s (the table opened and the "
          f"simulated shuffler's own pace, {CARD_TIME_S * 1000:g} ms a card); from its end to the "
          f"shoe's end: {m['dealt_wall_s']:.2f} s wall against {m['dealt_traffic_s']:.2f} s of "
          f"wire = {m['dealt_wall_s'] / m['dealt_traffic_s']:.2f}x (busier direction "
          f"{m['dealt_wire_s']:.2f} s: {m['dealt_wall_s'] / m['dealt_wire_s']:.2f}x)")
    dealer = ("draws a round's first four cards at its first 'deal' prompt (631a.9(c)) and "
              "waits for the prompt of each other card" if m["deal_ahead"] else
              "waits for every card's prompt")
    print(f"  the dealer {dealer}; the round's wagers go at once, and the lock-out waits for "
          f"their replies (after one flush)")
    if m["phased_rounds"]:
        rounds = m["phased_rounds"]
        print(f"  a round's wall time: betting {m['betting_s'] / rounds * 1000:.2f} ms (the "
              f"'place_bets' prompt to the lock-out reported: no traffic on the shoe's port), "
              f"dealing {m['dealing_s'] / rounds * 1000:.2f} ms (to the round settled), against "
              f"{m['dealt_traffic_s'] / m['rounds'] * 1000:.2f} ms of wire a round "
              f"({rounds} rounds)")
    print(f"  CPU: the daemon's own threads {m['shoe_own_cpu_s']:.2f} s = "
          f"{m['shoe_own_cpu_s'] / traffic_s:.2f}x the wire (its simulators' threads "
          f"{m['shoe_cpu_s'] - m['shoe_own_cpu_s']:.2f} s); the rig's process (the simulated "
          f"dealer and shoe) {m['rig_cpu_s']:.2f} s")
    print(f"  wake-ups (voluntary context switches): the daemon's own threads "
          f"{m['own_wakes']:,}, the rig's process {m['rig_wakes']:,}")


if __name__ == "__main__":
    sys.exit(main())
