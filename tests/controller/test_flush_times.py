"""The store's flush times, as a technician sees them (`tablectl status`, the metrics, the
journal's `store_flush_slow`): every money step's report waits for a flush, so a slow or
failing SD card is a slow table (controller/memory/flush_times.py)."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from structlog.testing import capture_logs

from controller.cli.status_view import _storage
from controller.config import load_config
from controller.memory.flush_times import BUCKETS_S, SLOW_FLUSH_S, FlushTimes
from controller.metrics_text import MetricsWriter
from tests.controller.test_daemon import CONFIG, running


class Clocks:
    def __init__(self) -> None:
        self.wall = 1_790_000_000.0
        self.monotonic = 100.0


def _times() -> tuple[FlushTimes, Clocks]:
    clocks = Clocks()
    return FlushTimes(wall_clock=lambda: clocks.wall,
                      monotonic=lambda: clocks.monotonic), clocks


def test_each_flush_lands_in_the_least_bucket_that_holds_it():
    times, clocks = _times()
    for seconds in (0.0004, 0.001, 0.0011, 0.7, 6.0, -0.002):  # the last, a clock's step
        clocks.wall += 1
        times.add(seconds)
    # <=1 ms: 0.0004, 0.001 (a bound holds its equal, as Prometheus' le), and the -0.002
    # counted as 0; <=2 ms: 0.0011; <=1 s: 0.7; past 5 s: 6.0.
    assert times.counts == [3, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1]
    assert len(times.counts) == len(BUCKETS_S) + 1
    assert (times.count, times.slow) == (6, 2)
    assert times.total_s == pytest.approx(0.0004 + 0.001 + 0.0011 + 0.7 + 6.0)
    assert (times.slowest_s, times.slowest_at) == (6.0, 1_790_000_005.0)


def test_the_figures_shown_are_the_bounds_the_flushes_kept_within():
    times, _ = _times()
    assert times.within(0.5) is None and times.status() == {
        "flushes": 0, "half_within_ms": None, "p99_within_ms": None, "slowest_ms": None,
        "slowest_at": None, "slow": 0, "slow_threshold_ms": 500.0, "flush_in": "loop"}
    for seconds in [0.0003] * 60 + [0.0015] * 39 + [0.03]:
        times.add(seconds)
    assert (times.within(0.5), times.within(0.6), times.within(0.99), times.within(1.0)) == (
        0.001, 0.001, 0.002, 0.05)
    assert times.status() == {"flushes": 100, "half_within_ms": 1.0, "p99_within_ms": 2.0,
                              "slowest_ms": 30.0, "slowest_at": 1_790_000_000.0, "slow": 0,
                              "slow_threshold_ms": 500.0, "flush_in": "loop"}
    times.add(7.5)  # past the last bound: all 101 are not within 5 s, 99 % (100) are
    assert times.within(1.0) is None and times.status()["p99_within_ms"] == 50.0
    for bad in (0, -0.5, 1.5):
        with pytest.raises(ValueError, match=f"share = {bad}: must be over 0 and at most 1"):
            times.within(bad)


def test_slow_flushes_are_named_in_the_journal_at_most_once_a_minute():
    times, clocks = _times()
    with capture_logs() as lines:
        times.add(SLOW_FLUSH_S)  # at the threshold: slow
        clocks.monotonic += 10
        times.add(0.9)
        times.add(0.2)  # not slow
        clocks.monotonic += 50  # a minute after the first line
        times.add(2.5)
        clocks.monotonic += 1
        times.add(0.6)
    slow = [(line["seconds"], line["slow_flushes"], line["log_level"]) for line in lines
            if line["event"] == "store_flush_slow"]
    assert slow == [(0.5, 1, "warning"), (2.5, 2, "warning")]
    assert times.slow == 4


def test_the_metrics_histogram_is_cumulative_as_prometheus_reads_it():
    times, _ = _times()
    for seconds in (0.0004, 0.003, 0.003, 0.3, 9.0):
        times.add(seconds)
    w = MetricsWriter("BAC-01")
    w.histogram("tabled_store_flush_seconds", "how long the store's flushes took",
                BUCKETS_S, times.counts, times.total_s)
    lines = w.text().splitlines()
    assert lines[:5] == [
        "# HELP tabled_store_flush_seconds how long the store's flushes took",
        "# TYPE tabled_store_flush_seconds histogram",
        'tabled_store_flush_seconds_bucket{table="BAC-01",le="0.001"} 1',
        'tabled_store_flush_seconds_bucket{table="BAC-01",le="0.002"} 1',
        'tabled_store_flush_seconds_bucket{table="BAC-01",le="0.005"} 3']
    assert lines[-3:] == ['tabled_store_flush_seconds_bucket{table="BAC-01",le="+Inf"} 5',
                          'tabled_store_flush_seconds_sum{table="BAC-01"} 9.3064',
                          'tabled_store_flush_seconds_count{table="BAC-01"} 5']
    family, = text_string_to_metric_families(w.text())
    buckets = {s.labels["le"]: s.value for s in family.samples if s.name.endswith("_bucket")}
    assert (family.type, buckets["0.5"], buckets["5"], buckets["+Inf"]) == (
        "histogram", 4.0, 4.0, 5.0)


def test_status_view_names_the_bounds_and_slow_storage(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    assert _storage(None) is None
    assert _storage({"flushes": 0}) == "no flush yet"
    shown: dict[str, Any] = {"flushes": 12345, "half_within_ms": 1.0, "p99_within_ms": 5.0,
                             "slowest_ms": 41.2, "slowest_at": 1_790_000_000.25, "slow": 0,
                             "slow_threshold_ms": 500.0}
    assert _storage(shown).replace("\u00a0", " ") == (
        "12,345 flushes since the start; half within 1 ms, 99 % within 5 ms; slowest 41.2 ms "
        "at 2026-09-21T14:13:20.250Z")
    assert _storage(shown).count("\u00a0ms") == 3  # a figure is not wrapped off its unit
    shown.update(p99_within_ms=None, slowest_ms=7200.0, slow=3)
    assert _storage(shown).replace("\u00a0", " ") == (
        "12,345 flushes since the start; half within 1 ms, 99 % within over 5 s; slowest "
        "7200 ms at 2026-09-21T14:13:20.250Z; SLOW: 3 took 500 ms or more "
        "(docs/technician-guide.md, 'Slow storage')")
    shown.update(slow=0, seal_every_step=True)  # docs/rulings.md C29's option, when set
    assert _storage(shown).endswith(
        "; every step sealed by itself ([store] seal_every_step)")
    assert _storage({"flushes": 0, "seal_every_step": True}) == (
        "no flush yet; every step sealed by itself ([store] seal_every_step)")
    # docs/rulings.md C30's option: said when the flushes run in a thread of their own.
    assert _storage({"flushes": 0, "flush_in": "loop"}) == "no flush yet"
    assert _storage({"flushes": 0, "flush_in": "thread"}) == (
        "no flush yet; flushed in a thread of their own ([store] flush_in)")
    assert _storage({"flushes": 0, "flush_in": "thread", "flush_moved_after_ms": 612.5}
                    ).replace("\u00a0", " ") == (
        "no flush yet; flushed in a thread of their own since a 612.5 ms flush stopped the "
        "event loop (until the daemon restarts)")


async def test_the_daemon_reports_its_flushes_in_status_and_metrics(tmp_path):
    """On storage whose flushes take 5 ms: the status counts every flush the store made,
    each at least 5 ms; opening the table is one more (C26); the metrics give the same."""
    config = load_config(CONFIG, [f"store.path={tmp_path / 'table.sqlite'}",
                                  f"control.socket={tmp_path / 'control.sock'}",
                                  "store.flush_delay_ms=5"])
    daemons: list[Any] = []
    async with running(config, prepare=daemons.append) as client:
        durability = daemons[0].store.durability
        before = (await client.call("status"))["storage"]
        await client.call("open")
        storage = (await client.call("status"))["storage"]
        assert before["flushes"] >= 1  # the start's own entries
        assert storage["flushes"] > before["flushes"]  # the opening's (C26)
        assert storage["slowest_ms"] >= 5.0 and storage["half_within_ms"] >= 10.0
        # A loaded machine may take a real flush past the threshold (523 ms once, with two
        # test runs on two cores): counted as slow exactly when the slowest one is.
        assert storage["slow_threshold_ms"] == 500.0
        assert (storage["slow"] > 0) == (storage["slowest_ms"] >= 500.0), storage
        assert storage["seal_every_step"] is False  # the default (docs/rulings.md C29)
        # Read together, with no await between (a flush may end after the reply above):
        # every flush the store made is counted, none within 5 ms (a bound holds its
        # equal, and each took a little more), and the metrics say the same.
        metrics = daemons[0].commands.reports.metrics_text()
        times, flushed = durability.flush_times, durability.flushed_commits
        assert times.count == flushed >= storage["flushes"]
        assert times.counts[:3] == [0, 0, 0]
    count = next(s.value for family in text_string_to_metric_families(metrics)
                 if family.name == "tabled_store_flush_seconds" for s in family.samples
                 if s.name == "tabled_store_flush_seconds_count")
    assert count == flushed
