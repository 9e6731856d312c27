"""Property: whatever a sensor does, the debounced changes are exactly the levels that were
held for at least the debounce time, in order (fake clock, no sleeping)."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.protocols import SeatSensorChanged
from drivers.seats import CHATTER_EDGES, DEBOUNCE_S, GpioSeatPanel

from .conftest import LOCKOUT_PIN, TEN_SEATS, FakeClock

# Gaps between edges in milliseconds: bounces (< 50 ms) and settled levels (>= 50 ms).
gaps_ms = st.lists(st.integers(min_value=1, max_value=120), min_size=1, max_size=CHATTER_EDGES - 2)


def expected_changes(gaps: list[int]) -> list[bool]:
    """Levels after each edge (start: no chip; edges alternate) that lasted >= the debounce."""
    out: list[bool] = []
    shown = False
    level = False
    for gap in gaps:
        level = not level
        if gap >= DEBOUNCE_S * 1000 and level != shown:
            out.append(level)
            shown = level
    return out


@settings(max_examples=40, deadline=None)
@given(gaps=gaps_ms)
def test_debounced_changes_are_exactly_the_settled_levels(gaps: list[int]) -> None:
    async def run() -> list[bool]:
        clock = FakeClock()
        emitted: list[object] = []
        panel = GpioSeatPanel("seats", TEN_SEATS, LOCKOUT_PIN, pin_factory="mock", clock=clock,
                              background=False)
        await panel.start(emitted.append)
        try:
            panel.open_betting(frozenset(TEN_SEATS))
            pin = panel.pin_factory.pin(TEN_SEATS[1].sensor_pin)
            level = False
            start = clock.now
            for gap in gaps:
                level = not level
                if level:
                    pin.drive_low()  # active-low: chip placed
                else:
                    pin.drive_high()
                # Tick just before the debounce elapses, when it elapses, and at the next edge:
                # the instants at which a tick could see something different.
                debounce_ms = round(DEBOUNCE_S * 1000)
                for at in sorted({min(gap, debounce_ms - 1), min(gap, debounce_ms), gap}):
                    clock.now = start + at / 1000
                    panel.tick()
                start += gap / 1000
            return [e.present for e in emitted if isinstance(e, SeatSensorChanged)]
        finally:
            await panel.stop()

    assert asyncio.run(run()) == expected_changes(gaps)
