"""Issue 31's Done-when items in one sitting: each benchmark in turn, then one table.

    .venv/bin/python bench/done_when.py [--shoes 12] [--entries 1000000] [--sittings 1]

The issue asks for its figures "in one run on this machine, by the benchmarks". This runs
them one after the other, each in a process of its own as a user would run it (their own
output passes through, each headed by the host's speed), and ends with a table of every
item: the figure, the target, and whether it held. The timed items are ratios to floors
taken in the same run, or milliseconds beside the same run's flush; still, take the sitting
on a quiet machine, since a second load on two cores moves the daemon and its floor apart.

`--sittings N` runs the whole sitting N times in a row and ends with each item's tally over
them: in how many it held, and its figure in each, beside the interpreter's speed
(bench/machine.py). This host's speed moves up to 2x within an hour, and a p99 with it; one
sitting says how this hour went, several how the item stands.

The power-cut item is a campaign, not a benchmark: the table ends with its command.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_card_step import TARGET_US as CARD_STEP_TARGET_US  # noqa: E402
from bench.bench_daemon import READY_TARGET_MS, SHOE_TARGET_WIRES  # noqa: E402
from bench.bench_latency import (  # noqa: E402
    BEYOND_SLOW_FLUSH_TARGET_MS, CARD_TARGET_FLOORS, FLUSHES_A_ROUND, LAST_CARD_TARGET_FLOORS)
from bench.machine import calibration_ms, header  # noqa: E402

Figures = dict[str, float]

POWER_CUTS = ("TABLE_POWER_CUTS=1000 TABLE_POWER_CUT_SEED=<seed> "
              "./run-tests hil/test_power_cuts.py -s")


@dataclass(frozen=True)
class Item:
    """One Done-when item as this sitting found it."""

    name: str
    figure: str
    target: str
    held: bool
    value: float  # what is judged against the target, in `unit`
    unit: str


def items(card: Figures, latency: Figures, shoe: Figures, start: Figures) -> list[Item]:
    """The Done-when items, in the issue's order, from the benchmarks' figures (`--json`),
    each judged by the target its benchmark states."""
    floor = latency["floor_p99_ms"]
    delay = latency["flush_delay_ms"]
    slow_ms = delay + BEYOND_SLOW_FLUSH_TARGET_MS
    card_ratio = latency["card_p99_ms"] / floor
    last_ratio = latency["last_card_p99_ms"] / floor
    shoe_ratio = shoe["shoe_wall_s"] / shoe["shoe_wire_s"]
    ready_ms = max(start["ready_ms"], start["ready_first_ms"])
    flushes, bound = latency["flushes_a_shoe"], latency["flush_bound_a_shoe"]
    return [
        Item("card -> decision p99", f"{latency['card_p99_ms']:.2f} ms = {card_ratio:.1f}x the "
             f"floor's {floor:.2f} ms (without the cards C26 flushes before: "
             f"{latency['card_p99_without_c26_ms'] / floor:.1f}x)",
             f"<= {CARD_TARGET_FLOORS}x the floor",
             card_ratio <= CARD_TARGET_FLOORS, card_ratio, "x the floor"),
        Item("the round's last card p99", f"{latency['last_card_p99_ms']:.2f} ms = "
             f"{last_ratio:.1f}x the floor", f"<= {LAST_CARD_TARGET_FLOORS}x the floor",
             last_ratio <= LAST_CARD_TARGET_FLOORS, last_ratio, "x the floor"),
        Item(f"lock-out -> reported p99, {delay:g} ms flushes",
             f"{latency['slow_lock_p99_ms']:.2f} ms", f"<= {slow_ms:g} ms",
             latency["slow_lock_p99_ms"] <= slow_ms, latency["slow_lock_p99_ms"], "ms"),
        Item(f"round end p99, {delay:g} ms flushes", f"{latency['slow_round_end_p99_ms']:.2f} ms",
             f"<= {slow_ms:g} ms", latency["slow_round_end_p99_ms"] <= slow_ms,
             latency["slow_round_end_p99_ms"], "ms"),
        Item("a HIL shoe / its wire time at 115200",
             f"{shoe['shoe_wall_s']:.2f} s / {shoe['shoe_wire_s']:.2f} s = {shoe_ratio:.2f}x "
             f"(from the shuffle's end {shoe['dealt_wall_s'] / shoe['dealt_wire_s']:.2f}x)",
             f"<= {SHOE_TARGET_WIRES:.1f}x", shoe_ratio <= SHOE_TARGET_WIRES, shoe_ratio,
             "x the wire"),
        Item(f"ready at {start['entries']:,.0f} entries", f"{ready_ms:.0f} ms (the slower of "
             "a start a day after the full check and the median of three)",
             f"<= {READY_TARGET_MS} ms", ready_ms <= READY_TARGET_MS, ready_ms, "ms"),
        Item("card step, thread CPU p50", f"{card['card_step_p50_us']:.1f} us = "
             f"{card['card_step_p50_us'] / card['bare_commit_p50_us']:.1f}x a bare commit",
             f"<= {CARD_STEP_TARGET_US} us", card["card_step_p50_us"] <= CARD_STEP_TARGET_US,
             card["card_step_p50_us"], "us"),
        Item("flushes a shoe", f"{flushes:.1f} (the shoe's own durable steps "
             f"{latency['shoe_steps_a_shoe']:.1f} of them)",
             f"<= {bound:.1f} ({FLUSHES_A_ROUND} a round)", flushes <= bound, flushes,
             "a shoe"),
    ]


def table(found: list[Item]) -> str:
    width = max(len(item.name) for item in found)
    lines = [f"{'item':{width}}  verdict  figure   (target)"]
    lines += [f"{item.name:{width}}  {'held   ' if item.held else 'OVER   '}  {item.figure}   "
              f"({item.target})" for item in found]
    held = sum(item.held for item in found)
    lines.append(f"{held} of {len(found)} held. The power-cut campaign is a test campaign, "
                 f"not a benchmark: {POWER_CUTS}")
    return "\n".join(lines)


@dataclass(frozen=True)
class Sitting:
    """One sitting's verdicts, and how fast the interpreter ran as it began."""

    machine_ms: float
    found: list[Item]


def tally(sittings: list[Sitting]) -> str:
    """Each item over the sittings: in how many it held, and its figure in each, beside the
    interpreter's speed (bench/machine.py's workload, ms: lower is faster)."""
    width = max(len(item.name) for item in sittings[0].found)
    speeds = ", ".join(f"{s.machine_ms:.1f}" for s in sittings)
    lines = [f"issue 31's Done-when items over {len(sittings)} sittings (interpreter speed "
             f"{speeds} ms):", f"{'item':{width}}  held     figure in each sitting   (target)"]
    for column, first in enumerate(sittings[0].found):
        row = [s.found[column] for s in sittings]
        held = sum(item.held for item in row)
        figures = ", ".join(f"{item.value:.2f}" for item in row)
        lines.append(f"{first.name:{width}}  {held} of {len(row)}   {figures} {first.unit}   "
                     f"({first.target})")
    return "\n".join(lines)


def run(script: str, arguments: list[str], out: Path) -> Figures:
    """One benchmark in a process of its own, its output passed through; its figures."""
    command = [sys.executable, str(ROOT / "bench" / script), *arguments, "--json", str(out)]
    print(f"\n$ {' '.join(command[1:])}", flush=True)
    started = time.monotonic()
    subprocess.run(command, check=True, cwd=ROOT)
    print(f"({time.monotonic() - started:.0f} s)", flush=True)
    figures: Figures = json.loads(out.read_text(encoding="utf-8"))
    return figures


def sitting(shoes: int, entries: int, folder: Path) -> Sitting:
    """The four benchmarks in turn (their output passed through), then the verdicts."""
    machine_ms = calibration_ms()
    card = run("bench_card_step.py", ["--shoes", "3"], folder / "card.json")
    latency = run("bench_latency.py", ["--shoes", str(shoes)], folder / "latency.json")
    shoe = run("bench_daemon.py", ["--shoe-only"], folder / "shoe.json")
    start = run("bench_daemon.py", ["--start-only", "--entries", str(entries)],
                folder / "start.json")
    return Sitting(machine_ms, items(card, latency, shoe, start))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shoes", type=int, default=12,
                        help="shoes of each kind in bench_latency.py (default 12)")
    parser.add_argument("--entries", type=int, default=1_000_000,
                        help="the large store's log entries for the start (default 1,000,000)")
    parser.add_argument("--sittings", type=int, default=1,
                        help="whole sittings in a row, then each item's tally (default 1)")
    args = parser.parse_args()
    for name in ("shoes", "entries", "sittings"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} {getattr(args, name)}: allowed: 1 or more")
    if shutil.which("strace") is None:
        parser.error("strace is not installed: bench_latency.py counts the flushes with it "
                     "(apt install strace)")
    header("done_when: issue 31's Done-when items, one benchmark after another")
    done: list[Sitting] = []
    for number in range(1, args.sittings + 1):
        started = time.monotonic()
        with tempfile.TemporaryDirectory() as tmp:
            try:
                done.append(sitting(args.shoes, args.entries, Path(tmp)))
            except subprocess.CalledProcessError as failed:
                print(f"done_when: {' '.join(failed.cmd[1:])} failed (exit {failed.returncode}); "
                      "no verdicts", file=sys.stderr)
                return 1
        which = f"sitting {number} of {args.sittings}," if args.sittings > 1 else "one sitting of"
        print(f"\nissue 31's Done-when items, {which} {time.monotonic() - started:.0f} s "
              f"(interpreter speed {done[-1].machine_ms:.1f} ms):")
        print(table(done[-1].found))
    if len(done) > 1:
        print()
        print(tally(done))
    return 0


if __name__ == "__main__":
    sys.exit(main())
