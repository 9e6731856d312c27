"""The daemon's start-to-ready time, resident memory during a shoe, and CPU use while idle.

    .venv/bin/python bench/bench_daemon.py [--idle-seconds 10]

Each figure is printed beside a reference measured in the same run:
- start-to-ready against a bare `python -c pass` of the same interpreter,
- resident memory against that bare interpreter's,
- idle CPU against one core (100%).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

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


async def measure(idle_seconds: float) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        ready_times = []
        for attempt in range(3):
            harness = TableHarness(CONFIG, Path(tmp) / f"start{attempt}", seed=attempt)
            from hil.shoe_sim import SimulatedShoe
            from cards import BackColour

            harness.shoe = SimulatedShoe([], BackColour.RED, 0)
            await harness.shoe.start()
            start = time.perf_counter()
            await harness.start_daemon()  # returns once the control socket answers
            ready_times.append(time.perf_counter() - start)
            await harness.stop_daemon()
            await harness.shoe.stop()

        async with TableHarness(CONFIG, Path(tmp) / "shoe", seed=11) as table:
            assert table.daemon is not None
            pid = table.daemon.pid
            peak = 0
            sampler_done = asyncio.Event()

            async def sample() -> None:
                nonlocal peak
                while not sampler_done.is_set():
                    peak = max(peak, rss_kib(pid))
                    await asyncio.sleep(0.05)

            sampler = asyncio.create_task(sample())
            started = time.perf_counter()
            cpu_before = cpu_seconds(pid)
            result = await table.play(shoes=1)
            shoe_wall = time.perf_counter() - started
            shoe_cpu = cpu_seconds(pid) - cpu_before
            sampler_done.set()
            await sampler
            idle_before = cpu_seconds(pid)
            await asyncio.sleep(idle_seconds)
            idle_cpu = cpu_seconds(pid) - idle_before
        return {"ready_s": statistics.median(ready_times), "peak_rss_kib": peak,
                "rounds": len(result.rounds), "shoe_wall_s": shoe_wall, "shoe_cpu_s": shoe_cpu,
                "idle_cpu_fraction": idle_cpu / idle_seconds}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle-seconds", type=float, default=10.0)
    args = parser.parse_args()
    bare_start, bare_rss = bare_interpreter()
    m = asyncio.run(measure(args.idle_seconds))
    print(f"start-to-ready (control socket answering), median of 3: {m['ready_s'] * 1000:8.0f} ms"
          f"   bare interpreter start: {bare_start * 1000:6.0f} ms"
          f"   ratio {m['ready_s'] / bare_start:6.1f}x")
    print(f"resident memory, peak during a shoe:                    {m['peak_rss_kib'] / 1024:8.1f} MiB"
          f"   bare interpreter:       {bare_rss / 1024:6.1f} MiB"
          f"   ratio {m['peak_rss_kib'] / bare_rss:6.1f}x")
    print(f"CPU while idle ({args.idle_seconds:.0f} s, whole process, simulators too):   "
          f"{m['idle_cpu_fraction'] * 100:8.2f} %   of one core (100 %)"
          f"   ratio {m['idle_cpu_fraction']:.4f}")
    print(f"one shoe: {m['rounds']} rounds in {m['shoe_wall_s']:.1f} s wall, daemon CPU "
          f"{m['shoe_cpu_s']:.1f} s ({m['shoe_cpu_s'] / m['rounds'] * 1000:.0f} ms a round)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
