"""Latency benchmark of the device drivers; a plain script that prints its results.

* Lock-out latency: from the lock-out button's edge (the pin changing, here a
  gpiozero mock pin driven like lgpio's callback thread would see it) to the
  ``LockedOut`` event, i.e. every seat locked (631c.2(d)(2)).
* Card latency: from the shoe's CardDrawn frame being received and decoded by
  the link layer to the driver's ``CardDrawn`` event delivered to ``emit``; and,
  for context, end to end from the simulated shoe sending it over the pty.

Usage: ``.venv/bin/python bench/bench_latency.py [--rounds 2000] [--cards 400]``
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from cards import BackColour  # noqa: E402
from drivers.protocols import CardDrawn, LinkChanged, LinkState, LockedOut  # noqa: E402
from drivers.seats import GpioSeatPanel, SeatPins  # noqa: E402
from drivers.shoe import SerialShoe  # noqa: E402
from firmware_bridge.link import MessageReceived  # noqa: E402
from firmware_bridge.messages import CardDrawn as WireCardDrawn  # noqa: E402
from hil.shoe_sim import SimulatedShoe, build_stack  # noqa: E402

SEATS = {seat: SeatPins(sensor, led) for seat, (sensor, led) in enumerate(zip(
    [4, 5, 6, 12, 13, 16, 17, 18, 19, 20], [21, 22, 23, 24, 25, 26, 27, 7, 8, 9]), start=1)}
LOCKOUT_PIN = 10


def summary(name: str, samples_ns: list[int]) -> str:
    us = sorted(s / 1000 for s in samples_ns)
    p99 = us[min(len(us) - 1, int(len(us) * 0.99))]
    return (f"{name}: n={len(us)}  median {statistics.median(us):8.1f} us  "
            f"p99 {p99:8.1f} us  max {us[-1]:8.1f} us")


async def bench_lockout(rounds: int) -> list[int]:
    edge_at = 0
    samples: list[int] = []

    def emit(event: Any) -> None:
        if isinstance(event, LockedOut):
            samples.append(time.perf_counter_ns() - edge_at)

    # A clock that moves a second per round keeps each press outside the previous edge's
    # debounce window; the latency itself is measured with perf_counter_ns.
    fake_now = [0.0]
    panel = GpioSeatPanel("seats", SEATS, LOCKOUT_PIN, pin_factory="mock", background=False,
                          clock=lambda: fake_now[0])
    await panel.start(emit)
    factory = panel.pin_factory
    button = factory.pin(LOCKOUT_PIN)
    sensors = [factory.pin(p.sensor_pin) for p in SEATS.values()]
    rng = random.Random(1)
    try:
        for _ in range(rounds):
            for pin in sensors:
                if not pin.state:
                    pin.drive_high()
            panel.open_betting(frozenset(SEATS))
            for pin in rng.sample(sensors, 4):
                pin.drive_low()
            fake_now[0] += 1.0
            edge_at = time.perf_counter_ns()
            button.drive_low()
            button.drive_high()
    finally:
        await panel.stop()
    return samples


async def bench_cards(cards: int) -> tuple[list[int], list[int]]:
    stack, cover = build_stack(8, random.Random(2))
    sim = SimulatedShoe(stack, BackColour.RED, len(stack))
    await sim.start()
    frame_at: dict[int, int] = {}
    sent_at: dict[int, int] = {}
    from_frame: list[int] = []
    end_to_end: list[int] = []
    up = asyncio.Event()

    def emit(event: Any) -> None:
        now = time.perf_counter_ns()
        if isinstance(event, LinkChanged) and event.state is LinkState.UP:
            up.set()
        elif isinstance(event, CardDrawn):
            from_frame.append(now - frame_at.pop(event.index))
            end_to_end.append(now - sent_at.pop(event.index))

    def on_link_event(event: Any) -> None:
        if isinstance(event, MessageReceived) and isinstance(event.message, WireCardDrawn):
            frame_at[event.message.index] = time.perf_counter_ns()

    shoe = SerialShoe("shoe", sim.port)
    await shoe.start(emit)
    try:
        await asyncio.wait_for(up.wait(), 10)
        await sim.wait_host(10)
        # The link layer's per-event hook marks the instant the frame was decoded.
        shoe._link.on_event = on_link_event
        for index in range(min(cards, len(stack))):
            sent_at[index] = time.perf_counter_ns()
            await sim.draw()
        while len(from_frame) < min(cards, len(stack)):
            await asyncio.sleep(0.01)
    finally:
        await shoe.stop()
        await sim.stop()
    return from_frame, end_to_end


async def main() -> None:
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000, help="lock-outs to time")
    parser.add_argument("--cards", type=int, default=400, help="cards to deal (at most 416)")
    args = parser.parse_args()
    lockout = await bench_lockout(args.rounds)
    print(summary("lock-out (button edge -> every seat locked)", lockout))
    frame, e2e = await bench_cards(args.cards)
    print(summary("card (frame received -> CardDrawn delivered)", frame))
    print(summary("card (simulated shoe send -> CardDrawn delivered, over the pty)", e2e))


if __name__ == "__main__":
    asyncio.run(main())
