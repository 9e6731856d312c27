"""bench/done_when.py's verdicts: issue 31's Done-when items from the benchmarks' figures.

A benchmark sitting is too long and too load-bound for the suite; what the suite holds is
that each item is judged against the issue's own target, on the edge as well as either side
of it, and that the flush count is the table's own (its witness's outbox apart).
"""

from __future__ import annotations

from bench.bench_latency import flush_figures
from bench.done_when import Sitting, items, table, tally

CARD = {"card_step_p50_us": 150.0, "bare_commit_p50_us": 20.0}
LATENCY = {"floor_p99_ms": 0.40, "card_p99_ms": 0.80, "card_p99_without_c26_ms": 0.72,
           "last_card_p99_ms": 1.30,
           "flush_delay_ms": 5.0, "slow_lock_p99_ms": 7.0, "slow_round_end_p99_ms": 7.01,
           "flushes_a_shoe": 236.25, "flush_bound_a_shoe": 230.25, "shoe_steps_a_shoe": 5.5}
SHOE = {"shoe_wall_s": 0.88, "shoe_wire_s": 0.88, "dealt_wall_s": 0.66, "dealt_wire_s": 0.80}
START = {"ready_ms": 400.0, "ready_first_ms": 1000.0, "entries": 1_000_000}


def test_each_item_is_judged_against_the_issues_target() -> None:
    found = {item.name: item for item in items(CARD, LATENCY, SHOE, START)}
    assert [(name, item.held) for name, item in found.items()] == [
        ("card -> decision p99", True),  # 0.80 / 0.40 = 2.0x: on the edge, held
        ("the round's last card p99", False),  # 3.25x
        ("lock-out -> reported p99, 5 ms flushes", True),  # 7.00 ms: on the edge
        ("round end p99, 5 ms flushes", False),  # 7.01 ms
        ("a HIL shoe / its wire time at 115200", True),  # 1.00x
        ("ready at 1,000,000 entries", True),  # the slower start, 1000 ms
        ("card step, thread CPU p50", False),  # 150 us
        ("flushes a shoe", False),  # 236.25 against 230.25
    ]
    # The figure without C26's flushed cards is shown beside it; the verdict is on them all.
    assert found["card -> decision p99"].figure == (
        "0.80 ms = 2.0x the floor's 0.40 ms (without the cards C26 flushes before: 1.8x)")
    assert found["the round's last card p99"].figure == "1.30 ms = 3.2x the floor"
    assert found["a HIL shoe / its wire time at 115200"].figure == (
        "0.88 s / 0.88 s = 1.00x (from the shuffle's end 0.82x)")
    assert found["card step, thread CPU p50"].figure == "150.0 us = 7.5x a bare commit"
    assert found["flushes a shoe"].target == "<= 230.2 (3 a round)"


def test_the_slower_start_decides_the_ready_item() -> None:
    late = {**START, "ready_ms": 1000.5, "ready_first_ms": 300.0}
    ready = next(item for item in items(CARD, LATENCY, SHOE, late) if "ready" in item.name)
    assert (ready.held, ready.figure.split(" ms")[0]) == (False, "1000")


def test_the_table_counts_what_held_and_names_the_campaign() -> None:
    lines = table(items(CARD, LATENCY, SHOE, START)).splitlines()
    assert len(lines) == 10  # a heading, eight items, the tally
    assert lines[1].split()[-1] == "floor)" and "held" in lines[1]
    assert lines[-1].startswith("4 of 8 held.")
    assert "TABLE_POWER_CUTS=1000" in lines[-1]


def test_the_flush_count_is_the_tables_own() -> None:
    counts = {"shoes": 4, "rounds": 307, "flushes": 1900, "witness": 955, "shoe_steps": 21}
    assert flush_figures(counts) == {"flushes_a_shoe": 236.25, "flush_bound_a_shoe": 230.25,
                                     "shoe_steps_a_shoe": 5.25}
    assert flush_figures({**counts, "witness": 0})["flushes_a_shoe"] == 475.0


def test_several_sittings_end_with_each_items_tally() -> None:
    slow = {**LATENCY, "floor_p99_ms": 0.25, "slow_lock_p99_ms": 8.5}  # 3.2x, 8.5 ms: over
    lines = tally([Sitting(14.2, items(CARD, LATENCY, SHOE, START)),
                   Sitting(28.4, items(CARD, slow, SHOE, START))]).splitlines()
    assert lines[0] == ("issue 31's Done-when items over 2 sittings (interpreter speed 14.2, "
                        "28.4 ms):")
    assert len(lines) == 10  # the speeds, a heading, eight items
    rows = {line.split("  ")[0].strip(): line for line in lines[2:]}
    assert rows["card -> decision p99"].endswith(
        "1 of 2   2.00, 3.20 x the floor   (<= 2x the floor)")
    assert rows["lock-out -> reported p99, 5 ms flushes"].endswith(
        "1 of 2   7.00, 8.50 ms   (<= 7 ms)")
    assert rows["ready at 1,000,000 entries"].endswith(
        "2 of 2   1000.00, 1000.00 ms   (<= 1000 ms)")
    assert rows["flushes a shoe"].endswith(
        "0 of 2   236.25, 236.25 a shoe   (<= 230.2 (3 a round))")
