"""What every benchmark prints first: the machine it ran on, and a labelled Pi 4 estimate.

The figures that matter are the daemon's on a Raspberry Pi 4. A benchmark here
measures this machine, and scales CPU-bound times by PI4_SLOWDOWN to give an
*estimate* for a Pi 4, always printed as such beside the measured figure.

PI4_SLOWDOWN = 4.0: a Pi 4 (Cortex-A72, 1.5 GHz) runs single-threaded CPython
roughly 3 to 5 times slower than the x86-64 cores this project's CI machines
have (pyperformance-style figures for the two classes of core); 4 is the middle
of that range. It is a rough factor, not a measurement: where the estimate is
near a target, measure on a Pi (the same command runs there). Storage is not
scaled: an SD card's flush is modelled separately with `[store] flush_delay_ms`.
"""

from __future__ import annotations

import os
import platform
import sys
import time

PI4_SLOWDOWN = 4.0


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
    return seconds * PI4_SLOWDOWN


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
    print(f"Pi 4 estimates below are this machine's figure x {PI4_SLOWDOWN:g} "
          "(bench/machine.py says why); they are estimates, not measurements.")
