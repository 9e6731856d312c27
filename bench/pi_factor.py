"""How much slower a Raspberry Pi 4 runs this project's Python: measured, not assumed.

    .venv/bin/python bench/pi_factor.py [--steps 500000]

The published run: "Performance Analysis of Languages on Raspberry Pi" (Chaitanya Mehta,
chaitanyamehta.github.io/projects/performance-analysis-of-programming-languages) timed the
Computer Language Benchmarks Game's n-body problem (five bodies: the Sun and the four gas
giants, time step 0.01, five million steps) in Python on a Raspberry Pi 4 Model B (Rev
1.1, 4 GB, BCM2711 at 1.5 GHz, headless): 158.263 s with the performance governor
(158.393 s on-demand). That is 31.65 us a step. The page does not give the Python
version; the Raspberry Pi OS of the time shipped Python 3.7.

Here the same problem, written out below from its definition (the bodies' published
initial conditions, the pairwise advance and the energy), runs `--steps` steps in this
interpreter; the factor is the Pi's time a step over this machine's, both for a plain
pure-Python float loop like the published program. CPython 3.11 runs such a loop about
1.25x faster than 3.7 (the Faster CPython project's own pyperformance figures for 3.11
against 3.10, and 3.10 about level with 3.7 on float-heavy code), so a Pi 4 running this
project's Python 3.11 would be about the printed factor / 1.25: both are printed.
The energy printed before and after is the Benchmarks Game's check (-0.169075164 at the
start, -0.169087605 after 1,000 steps, as the game's output file gives), so the work
done is the published work. The figure is the published run's single sitting: a Pi's
own run of this file (`--steps 500000` takes about 16 s there) replaces it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.machine import header  # noqa: E402

PUBLISHED_PI4_S = 158.263  # performance governor, 5,000,000 steps
PUBLISHED_STEPS = 5_000_000
PY37_TO_311 = 1.25  # CPython 3.11 over 3.7 on a float loop (see the docstring)

SOLAR_MASS = 4 * 3.141592653589793 ** 2
DAYS_PER_YEAR = 365.24


def bodies() -> list[list[float]]:
    """[x, y, z, vx, vy, vz, mass] of the Sun, Jupiter, Saturn, Uranus and Neptune, in the
    Benchmarks Game's units (AU, AU per year, solar masses x 4 pi^2)."""
    planets = [
        (4.84143144246472090e+00, -1.16032004402742839e+00, -1.03622044471123109e-01,
         1.66007664274403694e-03, 7.69901118419740425e-03, -6.90460016972063023e-05,
         9.54791938424326609e-04),
        (8.34336671824457987e+00, 4.12479856412430479e+00, -4.03523417114321381e-01,
         -2.76742510726862411e-03, 4.99852801234917238e-03, 2.30417297573763929e-05,
         2.85885980666130812e-04),
        (1.28943695621391310e+01, -1.51111514016986312e+01, -2.23307578892655734e-01,
         2.96460137564761618e-03, 2.37847173959480950e-03, -2.96589568540237556e-05,
         4.36624404335156298e-05),
        (1.53796971148509165e+01, -2.59193146099879641e+01, 1.79258772950371181e-01,
         2.68067772490389322e-03, 1.62824170038242295e-03, -9.51592254519715870e-05,
         5.15138902046611451e-05),
    ]
    system = [[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, SOLAR_MASS]]
    for x, y, z, vx, vy, vz, mass in planets:
        system.append([x, y, z, vx * DAYS_PER_YEAR, vy * DAYS_PER_YEAR, vz * DAYS_PER_YEAR,
                       mass * SOLAR_MASS])
    # The Sun takes the momentum that leaves the system's centre of mass at rest.
    px = sum(b[3] * b[6] for b in system)
    py = sum(b[4] * b[6] for b in system)
    pz = sum(b[5] * b[6] for b in system)
    sun = system[0]
    sun[3], sun[4], sun[5] = -px / SOLAR_MASS, -py / SOLAR_MASS, -pz / SOLAR_MASS
    return system


def energy(system: list[list[float]]) -> float:
    total = 0.0
    for i, a in enumerate(system):
        total += 0.5 * a[6] * (a[3] * a[3] + a[4] * a[4] + a[5] * a[5])
        for b in system[i + 1:]:
            dx, dy, dz = a[0] - b[0], a[1] - b[1], a[2] - b[2]
            total -= a[6] * b[6] / (dx * dx + dy * dy + dz * dz) ** 0.5
    return total


def advance(system: list[list[float]], steps: int, dt: float = 0.01) -> None:
    pairs = [(system[i], system[j]) for i in range(len(system))
             for j in range(i + 1, len(system))]
    for _ in range(steps):
        for a, b in pairs:
            dx, dy, dz = a[0] - b[0], a[1] - b[1], a[2] - b[2]
            distance2 = dx * dx + dy * dy + dz * dz
            magnitude = dt / (distance2 * distance2 ** 0.5)
            mb, ma = b[6] * magnitude, a[6] * magnitude
            a[3] -= dx * mb
            a[4] -= dy * mb
            a[5] -= dz * mb
            b[3] += dx * ma
            b[4] += dy * ma
            b[5] += dz * ma
        for body in system:
            body[0] += dt * body[3]
            body[1] += dt * body[4]
            body[2] += dt * body[5]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500_000)
    args = parser.parse_args()
    header("pi_factor: a published Pi 4 n-body run against the same problem here")
    system = bodies()
    print(f"energy before {energy(system):.9f} (the game's: -0.169075164)")
    started = time.process_time()
    advance(system, args.steps)
    spent = time.process_time() - started
    print(f"energy after {args.steps:,} steps {energy(system):.9f}")
    here_us = spent / args.steps * 1e6
    pi_us = PUBLISHED_PI4_S / PUBLISHED_STEPS * 1e6
    factor = pi_us / here_us
    print(f"here: {here_us:.2f} us a step (CPU); published Pi 4: {pi_us:.2f} us a step")
    print(f"Pi 4 factor, the published run's Python: {factor:.1f}x; with this project's "
          f"Python 3.11 on the Pi (/ {PY37_TO_311}): {factor / PY37_TO_311:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
