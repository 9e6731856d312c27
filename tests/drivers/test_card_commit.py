"""Protocol 1.2's card commit acknowledgement (docs/protocol.md 6.6) between the real
SerialShoe driver and the simulated shoe over a pseudo-terminal, and the daemon's side
(controller/card_commits.py) against a real store's grouped and flushed commits."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest

from cards import BackColour, Card
from controller.card_commits import CardCommits
from controller.memory.delivery import until_durable
from controller.memory.flush_in import FLUSH_IN_LOOP
from controller.memory.store import Store
from controller.table.machine import TableState
from drivers.protocols import CardDrawn, CoverCardDrawn, LinkChanged, LinkState, ShoeLoaded
from drivers.reconnect import ReconnectPolicy
from drivers.shoe import SerialShoe
from firmware_bridge import messages as wire
from hil.recorder import Recorder
from hil.shoe_sim import SimulatedShoe, build_stack

pytestmark = [pytest.mark.timeout(60), pytest.mark.usefixtures("no_leaked_threads")]

FAST = ReconnectPolicy(initial_delay_s=0.05, max_delay_s=0.1)


async def connected(sim: SimulatedShoe, recorder: Recorder, *, resume_from: int | None = None,
                    has_cover: bool = False) -> SerialShoe:
    driver = SerialShoe("shoe", sim.port, reconnect=FAST)
    if resume_from is not None:
        driver.follow_table(lambda: resume_from, lambda: has_cover)  # type: ignore[return-value]
    mark = len(recorder.events)
    await driver.start(recorder)
    await recorder.wait_for(LinkChanged, lambda e: e.state is LinkState.UP, start=mark)
    await sim.wait_host(10)
    return driver


async def until(condition, timeout: float = 10.0) -> None:  # noqa: ANN001
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.01)


def indexes(recorder: Recorder, start: int = 0) -> list[int]:
    return [e.index for e in recorder.events[start:] if isinstance(e, CardDrawn)]


def covers(recorder: Recorder, start: int = 0) -> list[int]:
    return [e.index for e in recorder.events[start:] if isinstance(e, CoverCardDrawn)]


async def test_a_1_2_shoe_keeps_acknowledged_cards_until_committed_and_replays_them(
        recorder: Recorder) -> None:
    stack, cover = build_stack(1, random.Random(5))
    sim = SimulatedShoe(stack, BackColour.RED, cover, card_commit=True)
    await sim.start()
    driver = await connected(sim, recorder)
    try:
        assert driver.card_commit
        dealt = [await sim.draw() for _ in range(3)]  # each acknowledged by the link
        await until(lambda: len(indexes(recorder)) == 3)
        assert sim.kept_indexes == [0, 1, 2]  # [M-6.6b]: nothing committed yet
        driver.cards_committed(0, 2)  # cards 0 and 1 are on the table's disk
        await until(lambda: sim.kept_indexes == [2])
        assert [m.next_index for m in sim.received if isinstance(m, wire.CardsCommitted)] == [2]
        driver.cards_committed(0, 2)  # never twice, never backwards
        driver.cards_committed(0, 1)
        driver.cards_committed(1, 3)  # an ack for a batch the shoe has not loaded: stale
        await asyncio.sleep(0.2)
        assert [m.next_index for m in sim.received if isinstance(m, wire.CardsCommitted)] == [2]
        await driver.stop()

        # The host restarts having stored cards 0 and 1 only (card 2's step was cut): the
        # shoe sends card 2 again after the handshake [M-6.6c] and the table gets it.
        mark = len(recorder.events)
        driver = await connected(sim, recorder, resume_from=2)
        await until(lambda: indexes(recorder, mark) == [2])
        [again] = [e for e in recorder.events[mark:] if isinstance(e, CardDrawn)]
        assert (again.index, again.card) == (2, dealt[2])
        assert sim.replayed == 1
        await driver.stop()

        # Restarted again with card 2 stored but its acknowledgement never sent: the replay
        # is dropped by the driver [M-6.6d], neither a second card nor a gap.
        mark = len(recorder.events)
        driver = await connected(sim, recorder, resume_from=3)
        await until(lambda: sim.replayed == 2 and driver.health().counters.get(
            "cards_replayed_dropped") == 1)
        card = await sim.draw()
        await until(lambda: indexes(recorder, mark) == [3])
        assert recorder.events[-1] == CardDrawn("shoe", 3, card, BackColour.RED, False)
        assert not any(getattr(e, "code", "") == "shoe_index_gap" for e in recorder.events)
    finally:
        await driver.stop()
        await sim.stop()


async def test_a_1_2_shoe_keeps_its_cover_card_until_the_card_after_it_is_committed(
        recorder: Recorder) -> None:
    """[M-6.6e]: the cover card is kept past a CardsCommitted at its own index (it came out
    after cards 0 and 1: index 2) and sent again after each handshake; [M-6.6d]: the driver
    drops it when it passed it on in this batch or the restored table has it, and hands it
    on when the table lost it."""
    stack, _ = build_stack(1, random.Random(5))
    sim = SimulatedShoe(stack, BackColour.RED, 2, card_commit=True)
    await sim.start()
    driver = await connected(sim, recorder)

    def dropped() -> int:
        return driver.health().counters.get("cover_cards_replayed_dropped", 0)

    try:
        await sim.draw()
        await sim.draw()
        assert await sim.draw() is None  # the cover card
        await until(lambda: covers(recorder) == [2])
        driver.cards_committed(0, 2)  # cards 0 and 1, and the cover card, on the disk
        await until(lambda: sim.kept_indexes == [])
        assert sim.kept_cover == 2  # nothing above its index is committed yet

        await sim.unplug()  # the link drops; the same driver takes the replay
        await sim.replug()
        await until(lambda: sim.replayed_covers == [2] and dropped() == 1)
        assert covers(recorder) == [2]
        await driver.stop()

        # The daemon restarts with the cover card's step lost: the table has cards 0 and 1.
        mark = len(recorder.events)
        driver = await connected(sim, recorder, resume_from=2, has_cover=False)
        await until(lambda: covers(recorder, mark) == [2])
        await driver.stop()

        # Restarted with it stored: dropped, and the next card is card 2, no gap.
        mark = len(recorder.events)
        driver = await connected(sim, recorder, resume_from=2, has_cover=True)
        await until(lambda: sim.replayed_covers == [2, 2, 2] and dropped() == 1)
        card = await sim.draw()
        await until(lambda: indexes(recorder, mark) == [2])
        assert covers(recorder, mark) == []
        assert recorder.events[-1] == CardDrawn("shoe", 2, card, BackColour.RED, False)
        driver.cards_committed(0, 3)  # the card after the cover card: the shoe forgets both
        await until(lambda: sim.kept_cover is None and sim.kept_indexes == [])
        assert not any(getattr(e, "code", "") == "shoe_index_gap" for e in recorder.events)
    finally:
        await driver.stop()
        await sim.stop()


async def test_a_1_1_shoe_is_sent_no_acknowledgement_and_replays_nothing(
        recorder: Recorder) -> None:
    stack, cover = build_stack(1, random.Random(6))
    sim = SimulatedShoe(stack, BackColour.RED, cover)  # no CAP_CARD_COMMIT
    await sim.start()
    driver = await connected(sim, recorder)
    try:
        assert sim.hello().capabilities == wire.CAP_PROTOCOL_1_1
        assert driver.card_commit is False
        await sim.draw()
        await until(lambda: indexes(recorder) == [0])
        driver.cards_committed(0, 1)
        await sim.draw()
        await until(lambda: indexes(recorder) == [0, 1])
        assert not any(isinstance(m, wire.CardsCommitted) for m in sim.received)
        await driver.stop()
        mark = len(recorder.events)
        driver = await connected(sim, recorder, resume_from=2)
        await asyncio.sleep(0.2)
        assert (sim.replayed, indexes(recorder, mark)) == (0, [])
    finally:
        await driver.stop()
        await sim.stop()


class AckRecorder:
    """Stands in for the shoe's driver: what the daemon told it."""

    def __init__(self) -> None:
        self.floor: Callable[[], int] | None = None
        self.acks: list[tuple[int, int]] = []
        self.card_commit = True

    def follow_table(self, has_below: Callable[[], int], has_cover: Callable[[], bool]) -> None:
        self.floor = has_below
        self.has_cover = has_cover

    def cards_committed(self, loads: int, next_index: int) -> None:
        self.acks.append((loads, next_index))


def table_at(state: str, last_card_index: int, *, cover_card_seen: bool = False
             ) -> SimpleNamespace:
    """What CardCommits reads of the table: its state and its saved shoe's last index and
    whether the shoe's cover card has come out."""
    shoe = SimpleNamespace(last_card_index=last_card_index, cover_card_seen=cover_card_seen)
    return SimpleNamespace(state=TableState(state), saved=SimpleNamespace(shoe=shoe))


def wired(shoe: AckRecorder, table: SimpleNamespace, store: Store) -> CardCommits:
    """What CardCommits.attach does for a driver of the CommittingShoe protocol."""
    commits = CardCommits(shoe, table)  # type: ignore[arg-type]
    shoe.follow_table(commits._replay_floor, commits._has_cover)
    store.on_durable_commit(commits._durable)
    return commits


@pytest.mark.parametrize("state", ["dealing", "end_of_shoe", "cut"])
def test_the_driver_is_told_whether_the_table_has_the_batchs_cover_card(
        tmp_path: Path, state: str) -> None:
    """[M-6.6d, M-6.6e]: a cover card the shoe sends again is a replay if the table has the
    batch's cover card, waiting for the next batch or not (unlike the card's floor, which is
    0 while it waits: the batch in the shoe is still the one it last saw loaded)."""
    store = Store(tmp_path / "t.sqlite")
    shoe = AckRecorder()
    table = table_at(state, 400, cover_card_seen=True)
    wired(shoe, table, store)
    assert shoe.has_cover() is True
    table.saved.shoe.cover_card_seen = False  # a new batch loaded: its cover still to come
    assert shoe.has_cover() is False
    assert shoe.floor is not None and shoe.floor() == (401 if state == "dealing" else 0)
    store.close()


def test_the_daemon_acknowledges_a_card_only_after_a_flushed_commit(tmp_path: Path) -> None:
    """[M-6.6a]: a card's step inside a round is grouped (not on the disk yet): no
    acknowledgement; the next flushed commit carries it and every card before it."""
    store = Store(tmp_path / "t.sqlite")
    shoe = AckRecorder()
    table = table_at("dealing", 11)
    commits = wired(shoe, table, store)
    try:
        assert shoe.floor is not None and shoe.floor() == 12  # the table has cards 0..11
        for index in (12, 13):
            commits.before_step(CardDrawn("shoe", index, Card.parse("9♠"), BackColour.RED, False))
            with store.transaction():
                table.saved.shoe.last_card_index = index
                store.append_entry("card", {"index": index})  # grouped
        assert shoe.acks == []
        with store.transaction():
            store.append_entry("round_settled", {"round": 1})  # flushed
        assert shoe.acks == [(0, 14)]
        commits.before_step(ShoeLoaded("shoe", 416, BackColour.BLUE))  # the next batch
        with store.transaction():
            table.saved.shoe.last_card_index = -1
            store.append_entry("shoe_loaded", {"cards": 416})
        assert shoe.acks[-1] == (1, 0)  # for the new batch: nothing below 0
    finally:
        store.close()


async def test_two_cards_read_together_are_acknowledged_only_once_both_are_on_the_disk(
        tmp_path: Path) -> None:
    """[M-6.6a] with group commit, as the daemon runs it: after a stall the shoe's reader
    finds two frames in one read and the table steps both in one loop turn, before the
    flush (controller/intake.py hands a card straight to an idle table). The first card
    opens the round (ruling C1: it locks every seat), a step that must be flushed; the
    second waits in memory (C31). The flush covers only the first: the shoe is told
    nothing until a flush covers both, or it would drop a card a power cut loses."""
    store = Store(tmp_path / "t.sqlite")
    store.group_commits(asyncio.get_running_loop(), flush_in=FLUSH_IN_LOOP)
    shoe = AckRecorder()
    table = table_at("betting_open", 11)
    commits = wired(shoe, table, store)
    try:
        for index, kinds in ((12, ("no_more_bets", "card")), (13, ("card",))):
            commits.before_step(CardDrawn("shoe", index, Card.parse("9♠"), BackColour.RED, False))
            with store.step():
                table.saved.shoe.last_card_index = index
                for kind in kinds:
                    store.append_entry(kind, {"index": index})
        await until_durable(store.when_durable)
        assert shoe.acks == []  # not (0, 14): card 13 is in memory only
        with store.step():
            store.append_entry("round_settled", {"round": 1})  # writes card 13 first
        await until_durable(store.when_durable)
        assert shoe.acks == [(0, 14)]
        assert [e.kind for e in store.events()] == ["no_more_bets", "card", "card",
                                                     "round_settled"]
    finally:
        store.close()


@pytest.mark.parametrize("state", ["closed", "opening", "shuffling", "cut", "end_of_shoe"])
def test_a_table_waiting_for_a_new_batch_drops_no_card_as_a_replay(state: str) -> None:
    """Its saved index is the old batch's: a ShoeLoaded lost in a cut must not make the new
    batch's first cards look like replays the table already has."""
    shoe = AckRecorder()
    wired(shoe, table_at(state, 70), Store(":memory:"))
    assert shoe.floor is not None and shoe.floor() == 0
