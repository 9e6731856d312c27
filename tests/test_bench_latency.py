"""The instruments of bench/bench_latency.py, which no figure can be trusted without: the
floor's relay answers every frame, and each stamp is paired with its own answer.

A relay that answered one read, not one frame, once left a frame unanswered when a late
read found two, and every later frame was then paired with its successor's answer: the
floor's p50 read 3.27 ms where it is 0.15 ms.
"""

from __future__ import annotations

import json
import os
import pty
import socket
import subprocess
import sys
import threading
import time
import tty
from pathlib import Path

import pytest

from bench.bench_latency import (_RELAY, FLOOR_FRAME, FlushedCards, answers, flush_lines,
                                 flushes_by_source, run_simulators_at)
from hil.table_harness import TableHarness, normal_scheduling

ROOT = Path(__file__).resolve().parents[1]


def test_the_relay_answers_each_frame_when_one_read_finds_several(tmp_path: Path) -> None:
    master, slave = pty.openpty()
    tty.setraw(slave)
    path = str(tmp_path / "relay.sock")
    relay = subprocess.Popen([sys.executable, "-c", _RELAY, os.ttyname(slave), path,
                              str(len(FLOOR_FRAME))], stdout=subprocess.PIPE, text=True)
    try:
        assert relay.stdout is not None and relay.stdout.readline().startswith("ready")
        os.close(slave)
        watcher = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        watcher.connect(path)
        watcher.sendall(b'{"cmd": "subscribe"}\n')
        time.sleep(0.2)  # the relay has read the subscribe line and waits on the pty
        os.write(master, FLOOR_FRAME * 3)  # three frames, most likely one read
        os.write(master, FLOOR_FRAME[:10])  # part of a fourth: no answer yet
        received = b""
        watcher.settimeout(10)
        while received.count(b"\n") < 3:
            received += watcher.recv(4096)
        os.write(master, FLOOR_FRAME[10:])  # the rest of it: now answered
        while received.count(b"\n") < 4:
            received += watcher.recv(4096)
        lines = [json.loads(line) for line in received.splitlines()]
        assert [line["event"]["kind"] for line in lines] == ["prompt"] * 4
        acks = b""
        while len(acks) < 4:
            acks += os.read(master, 16)
        assert acks == b"\x06" * 4  # each frame acknowledged on the link
        watcher.close()
    finally:
        os.close(master)
        relay.wait(timeout=30)


def test_each_stamp_is_paired_with_the_first_answer_logged_after_it() -> None:
    """(sent ns, sent wall) stamps; (received ns, logged wall, kind, action) answers. An
    answer logged before a card was sent answers an earlier card, and a kind not asked
    for is skipped: the pairs and their spans are exact."""
    sent = [(1_000, 10.0), (5_000, 20.0), (9_000, 30.0)]
    seen = [[1_400, 10.1, "prompt", "deal"],
            [5_100, 19.9, "prompt", "deal"],  # logged before the second card: not its answer
            [5_600, 20.2, "no_more_bets", ""],
            [5_900, 20.3, "prompt", "burn"],
            [9_700, 30.5, "prompt", "place_bets"]]
    assert answers(sent, seen, ("prompt",)) == [(400, "deal"), (900, "burn"),
                                                (700, "place_bets")]
    assert answers(sent, seen[:2], ("prompt",)) == [(400, "deal")]  # none left for the rest


def test_each_flush_is_put_down_to_what_made_it() -> None:
    """`strace -f -y` lines of the daemon (pid 100): a checkpoint is the database's flush
    with the same thread's WAL flushes right before and right after it; every other WAL
    flush is a step's, whichever thread made it (a flush thread's, 101, or the loop's own,
    C30); the files beside the key are the anchor's; an unfinished call is counted once, not
    again when it resumes."""
    trace = "\n".join([
        "101  fdatasync(7</t/table.sqlite-wal>) = 0",
        "101  fdatasync(7</t/table.sqlite-wal> <unfinished ...>",
        "102  fdatasync(9</t/table.critical/anchor>) = 0",
        "101  <... fdatasync resumed>) = 0",
        "100  fdatasync(7</t/table.sqlite-wal>) = 0",
        "100  fdatasync(7</t/table.sqlite-wal>) = 0",
        "101  fdatasync(7</t/table.sqlite-wal>) = 0",
        "100  fdatasync(6</t/table.sqlite>) = 0",
        "100  fdatasync(7</t/table.sqlite-wal>) = 0",
        "100  fdatasync(7</t/table.sqlite-wal>) = 0",
        "102  fsync(9</t/table.critical/anchor.tmp>) = 0",
        "102  fsync(9</t/table.critical>) = 0",
        "103  fsync(11</t/witness-outbox>) = 0",
        # A witnessed table: the outbox's new heads, then a rewrite (its file replaced
        # whole: the temporary file, then the directory, from the same thread).
        "104  fsync(12</t/table.critical/witness_outbox>) = 0",
        "104  fsync(12</t/table.critical/witness_outbox.tmp>) = 0",
        "104  fsync(13</t/table.critical>) = 0",
    ])
    assert flushes_by_source(trace, 100) == {"steps": 5, "checkpoints": 3, "anchor": 3,
                                             "witness": 3, "other": 1}
    # Three shoes of two rounds each: the average per shoe is what is held against the
    # bound, so one checkpoint (three flushes) in one of them counts one a shoe.
    counts = {"shoes": 3, "rounds": 6, "money_steps": 27, "shoe_steps": 3, "flushes": 27,
              "steps": 21, "checkpoints": 3, "anchor": 3, "other": 0, "wal_bytes": 3 << 20}
    lines = flush_lines(counts).splitlines()
    assert lines[0].startswith("flushes (fsync+fdatasync) over 3 shoes: 27 (9.0 a shoe, "
                               "4.50 a round)   rounds 6 (2.0 a shoe)")
    assert lines[1].startswith("  steps' (group commit)     21 (   7.0 a shoe)   bound 3 a "
                               "round + the shoes' own durable steps (3:")
    assert lines[1].endswith("= 21 OK")
    assert lines[2].startswith("  WAL checkpoints            3 (   1.0 a shoe)")
    assert lines[3].startswith("  the anchor                 3 (   1.0 a shoe)")
    assert lines[5] == "  the WAL file at the end: 3.0 MiB (its largest cycle between checkpoints)"
    assert lines[6].endswith("= 18 (6.0 a shoe)   OVER by 3.0 a shoe")
    assert lines[7].startswith("  at a dealer's pace (a round a minute, its three durable "
                               "groups about 20 s apart) the anchor alone adds about 2 a shoe")


def test_a_witnessed_tables_outbox_flushes_are_printed_apart_from_issue_31s_count() -> None:
    counts = {"shoes": 3, "rounds": 6, "money_steps": 27, "shoe_steps": 3, "flushes": 30,
              "steps": 18, "checkpoints": 0, "anchor": 0, "witness": 12, "other": 0}
    lines = flush_lines(counts).splitlines()
    assert lines[0].startswith("flushes (fsync+fdatasync) over 3 shoes: 30 (10.0 a shoe, ")
    assert lines[4].startswith("  the witness's outbox      12 (   4.0 a shoe)   (its new "
                               "heads at each durable group")
    assert lines[7].endswith("= 18 (6.0 a shoe)   OK")  # the table's own 18, not 30


def test_the_cards_ruling_c26_flushes_before_are_each_shoes_first_and_the_one_after_its_cover(
        ) -> None:
    """C26: a shoe's first burn card is a flushed step of its own, and the card after the
    cover card waits behind the cover card's flush; no other card does."""
    cards = FlushedCards()
    drawn = [cards.card(0) for _ in range(3)]  # the first shoe: its first card, two more
    cards.cover_card()
    drawn += [cards.card(0), cards.card(0)]  # the card after the cover card, then another
    drawn += [cards.card(1), cards.card(1)]  # the next shoe's first card, then another
    assert drawn == [True, False, False, True, False, True, False]


POLICY = "import os; print(os.sched_getscheduler(0))"


@pytest.mark.skipif(not hasattr(os, "SCHED_BATCH"), reason="SCHED_BATCH is Linux's")
def test_the_simulators_run_at_batch_and_the_daemon_the_observer_and_the_relay_do_not(
        tmp_path: Path) -> None:
    """`--simulators batch` (the default): this process, the simulated shoe, dealer and
    players, runs at SCHED_BATCH, and every process the daemon's figure or the floor's goes
    through is started back at the normal policy: the watcher and the relay by
    `normal_scheduling`, the daemon by its harness. In a thread of its own, since the
    policy is a thread's and the test process's own must not change."""
    harness = TableHarness(ROOT / "config" / "simulated-table.toml", tmp_path,
                           daemon_normal_scheduling=True)
    seen: dict[str, object] = {}

    def in_a_batch_thread() -> None:
        seen["reported"] = run_simulators_at("batch")
        seen["thread"] = os.sched_getscheduler(0)
        for name, preexec in (("inherited", None), ("observer", normal_scheduling),
                              ("daemon", harness._in_daemon_child)):
            seen[name] = int(subprocess.run([sys.executable, "-c", POLICY], check=True,
                                            capture_output=True, text=True,
                                            preexec_fn=preexec).stdout)

    thread = threading.Thread(target=in_a_batch_thread)
    thread.start()
    thread.join()
    assert seen == {"reported": "SCHED_BATCH", "thread": os.SCHED_BATCH,
                    "inherited": os.SCHED_BATCH, "observer": os.SCHED_OTHER,
                    "daemon": os.SCHED_OTHER}
    assert os.sched_getscheduler(0) == os.SCHED_OTHER  # this thread untouched
    assert run_simulators_at("normal") == "normal"
