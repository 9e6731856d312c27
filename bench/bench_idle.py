"""CPU of an idle daemon: the daemon's own threads apart from the simulators' threads.

    .venv/bin/python bench/bench_idle.py [--idle-seconds 20]

A table waits between shoes and between rounds far longer than it deals. The
daemon runs on simulated hardware exactly as `./run-simulated-table` starts it;
the simulated shuffler and the GPIO pin bridge run threads inside the daemon's
process (they stand in for a USB device and a relay board), named "sim-..." for
the OS (hil/os_threads.py), and are excluded from the daemon's figure. The
reference is one core (100 %); the target is <= 0.3 % of it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.machine import header, pi4  # noqa: E402
from hil.os_threads import SIMULATOR_THREAD_PREFIX  # noqa: E402
from hil.table_harness import TableHarness  # noqa: E402

CONFIG = ROOT / "config" / "simulated-table.toml"
TICKS = os.sysconf("SC_CLK_TCK")
TARGET = 0.003


def thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds per thread of `pid`, keyed 'tid name'."""
    out: dict[str, float] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            stat = (task / "stat").read_text()
        except OSError:
            continue  # the thread ended meanwhile
        name = stat[stat.index("(") + 1: stat.rindex(")")]
        fields = stat.rsplit(")", 1)[1].split()
        out[f"{task.name} {name}"] = (int(fields[11]) + int(fields[12])) / TICKS
    return out


async def measure(idle_seconds: float) -> tuple[float, float, dict[str, float]]:
    with tempfile.TemporaryDirectory() as tmp:
        async with TableHarness(CONFIG, Path(tmp) / "idle", seed=5) as table:
            assert table.daemon is not None
            await table.play(shoes=1)
            await asyncio.sleep(1.0)  # let the end of the shoe settle
            before = thread_cpu(table.daemon.pid)
            await asyncio.sleep(idle_seconds)
            after = thread_cpu(table.daemon.pid)
    used = {key: after[key] - before.get(key, 0.0) for key in after}
    sim = sum(v for k, v in used.items() if k.split(" ", 1)[1].startswith(SIMULATOR_THREAD_PREFIX))
    own = sum(used.values()) - sim
    return own / idle_seconds, sim / idle_seconds, used


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle-seconds", type=float, default=20.0)
    args = parser.parse_args()
    header("bench_idle: CPU of the daemon while the table waits")
    own, sim, per_thread = asyncio.run(measure(args.idle_seconds))
    print(f"idle {args.idle_seconds:.0f} s after a shoe, daemon's own threads: {own * 100:6.3f} % "
          f"of one core (100 %)   target <= {TARGET * 100:.1f} %   "
          f"{'OK' if own <= TARGET else 'OVER'}   Pi 4 estimate {pi4(own) * 100:6.3f} %")
    print(f"simulators' threads in the same process (excluded):   {sim * 100:6.3f} %")
    for key, seconds in sorted(per_thread.items(), key=lambda kv: -kv[1])[:6]:
        print(f"    thread {key:<28} {seconds / args.idle_seconds * 100:6.3f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
