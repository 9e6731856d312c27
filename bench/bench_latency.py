"""End-to-end latency through the daemon process, and the flushes a shoe costs.

    .venv/bin/python bench/bench_latency.py [--shoes 1] [--flush-delay-ms 5] [--no-strace]

The daemon runs as its own process on simulated hardware (hil/table_harness.py,
as `./run-simulated-table` runs it) and three figures are taken:

* card -> decision: from the simulated shoe putting a CardDrawn frame on the
  pseudo-terminal to a control-socket subscriber receiving the daemon's prompt
  saying where the next card goes. Target p99 <= 1 ms with normal storage and
  <= 5 ms when every flush takes `--flush-delay-ms` longer (`[store]
  flush_delay_ms`, an SD card). A card that completes a round is timed apart, to
  the prompt after the settlement: the settlement is money and is flushed before
  the daemon reports it (docs/architecture.md, "Durable writes"), so it carries
  one flush by design.
* lock-out -> lock saved and reported: from the GPIO bridge driving the lock-out
  pin to the subscriber receiving the `no_more_bets` event, which the daemon
  publishes only after the lock's step is flushed.
* flushes per shoe: fsync/fdatasync calls of the daemon's process during one
  shoe, counted with strace, beside the rounds and the money-changing steps
  (wagers accepted, locks, settlements and voids, vigorish, meters and awards).
  Target: at most one per round plus one per money-changing step.

The subscriber runs in the benchmark's own event loop beside the simulated
dealer, so the figures include one local socket hop and the dealer's loop: they
are an upper bound of what the daemon itself adds.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.machine import header, pi4  # noqa: E402
from controller.control import ControlClient  # noqa: E402
from hil.table_harness import TableHarness  # noqa: E402

CONFIG = ROOT / "config" / "simulated-table.toml"
MONEY_KINDS = ("wager_accepted", "no_more_bets", "round_settled", "round_void",
               "vigorish_collected", "progressive_accepted", "progressive_wagers_returned",
               "jackpot_validated")
MONEY_PREFIXES = ("meter_", "progressive_award", "award_")


@dataclass
class Timings:
    card_ns: list[int] = field(default_factory=list)  # -> where the next card goes
    round_end_ns: list[int] = field(default_factory=list)  # -> settled, flushed, next prompt
    lock_ns: list[int] = field(default_factory=list)
    card_sent_at: int | None = None
    card_sent_wall = 0.0  # time.time() of the same moment: the daemon stamps entries with it
    lock_pressed_at: int | None = None


class TimedTable(TableHarness):
    """The simulated table, noting when the dealer puts a card or a lock-out on the wire."""

    timings: Timings

    async def _do(self, action: str, payload: dict[str, Any]) -> bool:
        if action in ("burn", "deal", "set_aside"):
            self.timings.card_sent_wall = time.time()
            self.timings.card_sent_at = time.perf_counter_ns()
        return await super()._do(action, payload)

    def _press_lockout(self) -> None:
        self.timings.lock_pressed_at = time.perf_counter_ns()
        super()._press_lockout()


async def watch(socket: str, timings: Timings) -> None:
    """Runs until cancelled: stamps the prompts and locks as they arrive."""
    stream = await ControlClient(socket).connect()
    try:
        async for event in stream.subscribe(0):
            now = time.perf_counter_ns()
            # The simulated dealer reads the same prompts on its own connection in this
            # loop, and may already have sent the next card when this one is read: a prompt
            # the daemon logged before that card was sent answers an earlier card.
            if (event["kind"] == "prompt" and timings.card_sent_at is not None
                    and event["at"] >= timings.card_sent_wall):
                decided_card = event["payload"].get("action") in ("deal", "burn", "set_aside")
                (timings.card_ns if decided_card else timings.round_end_ns).append(
                    now - timings.card_sent_at)
                timings.card_sent_at = None
            elif event["kind"] == "no_more_bets" and timings.lock_pressed_at is not None:
                timings.lock_ns.append(now - timings.lock_pressed_at)
                timings.lock_pressed_at = None
    finally:
        await stream.close()


def is_money(kind: str) -> bool:
    return kind in MONEY_KINDS or kind.startswith(MONEY_PREFIXES)


async def run_shoes(shoes: int, workdir: Path, flush_delay_ms: float,
                    count_flushes: bool) -> tuple[Timings, dict[str, int]]:
    timings = Timings()
    overrides = [f"store.flush_delay_ms={flush_delay_ms}"] if flush_delay_ms else []
    table = TimedTable(CONFIG, workdir, seed=7, extra_overrides=overrides)
    table.timings = timings
    async with table:
        assert table.daemon is not None
        watcher = asyncio.create_task(watch(table.socket, timings))
        tracer = None
        if count_flushes:
            tracer = subprocess.Popen(
                ["strace", "-f", "-qq", "-c", "-e", "trace=fsync,fdatasync",
                 "-p", str(table.daemon.pid)],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            await asyncio.sleep(1.0)  # attached to every thread before the shoe starts
        result = await table.play(shoes=shoes)
        counts = {"rounds": len(result.rounds) + len(result.void_rounds),
                  "money_steps": sum(1 for e in result.events if is_money(e["kind"])),
                  "flushes": -1}
        if tracer is not None:
            await asyncio.sleep(0.5)
            tracer.send_signal(2)  # SIGINT: strace detaches and prints its summary
            _, summary = tracer.communicate(timeout=30)
            counts["flushes"] = sum(int(m.group(1)) for m in re.finditer(
                r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(?:fsync|fdatasync)\s*$",
                summary, re.MULTILINE))
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
    return timings, counts


def line(name: str, samples_ns: list[int], target_ms: float) -> str:
    if not samples_ns:
        return f"{name}: no samples"
    ms = sorted(s / 1e6 for s in samples_ns)
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    verdict = "OK" if p99 <= target_ms else "OVER"
    return (f"{name:<44} n={len(ms):4d}  p50 {statistics.median(ms):6.2f} ms  "
            f"p99 {p99:6.2f} ms  max {ms[-1]:6.2f} ms   target p99 <= {target_ms:g} ms {verdict}"
            f"   (Pi 4 estimate p99 {pi4(p99):5.2f} ms)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shoes", type=int, default=1)
    parser.add_argument("--flush-delay-ms", type=float, default=5.0)
    parser.add_argument("--no-strace", action="store_true", help="skip the flush count")
    args = parser.parse_args()
    header("bench_latency: through the daemon process, the pseudo-terminal and the GPIO bridge")
    with tempfile.TemporaryDirectory() as tmp:
        normal, _ = asyncio.run(run_shoes(args.shoes, Path(tmp) / "normal", 0, False))
        slow, _ = asyncio.run(run_shoes(args.shoes, Path(tmp) / "slow", args.flush_delay_ms,
                                        False))
        print(line("card -> decision, normal storage", normal.card_ns, 1.0))
        print(line(f"card -> decision, {args.flush_delay_ms:g} ms flushes", slow.card_ns, 5.0))
        print(line("last card -> settled (one flush), normal", normal.round_end_ns, 5.0))
        print(line(f"last card -> settled, {args.flush_delay_ms:g} ms flushes", slow.round_end_ns,
                   5.0 + args.flush_delay_ms))
        print(line("lock-out -> saved and reported, normal", normal.lock_ns, 5.0))
        print(line(f"lock-out -> saved and reported, {args.flush_delay_ms:g} ms flushes",
                   slow.lock_ns, 5.0 + args.flush_delay_ms))
        if args.no_strace or shutil.which("strace") is None:
            print("flushes per shoe: not counted (strace absent or --no-strace)")
            return 0
        _, counts = asyncio.run(run_shoes(args.shoes, Path(tmp) / "traced", 0, True))
    bound = counts["rounds"] + counts["money_steps"]
    verdict = "OK" if 0 <= counts["flushes"] <= bound else "OVER"
    print(f"flushes (fsync+fdatasync) for {args.shoes} shoe(s): {counts['flushes']}   rounds "
          f"{counts['rounds']}   money-changing steps {counts['money_steps']}   bound rounds + "
          f"money steps = {bound}   {verdict}   "
          f"({counts['flushes'] / max(1, counts['rounds']):.1f} a round)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
