"""Which steps the store flushes before returning (docs/architecture.md, "Durable writes").

Money, locks and state changes are on disk before the daemon acts on them;
cards inside a round, prompts and sensor/shuffler progress ride along with the
next flush.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.memory import durability as store_module
from controller.memory.store import GROUPED_KINDS, Store


@pytest.fixture
def store(tmp_path, monkeypatch):
    s = Store(tmp_path / "t.sqlite")
    flushes: list[int] = []
    real_flush = s._durability.flush_in_thread
    monkeypatch.setattr(s._durability, "flush_in_thread", lambda *at_flush: (flushes.append(1), real_flush(*at_flush))[1])
    s.flushes = flushes  # type: ignore[attr-defined]
    yield s
    s.close()


def test_the_grouped_kinds_move_no_money():
    assert GROUPED_KINDS == {"card", "burn_card", "prompt", "seat_sensor", "shuffle_progress",
                             "late_sensor_change"}


# docs/rulings.md C26: why each of a shoe's own steps is flushed, not left for the first
# round's wagers' flush (what a restart would do had a power cut lost it).
SHOE_STEPS_FLUSHED = {
    "table_opened": "the dealer's `open`: its answer is an acknowledgement",
    "shuffle_requested": "the dealer's `shuffle`: answered, and it collects marked vigorish",
    "shuffle_complete": "the shuffler reports it once: lost, the table waits in shuffling",
    "shoe_loaded": "the shoe does not keep it (protocol 6.6): lost, the table is at the cut",
    "burn_first_card": "the burn count: lost with a shoe's power, the shoe ends unread (C27)",
    "cover_card": "not kept by the shoe (6.6): lost, the table deals past it with no last hand",
}


def test_the_shoes_own_steps_are_the_benchmarks_and_none_is_grouped():
    from bench.bench_latency import SHOE_STEP_KINDS

    assert set(SHOE_STEPS_FLUSHED) == set(SHOE_STEP_KINDS)
    assert not set(SHOE_STEPS_FLUSHED) & GROUPED_KINDS


@pytest.mark.parametrize("kind", sorted(SHOE_STEPS_FLUSHED))
def test_the_shoes_own_steps_are_flushed_C26(store, kind):
    """Each alone in its step (as the table records it, with a prompt beside it) costs one
    flush before the transaction returns: nothing is left for the next money step."""
    before = store.durability.flushed_commits
    with store.transaction():
        store.append_entry(kind, {})
        store.append_entry("prompt", {"action": "burn"})
    assert (store.durability.flushed_commits - before, store.durability.grouped_commits,
            len(store.flushes)) == (1, 0, 1), SHOE_STEPS_FLUSHED[kind]


def test_a_money_step_is_flushed_before_the_transaction_returns(store):
    with store.transaction():
        store.append_entry("wager_accepted", {"seat": 3, "wager": "banker", "amount_cents": 500})
    assert (len(store.flushes), store.durability.grouped_commits) == (1, 0)


def test_cards_and_prompts_wait_for_the_next_flush_in_log_order(store):
    before = store.durability.flushed_commits
    for index in range(5):
        with store.transaction():
            store.append_entry("card", {"index": index})
            store.append_entry("prompt", {"action": "deal"})
    assert (store.durability.flushed_commits - before, store.durability.grouped_commits, store.flushes) == (0, 5, [])
    with store.transaction():
        store.append_entry("round_settled", {"round": 1})
    assert (store.durability.flushed_commits - before, len(store.flushes)) == (1, 1)
    kinds = [e.kind for e in store.events()]
    assert kinds == ["card", "prompt"] * 5 + ["round_settled"]
    assert store.verify_chain() == 11


def test_one_money_event_makes_the_whole_step_flushed(store):
    with store.transaction():
        store.append_entry("card", {"index": 4})
        store.append_entry("round_settled", {"round": 1})  # the fourth card settled the round
    assert (store.durability.flushed_commits, store.durability.grouped_commits) == (2, 0)  # 2: opening the store


def test_a_step_that_records_nothing_is_flushed(store):
    with store.transaction():
        store.save_table_state("betting_open", {"round_no": 1})
    assert (len(store.flushes), store.durability.grouped_commits) == (1, 0)


def test_a_step_that_writes_nothing_is_neither_flushed_nor_sealed(store):
    """A read in a step of its own (the progressive meters are read so after every device
    event) has nothing to put on the disk: no flush, no seal, not even for the cards before
    it, which wait for the next step that must be flushed (ruling C29)."""
    def seal() -> tuple[int, int]:
        return tuple(store._db.execute("SELECT commit_no, log_seq FROM critical_seal").fetchone())

    with store.transaction():
        store.append_entry("card", {"index": 0})
        store.append_entry("prompt", {"action": "deal"})
    before = seal()
    with store.transaction() as db:
        assert db.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 2
    assert (store.flushes, seal(), store.log_seq) == ([], before, 2)
    with store.transaction():
        store.append_entry("round_settled", {"round": 1})
    assert (len(store.flushes), seal()) == (1, (before[0] + 1, 3))


def test_the_progressive_meters_read_after_a_card_flush_nothing(tmp_path):
    from controller.progressive.ledger import MeterLedger

    store = Store(tmp_path / "p.sqlite")
    ledger = MeterLedger(store)  # its tables and their digests: a step of its own
    flushed = store.durability.flushed_commits
    with store.transaction():
        store.append_entry("card", {"index": 0})
    assert (ledger.all_meters(), store.durability.flushed_commits) == ([], flushed)
    store.close()


def test_the_progressive_ledger_reads_without_a_step_of_its_own(tmp_path):
    """A read is no step (`Store.reading`): outside one it takes no write lock and commits
    nothing; inside one it sees what the step wrote so far."""
    from fractions import Fraction

    from controller.progressive.ledger import MeterLedger

    store = Store(tmp_path / "p.sqlite")
    ledger = MeterLedger(store)
    statements: list[str] = []
    store._db.set_trace_callback(statements.append)
    assert (ledger.all_meters(), ledger.awards(), ledger.armed_mystery("h9", "grand")) == (
        [], [], None)
    assert [sql for sql in statements if sql.startswith(("BEGIN", "COMMIT"))] == []
    with store.transaction():
        ledger.seed("h9", "grand", 1_000_000, Fraction(1, 100))
        seeded = ledger.meter("h9", "grand")
    assert seeded is not None and seeded.amount_cents == 1_000_000
    store.close()


def test_a_failed_step_is_neither_committed_nor_counted(store):
    with pytest.raises(RuntimeError):
        with store.transaction():
            store.append_entry("card", {"index": 1})
            raise RuntimeError("decision failed")
    assert (store.durability.grouped_commits, store.flushes, store.events()) == (0, [], [])


def test_grouped_steps_survive_a_reopen_once_flushed(tmp_path):
    path = tmp_path / "t.sqlite"
    first = Store(path)
    with first.transaction():
        first.append_entry("card", {"index": 1})
    with first.transaction():
        first.append_entry("round_settled", {"round": 1})
    first.close()
    again = Store(path)
    assert [e.kind for e in again.events()] == ["card", "round_settled"]
    again.close()


class _FlushClock:
    """`time` as Durability sees it: each flush's fdatasync takes `disk_s` by this clock,
    and every sleep is recorded instead of slept."""

    def __init__(self, disk_s: float) -> None:
        self.now, self.disk_s, self.slept = 100.0, disk_s, []

    def perf_counter(self) -> float:
        self.now += self.disk_s  # read before the fdatasync and after it: disk_s apart
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 9))


def test_slow_storage_delays_only_flushed_commits(tmp_path, monkeypatch):
    clock = _FlushClock(disk_s=0.0)
    monkeypatch.setattr(store_module, "time", clock)
    slow = Store(tmp_path / "slow.sqlite", flush_delay_s=0.005)
    clock.slept.clear()  # opening the store is itself a flushed step
    with slow.transaction():
        slow.append_entry("card", {"index": 1})
    assert clock.slept == []
    with slow.transaction():
        slow.append_entry("round_settled", {"round": 1})
    assert clock.slept == [0.005]
    slow.close()


@pytest.mark.parametrize(("disk_s", "slept"), [(0.0012, [0.0038]), (0.005, []), (0.009, [])])
def test_a_slow_flush_takes_the_delay_in_all_this_disk_s_own_flush_included(
        tmp_path, monkeypatch, disk_s, slept):
    """`[store] flush_delay_ms` stands in for an SD card whose flush takes that long: the
    card's flush replaces this machine's disk's, so the disk's own fdatasync time is part of
    it, not added before it (a disk slower than the card waits for itself alone)."""
    clock = _FlushClock(disk_s=disk_s)
    monkeypatch.setattr(store_module, "time", clock)
    slow = Store(tmp_path / "slow.sqlite", flush_delay_s=0.005)
    clock.slept.clear()
    with slow.transaction():
        slow.append_entry("round_settled", {"round": 1})
    assert clock.slept == slept
    slow.close()


def test_a_negative_flush_delay_is_refused(tmp_path):
    with pytest.raises(ValueError, match="flush_delay_s = -1: must be >= 0"):
        Store(tmp_path / "x.sqlite", flush_delay_s=-1)


def test_the_store_checkpoints_the_wal_itself_after_a_flushed_step(tmp_path, monkeypatch):
    monkeypatch.setattr(store_module, "CHECKPOINT_AFTER_COMMITS", 10)
    monkeypatch.setattr(store_module, "CHECKPOINT_AFTER_GROUPED_COMMITS", 100)
    s = Store(tmp_path / "c.sqlite")
    assert s._db.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0  # never on a card
    for index in range(20):
        with s.transaction():
            s.append_entry("card", {"index": index})
    assert s.durability.checkpoints == 0  # grouped steps wait for a flushed one
    with s.transaction():
        s.append_entry("round_settled", {"round": 1})
    assert s.durability.checkpoints == 1
    assert [e.payload.get("index") for e in s.events()][-2:] == [19, None]
    for index in range(100):  # hours of sensor chatter and nothing else
        with s.transaction():
            s.append_entry("late_sensor_change", {"seat": 3, "present": index % 2 == 0})
    assert s.durability.checkpoints == 2  # after CHECKPOINT_AFTER_GROUPED_COMMITS grouped
    s.close()


def test_the_wal_starts_over_in_the_checkpointing_step_not_in_the_next_cards(
        tmp_path, monkeypatch):
    """After a checkpoint the next writer starts the WAL over (a new salt in its header),
    which costs that step several times a card's usual time. The flushed step that
    checkpointed does it; the card step after it appends to the WAL as any other."""
    monkeypatch.setattr(store_module, "CHECKPOINT_AFTER_COMMITS", 3)
    s = Store(tmp_path / "c.sqlite")
    wal = tmp_path / "c.sqlite-wal"

    def salt() -> bytes:
        return wal.read_bytes()[16:24]  # the WAL header's two salts (SQLite's file format)

    seats = 0
    while s.durability.checkpoints == 0:  # flushed steps until one of them checkpoints
        s.append_entry("wager_accepted", {"seat": seats})
        seats += 1
    checkpointed = salt()
    s.append_entry("card", {"index": 0})
    assert salt() == checkpointed  # not started over by the card's step
    assert s._db.execute("PRAGMA user_version").fetchone()[0] == 0
    assert [e.kind for e in s.events()][-2:] == ["wager_accepted", "card"]
    assert s.verify(full=True).log_seq == seats + 1
    s.close()


def test_a_record_rewritten_at_every_stage_of_a_step_is_written_once_as_the_step_leaves_it(
        store):
    writes: list[str] = []
    state = {"value": "dealing"}

    def save() -> None:
        writes.append(state["value"])
        store.save_table_state(state["value"], {})

    with store.transaction():
        store.before_commit("table_state", save)  # the card
        state["value"] = "third_cards"
        store.before_commit("table_state", save)  # the state change it caused
        state["value"] = "result"
    assert writes == ["result"]
    assert store.load_table_state() == ("result", {})
    store.before_commit("table_state", save)  # outside a step: at once
    assert writes == ["result", "result"]


def test_a_failed_step_drops_its_pending_record(store):
    writes: list[str] = []
    with pytest.raises(RuntimeError):
        with store.transaction():
            store.before_commit("table_state", lambda: writes.append("x"))
            raise RuntimeError("decision failed")
    with store.transaction():
        store.append_entry("prompt", {"action": "deal"})
    assert writes == []


def test_rounds_page_forward_from_a_round_id(store):
    ids = [store.open_round(1, n, []) for n in range(1, 8)]
    assert [r["round_id"] for r in store.rounds(limit=3)] == ids[4:]
    assert [r["round_id"] for r in store.rounds(limit=3, after_round_id=0)] == ids[:3]
    assert [r["round_id"] for r in store.rounds(limit=3, after_round_id=ids[2])] == ids[3:6]
    assert store.rounds(limit=3, after_round_id=ids[-1]) == []


def test_events_page_forward_oldest_first(store):
    for index in range(7):
        store.append_entry("card", {"index": index})
    newest = store.events(limit=3)
    assert [e.payload["index"] for e in newest] == [4, 5, 6]
    first = store.events(limit=3, oldest_first=True)
    assert [e.payload["index"] for e in first] == [0, 1, 2]
    after = store.events(after_seq=first[-1].seq, limit=3, oldest_first=True, kind="card")
    assert [e.payload["index"] for e in after] == [3, 4, 5]


def test_a_store_reopened_after_a_kill_checkpoints_the_wal_it_finds(tmp_path):
    import os
    import sqlite3

    path = tmp_path / "k.sqlite"
    first = Store(path)
    for index in range(50):
        with first.transaction():
            first.append_entry("card", {"index": index})
    wal = Path(f"{path}-wal")
    grown = wal.stat().st_size
    # A kill leaves the WAL as it is: copy the files as they stand, without closing.
    copy = tmp_path / "copy.sqlite"
    for suffix in ("", "-wal"):
        Path(f"{copy}{suffix}").write_bytes(Path(f"{path}{suffix}").read_bytes())
    first.close()
    again = Store(copy)
    assert again.durability.checkpoints == 1
    # Every frame is in the database file now: the next writer starts the WAL over.
    with again.transaction():
        again.append_entry("round_settled", {"round": 1})
    again.close()
    assert grown > 50 * 4096
    db = sqlite3.connect(copy)
    assert db.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 51
    db.close()
    assert os.path.getsize(f"{copy}") > 0
