"""The control socket under abuse, on a 1M-entry event log: the event loop's largest stall
and the daemon's memory growth.

    .venv/bin/python bench/bench_control.py [--entries 1000000] [--seconds 10]

Two phases, each against the daemon running in this process (stand-in devices, the
table appending an event every 20 ms as a dealing table does), with a probe on the
daemon's loop that wakes every 5 ms and records how late it woke:

0. a reference: the table alone, in the same run;
1. a subscriber that asks for the stream from sequence 0 and never reads a byte;
2. two clients asking for a full chain verification at the same moment, twice (the
   check runs in a child process; its memory is printed apart from the daemon's).

Limits (issue 12): stall <= 100 ms (the watchdog pings every 3.3 s, the table's own
timers are tenths of a second), growth <= 20 MB. Before issue 12 the first phase added
about 1.1 GB and stalled the loop 9.9 s; the second stalled it 11.6 s. Clients run on
threads with blocking sockets, so they cost the loop nothing but their requests.
A stall as long as the table's own longest commit (an fsync, printed beside it) is the
storage's, not the control socket's. The store is built once per run in a temporary directory (a minute or two).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.machine import describe  # noqa: E402
from controller.config import load_config  # noqa: E402
from controller.memory.lifecycle import init_store  # noqa: E402
from controller.daemon import Daemon  # noqa: E402
from hil.stand_in import StandInDevice  # noqa: E402

CONFIG = ROOT / "config" / "simulated-table.toml"
STALL_LIMIT_MS = 100.0
GROWTH_LIMIT_MB = 20.0
PROBE_S = 0.005
TICK_S = 0.02  # a dealing table commits a few events a second; this is ten times that
BUILD_BATCH = 20_000


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def build(config, entries: int) -> float:  # noqa: ANN001
    started = time.monotonic()
    store = init_store(config.store_path, config.critical_dir, operator="bench",
                       table_id=config.table_id)
    payload = {"index": 0, "card": "9H", "hand": "player", "slot": "player_1", "back": "red"}
    written = 1
    while written < entries:
        with store.transaction():
            for _ in range(min(BUILD_BATCH, entries - written)):
                written += 1
                store.append_entry("card", {**payload, "index": written}, device="shoe")
    store.close()
    return time.monotonic() - started


class Probe:
    """Wakes every PROBE_S on the daemon's loop; the worst lateness is the loop's stall."""

    def __init__(self) -> None:
        self.worst = 0.0

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            before = loop.time()
            await asyncio.sleep(PROBE_S)
            self.worst = max(self.worst, loop.time() - before - PROBE_S)


class Memory(threading.Thread):
    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak = rss_mb()
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.05):
            self.peak = max(self.peak, rss_mb())


def request(path: str, cmd: str, **args: object) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    sock.sendall(json.dumps({"id": 1, "cmd": cmd, "args": args}).encode() + b"\n")
    return sock


def answer(sock: socket.socket) -> dict:
    data = b""
    while not data.endswith(b"\n"):
        chunk = sock.recv(1 << 20)
        if not chunk:
            break
        data += chunk
    sock.close()
    return json.loads(data)


async def phase(daemon: Daemon, name: str, seconds: float, clients) -> dict:  # noqa: ANN001
    probe, memory = Probe(), Memory()
    before = rss_mb()
    memory.start()
    probe_task = asyncio.create_task(probe.run())
    await asyncio.sleep(0.2)
    probe.worst = 0.0
    results: list[object] = []
    workers = [threading.Thread(target=lambda c=c: results.append(c()), daemon=True)
               for c in clients]
    started = time.monotonic()
    for worker in workers:
        worker.start()
    longest_commit = 0.0
    while time.monotonic() - started < seconds or any(w.is_alive() for w in workers):
        commit_started = time.monotonic()
        with daemon.store.transaction():  # a card, as most of a dealing table's steps are
            daemon.store.append_entry("card", {"phase": name}, device="shoe")
        longest_commit = max(longest_commit, time.monotonic() - commit_started)
        await asyncio.sleep(TICK_S)
        if time.monotonic() - started > 600:
            raise SystemExit(f"{name}: clients still busy after 600 s")
    elapsed = time.monotonic() - started
    probe_task.cancel()
    memory.stop.set()
    memory.join()
    return {"phase": name, "stall_ms": probe.worst * 1000, "growth_mb": memory.peak - before,
            "seconds": elapsed, "results": results, "commit_ms": longest_commit * 1000}


async def main(entries: int, seconds: float) -> int:
    print(describe())
    with tempfile.TemporaryDirectory(prefix="bench-control-") as tmp:
        config = load_config(CONFIG, [f"store.path={tmp}/table.sqlite",
                                      f"control.socket={tmp}/control.sock",
                                      f"access.subscriber_stall_s={max(1, seconds / 2):g}"])
        print(f"building a {entries:,}-entry event log ... ", end="", flush=True)
        print(f"{build(config, entries):.0f} s")
        daemon = Daemon(config, devices={"shoe": StandInDevice("shoe")})
        stop = asyncio.Event()
        run = asyncio.create_task(daemon.run(stop))
        while not Path(config.control_socket).exists():
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)
        path = config.control_socket
        holder: list[socket.socket] = []

        def silent_subscriber() -> str:
            holder.append(request(path, "subscribe", after_seq=0))
            return "subscribed, reading nothing"

        def verify() -> object:
            reply = answer(request(path, "verify_chain", full=True))
            return reply.get("result", reply.get("error"))

        figures = [
            await phase(daemon, "reference: the table alone", seconds, []),
            await phase(daemon, "a subscriber from seq 0 that never reads", seconds,
                        [silent_subscriber]),
            await phase(daemon, "2 concurrent full chain verifications, twice", seconds,
                        [verify, verify]),
        ]
        figures[2]["results"] += (await phase(daemon, "(second pair)", 0, [verify, verify])
                                  )["results"]
        dropped = daemon.store.events(kind="subscriber_dropped", limit=1)
        for sock in holder:
            sock.close()
        stop.set()
        await run
    failed = False
    for f in figures:
        ok = f["stall_ms"] <= STALL_LIMIT_MS and f["growth_mb"] <= GROWTH_LIMIT_MB
        failed |= not ok
        print(f"{f['phase']}: largest loop stall {f['stall_ms']:.1f} ms (limit "
              f"{STALL_LIMIT_MS:.0f}), memory growth {f['growth_mb']:.1f} MB (limit "
              f"{GROWTH_LIMIT_MB:.0f}) over {f['seconds']:.1f} s - {'ok' if ok else 'OVER'}; "
              f"the table's own longest commit {f['commit_ms']:.1f} ms")
    print(f"subscriber dropped: {dropped[0].payload['reason'] if dropped else 'no'}")
    answers = [r.get("entries", r) if isinstance(r, dict) else r for r in figures[2]["results"]]
    print(f"verifications answered (entries checked; concurrent ones share a run): {answers}")
    child_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"the verifications' child processes (spawned per check, then gone): peak "
          f"{child_mb:.0f} MB resident each")
    print("(a shared machine: other work on it inflates stalls; the limits are for a Pi 4)")
    return 1 if failed else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--seconds", type=float, default=10.0)
    options = parser.parse_args()
    sys.exit(asyncio.run(main(options.entries, options.seconds)))
