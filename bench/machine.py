"""What every benchmark prints first: the machine it ran on, and a labelled Pi 4 estimate.

The figures that matter are the daemon's on a Raspberry Pi 4. A benchmark here measures
this machine, and scales CPU-bound times by the Pi 4 factor to give an *estimate* for a
Pi 4, always printed as such beside the measured figure.

The factor is measured in the same run, not assumed (issue 31): bench/pi_factor.py runs
the Benchmarks Game's n-body problem, for which a published run gives a Raspberry Pi 4's
time in Python (31.65 us a step; that file names the run and says how it compares), for
a few thousand steps here, and the factor is the Pi's time a step over this run's. A VM
whose Python runs slower today gets a smaller factor, so the estimate follows the Pi, not
the day. It is the published run's Python (3.7 era) on the Pi: this project's 3.11 there
would be about 1.25x faster, so the estimates lean slow. Where an estimate is near a
target, measure on a Pi (the same command runs there). Storage is not scaled: an SD
card's flush is modelled separately with `[store] flush_delay_ms`.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path

_factor: float | None = None


def pi4_factor() -> float:
    """A Pi 4's time over this machine's for the same pure-Python work, measured now (the
    best of three short n-body runs against the published Pi 4 run; bench/pi_factor.py)."""
    global _factor
    if _factor is None:
        from bench.pi_factor import PUBLISHED_PI4_S, PUBLISHED_STEPS, advance, bodies

        steps, best = 20_000, float("inf")
        for _ in range(3):
            system = bodies()
            started = time.process_time()
            advance(system, steps)
            best = min(best, time.process_time() - started)
        _factor = (PUBLISHED_PI4_S / PUBLISHED_STEPS) / (best / steps)
    return _factor


def describe() -> str:
    """One line naming this machine: CPU model, cores, load, Python."""
    model = platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith(("model name", "Model")):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"machine: {model}, {os.cpu_count()} cores, load average {load:.2f}; "
            f"Python {platform.python_version()} ({sys.implementation.name})")


def pi4(seconds: float) -> float:
    """A CPU-bound time on this machine scaled to a Pi 4 (an estimate, see the docstring)."""
    return seconds * pi4_factor()


def calibration_ms() -> float:
    """The best of five runs of one fixed pure-Python workload (a loop of integer
    arithmetic, dict and list traffic), in ms. This VM's speed changes from day to day
    (other tenants, the host): the same figure, printed by every benchmark, says how fast
    the interpreter ran in this run, so figures from different days can be compared."""
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        table: dict[int, int] = {}
        items: list[int] = []
        for number in range(100_000):
            table[number & 1023] = table.get(number & 1023, 0) + number
            items.append(number % 7)
        best = min(best, time.perf_counter() - started)
    return best * 1e3


def header(title: str) -> None:
    print(title)
    print(describe())
    print(f"interpreter speed in this run: {calibration_ms():.1f} ms for bench/machine.py's "
          "fixed workload (lower is faster; it varies with this VM's host from day to day)")
    print(f"Pi 4 estimates below are this machine's figure x {pi4_factor():.1f}, the factor "
          "measured in this run against a published Pi 4 n-body run (bench/pi_factor.py); "
          "they are estimates, not measurements.")


def write_figures(path: Path | None, figures: dict[str, float]) -> None:
    """A benchmark's figures as JSON to `path` (its `--json`; bench/done_when.py reads them),
    if it was given."""
    if path is not None:
        path.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
