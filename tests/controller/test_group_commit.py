"""Group commit (issue 31; controller/memory/delivery.py, docs/architecture.md "Durable
writes"): money steps that arrive together share one flush, and nothing of them is given
out or acknowledged before that flush has returned; the flush runs on the event loop's
own thread or in a thread of its own (`[store] flush_in`, docs/rulings.md C30).

Every interleaving here is forced. In a thread of its own, the flush waits on an event the
test sets, so what is committed before, during and after a flush is decided by the test,
not by the speed of the disk or of the machine; on the loop's thread nothing else runs
while it flushes, and the test decides what each loop turn holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from controller.control import ControlClient, ControlError, ControlServer
from controller.control_args import whole
from controller.memory import delivery
from controller.memory.flush_in import FLUSH_IN, FLUSH_IN_LOOP, FLUSH_IN_THREAD
from controller.memory.store import Event, Store

WAGER = {"seat": 3, "wager": "banker", "amount_cents": 500}


class GatedFlushes:
    """The store's flushes, counted, each waiting in its thread until the test opens it."""

    def __init__(self, store: Store) -> None:
        self.started = 0
        self.threads: list[str] = []  # the thread each flush ran in
        self.gate = threading.Event()
        self.gate.set()
        self.fail_next: OSError | None = None
        self._real = store._durability.flush_in_thread
        store._durability.flush_in_thread = self._flush  # type: ignore[method-assign]

    def _flush(self, at_flush: Callable[[], object] | None = None) -> float:
        self.started += 1
        self.threads.append(threading.current_thread().name)
        if at_flush is not None:
            at_flush()  # the thread is at its flush: the gate stands for the disk
        self.gate.wait(timeout=30)
        if self.fail_next is not None:
            failure, self.fail_next = self.fail_next, None
            raise failure
        return self._real()


Grouped = tuple[Store, GatedFlushes, list[Event]]


@contextlib.asynccontextmanager
async def grouped_store(tmp_path: Path, flush_in: str) -> AsyncIterator[Grouped]:
    """A store in group commit whose flushes run where `flush_in` says, gated (GatedFlushes),
    with every entry it gives out collected; at the end, each flush is checked to have run on
    the loop's thread (FLUSH_IN_LOOP) or never on it (FLUSH_IN_THREAD). On the loop's thread,
    a flush as slow as SLOW_FLUSH_S (a loaded machine's disk once took 523 ms) moves the
    later ones to a thread (docs/rulings.md C30): those are checked to follow such a move."""
    store = Store(tmp_path / "t.sqlite")
    given: list[Event] = []
    store.subscribe(given.append)
    flushes = GatedFlushes(store)
    store.group_commits(asyncio.get_running_loop(), flush_in=flush_in)
    try:
        yield store, flushes, given
        loop_thread = threading.current_thread().name
        on_loop = [name == loop_thread for name in flushes.threads]
        if flush_in == FLUSH_IN_LOOP and not all(on_loop):
            assert store.durability.flush_times.moved_after_s is not None, flushes.threads
            on_loop = on_loop[:on_loop.index(False)]  # those before the move
        assert all(on_loop) if flush_in == FLUSH_IN_LOOP else not any(on_loop), flushes.threads
    finally:
        flushes.gate.set()
        store.close()  # its own flush is the closing thread's in either case


@pytest.fixture
async def grouped(tmp_path: Path) -> AsyncIterator[Grouped]:
    """The flush in a thread of its own: its gate can hold a flush while the test commits."""
    async with grouped_store(tmp_path, FLUSH_IN_THREAD) as grouped:
        yield grouped


@pytest.fixture(params=FLUSH_IN)
async def grouped_either(request: pytest.FixtureRequest, tmp_path: Path
                         ) -> AsyncIterator[Grouped]:
    """`grouped`, with the flush on the loop's thread or in one of its own: a test that
    uses it opens the gate before the loop turn ends (on the loop's thread a closed gate
    would stop the loop itself)."""
    async with grouped_store(tmp_path, request.param) as grouped:
        yield grouped


async def _durable(store: Store) -> BaseException | None:
    done: asyncio.Future[BaseException | None] = asyncio.get_running_loop().create_future()
    store.when_durable(lambda error: done.done() or done.set_result(error))
    return await asyncio.wait_for(done, 30)


def _step(store: Store, kind: str, payload: dict[str, Any] | None = None) -> None:
    """One step writing one entry of KIND: the chain's raw append (the payload's fields do not
    matter here, only which kinds are money steps and when they are flushed)."""
    with store.transaction():
        store.append_entry(kind, payload or {}, severity="info")


async def test_money_steps_of_one_loop_turn_share_one_flush_and_are_given_out_after_it(
        grouped_either: Grouped) -> None:
    store, flushes, given = grouped_either
    flushes.gate.clear()
    _step(store, "wager_accepted", WAGER)
    _step(store, "wager_accepted", {**WAGER, "seat": 4})
    _step(store, "no_more_bets")
    assert given == []  # committed, not yet on the disk: nothing is reported
    assert store.events_from(0, 10) == []  # a stream paging the log does not see them either
    flushes.gate.set()
    assert await _durable(store) is None
    assert flushes.started == 1  # the first step's flush covers all three
    assert [e.kind for e in given] == ["wager_accepted", "wager_accepted", "no_more_bets"]
    assert [e.seq for e in store.events_from(0, 10)] == [1, 2, 3]


async def test_steps_committed_during_a_flush_wait_for_the_next_one(
        grouped: Grouped) -> None:
    store, flushes, given = grouped
    flushes.gate.clear()
    _step(store, "wager_accepted", WAGER)
    await asyncio.sleep(0.05)  # the flush has started in its thread and waits at the gate
    assert flushes.started == 1
    _step(store, "card", {"index": 7})  # may wait for a flush, but not overtake the wager
    _step(store, "round_settled", {"round_id": 1})
    waiter = asyncio.ensure_future(_durable(store))
    flushes.gate.set()
    assert await waiter is None
    assert flushes.started == 2  # one for the wager, one for the card and the settlement
    assert [e.kind for e in given] == ["wager_accepted", "card", "round_settled"]
    assert store.durability.flushed_commits == 1 + 2  # opening the store flushed once


async def test_a_card_behind_nothing_held_is_given_out_at_once_without_a_flush(
        grouped_either: Grouped) -> None:
    store, flushes, given = grouped_either
    _step(store, "card", {"index": 7})
    assert ([e.kind for e in given], flushes.started) == (["card"], 0)


async def test_a_failed_flush_acknowledges_nothing_and_the_next_step_flushes_it_again(
        grouped_either: Grouped) -> None:
    store, flushes, given = grouped_either
    flushes.fail_next = OSError(5, "Input/output error")
    _step(store, "wager_accepted", WAGER)
    error = await _durable(store)
    assert isinstance(error, OSError) and given == []
    _step(store, "wager_accepted", {**WAGER, "seat": 5})
    assert await _durable(store) is None
    assert [e.payload["seat"] for e in given] == [3, 5]


@pytest.mark.parametrize("flush_in", FLUSH_IN)
async def test_closing_the_store_flushes_what_is_held_and_answers_its_waiters(
        flush_in: str, tmp_path: Path) -> None:
    store = Store(tmp_path / "t.sqlite")
    flushes = GatedFlushes(store)
    store.group_commits(asyncio.get_running_loop(), flush_in=flush_in)
    _step(store, "wager_accepted", WAGER)
    answered: list[BaseException | None] = []
    store.when_durable(answered.append)
    store.close()
    assert answered == [None] and flushes.started >= 1
    again = Store(tmp_path / "t.sqlite")
    assert [e.kind for e in again.events()] == ["wager_accepted"]
    again.close()


@pytest.mark.parametrize("flush_in", FLUSH_IN)
async def test_pipelined_wagers_are_answered_in_order_each_after_its_flush(
        flush_in: str, tmp_path: Path) -> None:
    """A client sends a round's wagers at once (ControlClient.call_many): the daemon runs
    them in order, in one loop turn, and answers each only once it is on the disk: one
    flush for all of them, started after the last."""
    store = Store(tmp_path / "t.sqlite")
    flushes = GatedFlushes(store)
    store.group_commits(asyncio.get_running_loop(), flush_in=flush_in)
    srv = ControlServer(str(tmp_path / "control.sock"))
    seen: list[int] = []

    def place(args: Any) -> dict[str, int]:
        if args["seat"] == 9:
            raise ControlError("seat 9 is not at this table", "refused")
        _step(store, "wager_accepted", {**WAGER, "seat": args["seat"]})
        seen.append(args["seat"])
        assert flushes.started == 0  # no flush starts before the last of them has run
        return {"seat": args["seat"]}

    srv.register("place_wager", place, args={"seat": whole(1, 14)})
    srv.follow(store)
    srv.set_history(store.events_from)
    await srv.start()
    client = await ControlClient(srv.path).connect()
    replies = [reply async for reply in client.call_many(
        [("place_wager", {"seat": seat}) for seat in (1, 9, 2, 3)])]
    assert replies[0] == {"seat": 1} and replies[2:] == [{"seat": 2}, {"seat": 3}]
    assert isinstance(replies[1], ControlError) and "seat 9" in str(replies[1])
    assert flushes.started == 1
    assert [e.payload["seat"] for e in store.events(kind="wager_accepted")] == [1, 2, 3]
    await client.close()
    await srv.close()
    store.close()


async def test_a_durable_listener_reads_only_the_state_its_seal_covers(
        grouped: Grouped) -> None:
    """The witness's digest of the money and the shoe's card acknowledgement (protocol 1.2,
    M-6.6a) read the store and the table when a durable seal is handed to them: a step
    committed while that seal's flush was on its way is not on the disk yet, so the seal is
    handed over only when nothing was committed after it (the next flush covers the rest)."""
    store, flushes, _ = grouped
    heard: list[tuple[int, int]] = []  # (the seal's last entry, the log's last entry then)
    store.on_durable_commit(lambda seal, db: heard.append(
        (seal.log_seq, db.execute("SELECT MAX(seq) FROM events").fetchone()[0])))
    flushes.gate.clear()
    _step(store, "wager_accepted", WAGER)
    await asyncio.sleep(0.05)  # the wager's flush waits at the gate
    _step(store, "card", {"index": 7})  # committed during that flush: not covered by it
    _step(store, "round_settled", {"round_id": 1})
    flushes.gate.set()
    assert await _durable(store) is None
    assert heard == [(3, 3)]  # the settlement's flush, covering all three; never (1, 3)


async def test_a_durable_listener_is_not_handed_a_seal_a_card_waiting_in_memory_has_passed(
        tmp_path: Path) -> None:
    """Two frames read in one loop turn (after a stall): the round's first card, a step that
    must be flushed, and the next card, whose entry waits in memory (docs/rulings.md C31).
    One flush covers the first; the second is in no transaction yet. The shoe's card
    acknowledgement reads the table when handed a seal, and the table already has the
    second card: handed the first card's seal, it would tell a 1.2 shoe that a card is
    committed that a power cut would lose [M-6.6a]. So the seal waits for the next flushed
    step, whose transaction writes the waiting card first."""
    async with grouped_store(tmp_path, FLUSH_IN_LOOP) as (store, _, given):
        heard: list[tuple[int, int]] = []  # (the seal's last entry, the log's last written)
        store.on_durable_commit(lambda seal, db: heard.append(
            (seal.log_seq, db.execute("SELECT MAX(seq) FROM events").fetchone()[0])))
        with store.step():
            store.append_entry("round_opened", {"round_id": 1}, severity="info")
        with store.step():  # in the same turn: held behind the first, in memory
            store.append_entry("card", {"index": 8}, severity="info")
        assert await _durable(store) is None
        assert [e.kind for e in given] == ["round_opened", "card"]
        assert heard == []  # not (1, 1): the table had moved on to a card not on the disk
        _step(store, "round_settled", {"round_id": 1})
        assert await _durable(store) is None
        assert heard == [(3, 3)]


async def test_work_left_for_after_a_money_step_runs_while_its_flush_is_in_flight(
        grouped: Grouped) -> None:
    """`Store.after_step` (the journal's lines): not in front of the flush, and not after
    it either: in the loop's turn after the flush's start, while the disk works."""
    store, flushes, given = grouped
    flushes.gate.clear()
    done: list[str] = []
    with store.transaction():
        store.append_entry("no_more_bets", {}, severity="info")
        store.after_step(lambda: done.append(f"work, {flushes.started} flush started"))
    assert done == []  # the step returned: its flush has not started yet
    await asyncio.sleep(0.05)
    assert (done, given) == (["work, 1 flush started"], [])  # nothing reported before it
    flushes.gate.set()
    assert await _durable(store) is None
    assert [e.kind for e in given] == ["no_more_bets"]


async def test_the_flush_is_under_way_before_the_loop_runs_anything_else(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The flusher's thread needs the GIL to reach its flush: the loop hands it over (waits
    until the thread is at its flush) before it prepares lines or runs a step's later work,
    so the disk works while they run rather than after them."""
    monkeypatch.setattr(delivery, "FLUSH_START_WAIT_S", 30.0)  # no timing in this test
    store = Store(tmp_path / "t.sqlite")
    order: list[str] = []
    gate = threading.Event()

    def flush(at_flush: Callable[[], object] | None = None) -> float:
        if at_flush is None:  # the store's own flush in the caller's thread, as it closes
            return 0.0
        order.append("at its flush")
        at_flush()
        gate.wait(30)
        return 0.0

    store._durability.flush_in_thread = flush  # type: ignore[method-assign]
    store.subscribe(lambda event: None, prepare=lambda event: order.append("prepared"))
    store.group_commits(asyncio.get_running_loop(), flush_in=FLUSH_IN_THREAD)
    try:
        with store.transaction():
            store.append_entry("no_more_bets", {}, severity="info")
            store.after_step(lambda: order.append("later work"))
        await asyncio.sleep(0.05)
        assert order == ["at its flush", "prepared", "later work"]
    finally:
        gate.set()
        store.close()


async def test_a_flusher_thread_that_cannot_start_does_not_hold_up_the_loop(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """If the flusher's thread never says it is at its flush, the loop waits only
    FLUSH_START_WAIT_S, and the flush's result still decides what is given out."""
    monkeypatch.setattr(delivery, "FLUSH_START_WAIT_S", 0.05)
    store = Store(tmp_path / "t.sqlite")
    given: list[Event] = []
    store.subscribe(given.append)
    gate = threading.Event()
    def flush(at_flush: Callable[[], object] | None = None) -> float:
        gate.wait(30)  # never says it is at its flush
        return 0.0

    store._durability.flush_in_thread = flush  # type: ignore[method-assign]
    store.group_commits(asyncio.get_running_loop(), flush_in=FLUSH_IN_THREAD)
    try:
        _step(store, "wager_accepted", WAGER)
        started = time.monotonic()
        await asyncio.sleep(0)  # the flush's start runs in this loop turn
        assert 0.05 <= time.monotonic() - started < 5
        assert given == []
        gate.set()
        assert await _durable(store) is None
        assert [e.kind for e in given] == ["wager_accepted"]
    finally:
        gate.set()
        store.close()


async def test_held_entries_are_prepared_during_their_flush_and_given_out_after_it(
        grouped: Grouped) -> None:
    store, flushes, given = grouped
    prepared: list[Event] = []
    store.subscribe(lambda event: None, prepare=prepared.append)
    flushes.gate.clear()
    _step(store, "wager_accepted", WAGER)
    _step(store, "no_more_bets")
    await asyncio.sleep(0.05)
    assert ([e.kind for e in prepared], given) == (["wager_accepted", "no_more_bets"], [])
    flushes.gate.set()
    assert await _durable(store) is None
    assert given == prepared  # the same entries, each prepared once, before it was out
    _step(store, "card", {"index": 7})  # given out at once, never held: nothing to prepare
    assert (len(prepared), given[-1].kind) == (2, "card")


async def test_replies_are_answered_before_the_anchor_and_the_durable_listeners(
        grouped_either: Grouped) -> None:
    """A waiter (a reply) needs only the flush: the anchor's hand-off and the witness's digest
    (durable listeners) come after it, not in front of it."""
    store, flushes, given = grouped_either
    order: list[str] = []
    anchor_committed = store._durability.committed

    def committed(seal: Any, *, durable: bool) -> None:
        order.append("anchor")
        anchor_committed(seal, durable=durable)

    store._durability.committed = committed  # type: ignore[method-assign]
    store.on_durable_commit(lambda seal, db: order.append("durable listener"))
    flushes.gate.clear()
    _step(store, "wager_accepted", WAGER)
    store.when_durable(lambda error: order.append(f"reply, error {error}"))
    flushes.gate.set()
    assert await _durable(store) is None
    assert order == ["reply, error None", "anchor", "durable listener"]


async def test_a_durable_listener_that_raises_is_logged_and_the_others_still_hear_the_seal(
        grouped: Grouped) -> None:
    """A durable listener (the witness's head, the shoe's card acknowledgement) that fails is
    logged and passed over: the listeners after it still hear the seal. Before, its exception
    left the loop's callback, and the others missed that seal (a card acknowledgement not
    sent, a head not made)."""
    store, flushes, given = grouped
    heard: list[int] = []

    def broken(seal: Any, db: Any) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    store.on_durable_commit(broken)
    store.on_durable_commit(lambda seal, db: heard.append(seal.log_seq))
    flushes.gate.clear()
    _step(store, "wager_accepted", WAGER)
    await asyncio.sleep(0.05)  # the first wager's flush waits at the gate
    _step(store, "wager_accepted", {**WAGER, "seat": 4})  # held for the next flush
    waiter = asyncio.ensure_future(_durable(store))
    with capture_logs() as logs:
        flushes.gate.set()
        assert await waiter is None
    assert flushes.started == 2
    assert [e.payload["seat"] for e in given] == [3, 4]
    assert heard == [2]  # the second flush's seal covers both (the first had one after it)
    failures = [entry for entry in logs if entry["event"] == "durable_listener_failed"]
    assert [(f["log_level"], f["error"], f["commit_no"]) for f in failures] == [
        ("error", "disk I/O error", 3)]  # the store's opening was commit 1


async def test_on_the_loops_thread_the_report_goes_out_before_the_steps_later_work(
        tmp_path: Path) -> None:
    """`[store] flush_in = "loop"` (docs/rulings.md C30): the flush runs at the end of the
    step's loop turn on the loop's thread, and what it covers is given out at once, before
    the work the step left for later (its journal lines); in a thread of its own that work
    runs while the disk works instead (test_work_left_for_after_a_money_step_runs_while_its_
    flush_is_in_flight)."""
    order: list[str] = []
    async with grouped_store(tmp_path, FLUSH_IN_LOOP) as (store, flushes, _):
        store.subscribe(lambda event: order.append(f"{event.kind} given out"))
        with store.transaction():
            store.append_entry("no_more_bets", {}, severity="info")
            store.after_step(lambda: order.append(f"later work, {flushes.started} flush"))
        assert (order, flushes.started) == ([], 0)  # not before the turn ends
        assert await _durable(store) is None
        assert order == ["no_more_bets given out", "later work, 1 flush"]
        assert flushes.threads == [threading.current_thread().name]


async def test_on_the_loops_thread_a_step_its_report_leads_to_gets_a_flush_of_its_own_after(
        tmp_path: Path) -> None:
    """A listener that commits a money step while a flush's entries go out (on the loop's
    thread nothing else can commit during the flush itself): that step is held and flushed
    at the end of the turn, after the first flush's entries are all out, not inside them."""
    async with grouped_store(tmp_path, FLUSH_IN_LOOP) as (store, flushes, _):
        order: list[str] = []

        def listener(event: Event) -> None:
            order.append(f"{event.kind} given out after flush {flushes.started}")
            if event.kind == "wager_accepted":
                _step(store, "no_more_bets")  # the lock the wager's report led to

        store.subscribe(listener)
        _step(store, "wager_accepted", WAGER)
        assert await _durable(store) is None
        assert await _durable(store) is None  # the lock's own flush, a turn later
        assert order == ["wager_accepted given out after flush 1",
                         "no_more_bets given out after flush 2"]
        assert [e.kind for e in store.events()] == ["wager_accepted", "no_more_bets"]


async def test_a_flush_that_stops_the_loop_for_half_a_second_moves_the_next_ones_to_a_thread(
        tmp_path: Path) -> None:
    """docs/rulings.md C30: on the loop's thread, a flush as slow as the dealer notices
    (flush_times.SLOW_FLUSH_S, 500 ms) stopped the whole loop that long; storage that stalls
    once tends to stall again, and past the watchdog's 3.3 s the daemon would be restarted. So
    the flushes after it run in a thread of their own, and the status and the journal say
    why. The first flush is reported as the disk took it (the seconds a flush returns)."""
    store = Store(tmp_path / "t.sqlite")
    real_flush, threads = store._durability.flush_in_thread, []
    took = [0.004, 0.612]  # what the first two flushes took: the second stalls the loop

    def flush(*at_flush: Callable[[], object]) -> float:
        threads.append(threading.current_thread().name)
        real_flush(*at_flush)
        return took.pop(0) if took else 0.003

    store._durability.flush_in_thread = flush  # type: ignore[method-assign]
    store.group_commits(asyncio.get_running_loop(), flush_in=FLUSH_IN_LOOP)
    times = store.durability.flush_times
    try:
        with capture_logs() as logs:
            for kind in ("wager_accepted", "no_more_bets", "round_settled", "wager_accepted"):
                _step(store, kind, WAGER if kind == "wager_accepted" else {})
                assert await _durable(store) is None
        loop_thread = threading.current_thread().name
        assert threads[:2] == [loop_thread, loop_thread]
        assert threads[2:] == ["store-flush_0", "store-flush_0"]
        assert (times.flush_in, times.moved_after_s) == ("thread", 0.612)
        status = times.status()
        assert (status["flush_in"], status["flush_moved_after_ms"]) == ("thread", 612.0)
        moved = [e for e in logs if e["event"] == "store_flush_moved_to_thread"]
        assert [(e["log_level"], e["seconds"], e["threshold_s"]) for e in moved] == [
            ("warning", 0.612, 0.5)]
        assert [e.kind for e in store.events()] == [
            "wager_accepted", "no_more_bets", "round_settled", "wager_accepted"]
    finally:
        store.close()
    assert Store(tmp_path / "t.sqlite").durability.flush_times.flush_in == "loop"  # a new start
