"""Capped exponential backoff as a sans-I/O state object."""

from __future__ import annotations

import random

import pytest

from drivers.protocols import LinkState
from drivers.reconnect import ReconnectPolicy, Reconnector


def _no_jitter(**kw: float) -> Reconnector:
    return Reconnector(ReconnectPolicy(jitter=0.0, **kw), random.Random(1))


def test_missing_device_at_start_up_is_retrying_with_doubling_capped_delays() -> None:
    rec = _no_jitter(initial_delay_s=0.5, max_delay_s=4.0)
    delays = []
    for _ in range(6):
        assert rec.connecting() is LinkState.CONNECTING
        delays.append(rec.failed(0.0, "no such port"))
        assert rec.state is LinkState.RETRYING
    assert delays == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    assert rec.last_reason == "no such port"


def test_backoff_resets_only_after_a_stable_connection() -> None:
    rec = _no_jitter(initial_delay_s=1.0, max_delay_s=8.0, stable_s=10.0)
    rec.failed(0.0, "x")
    rec.failed(0.0, "x")
    rec.up(100.0)
    assert rec.failed(101.0, "flap") == 4.0  # up only 1 s: keeps backing off
    assert rec.reconnects == 1
    rec.up(200.0)
    assert rec.failed(215.0, "unplugged") == 1.0  # up 15 s: fresh start


def test_refused_stays_refused_and_reprobes_slowly() -> None:
    rec = _no_jitter(refused_reprobe_s=30.0)
    rec.connecting()
    assert rec.refused("protocol 9, need 1") == 30.0
    assert rec.connecting() is LinkState.REFUSED
    assert rec.handshaking() is LinkState.REFUSED
    assert rec.failed(0.0, "still wrong") == 30.0
    assert rec.state is LinkState.REFUSED
    assert rec.up(1.0) is LinkState.UP


def test_jitter_stays_within_ten_percent_and_the_cap() -> None:
    rec = Reconnector(ReconnectPolicy(initial_delay_s=1.0, max_delay_s=2.0, jitter=0.1), random.Random(7))
    for _ in range(50):
        delay = rec.failed(0.0, "x")
        assert 0.9 <= delay <= 2.0


def test_policy_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="need 0 < initial <= max"):
        ReconnectPolicy(initial_delay_s=5.0, max_delay_s=1.0)
