"""Who hears of a commit, and when: the store's listeners and group commit.

Listeners get every committed log entry, in log order, and only once the entry may be
reported: at once for a commit already durable or one that may wait for the next flush
(GROUPED_KINDS), after its flush for any other. Durable listeners (the witness's heads)
get the seal of a durable commit.

Group commit (issue 31; docs/architecture.md, "Durable writes"). Without it every money
step (a wager, the lock-out, a settlement) flushes the WAL on the event loop before the
step returns. With it (`Store.group_commits`, the daemon's loop) a money step commits
without a flush and its entries are held; one flush at the end of the loop's turn then
covers every commit made before it started, and only when it has returned are the held
entries given out, the anchor moved and the callers waiting on `when_durable` (the control
socket's replies) answered: wagers, a lock and a settlement that arrive together share a
flush. Nothing is acknowledged before it is on the disk: a power cut loses only commits
never reported.

Where the flush runs is `[store] flush_in` (docs/rulings.md C30): on the loop's own thread
(`FLUSH_IN_LOOP`, the default), which then waits for the disk and reports as soon as it
returns; or in a thread of its own (`FLUSH_IN_THREAD`), while the loop goes on with what
needs no flush, and steps committed while a flush is in flight wait for the next one, which
starts as soon as that one returns. A flush on the loop's thread slow enough for the dealer
to notice (`flush_times.SLOW_FLUSH_S`) moves every later one to a thread of its own.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import structlog

from controller.events.records import RoundSettled, RoundVoid
from controller.memory.digests import Seal
from controller.memory.durability import Durability
from controller.memory.flush_in import FLUSH_IN, FLUSH_IN_THREAD
from controller.memory.flush_times import SLOW_FLUSH_S
from controller.memory.schema import Event

log = structlog.get_logger("store")

Waiter = Callable[[BaseException | None], None]
"""Called once the commits made before it was registered are durable (None), or with the
error that kept them from the disk."""

WhenDurable = Callable[[Waiter], None]
"""`Store.when_durable`: registers a waiter."""

ROUND_ENDS = frozenset({RoundSettled.KIND, RoundVoid.KIND})
"""The entries that end a round: a due checkpoint waits for a flush that gives one out
(`Durability.checkpoint_if_due`)."""

FLUSH_START_WAIT_S = 0.02
"""The most the loop waits for the flusher's thread to reach its flush (`_start_flush`):
far above a thread's wake-up (tens of microseconds), so only a thread that cannot run is
given up on; the flush still happens, only later."""


def _flusher_thread() -> ThreadPoolExecutor:
    """The thread of its own that flushes with FLUSH_IN_THREAD (and after a slow flush)."""
    return ThreadPoolExecutor(1, thread_name_prefix="store-flush")


async def until_durable(when_durable: WhenDurable) -> BaseException | None:
    """Wait until every commit made so far is on the disk: None, or the error of the flush
    that failed (nothing it covered may be acknowledged)."""
    done: asyncio.Future[BaseException | None] = asyncio.get_running_loop().create_future()

    def settle(error: BaseException | None) -> None:
        if not done.done():
            done.set_result(error)

    when_durable(settle)
    return await done


class Delivery:
    """The listeners of one store's commits, and the commits held for a shared flush."""

    def __init__(self, db: sqlite3.Connection, durability: Durability) -> None:
        self._db = db
        self._durability = durability
        self.listeners: list[Callable[[Event], None]] = []
        self.after_commit: list[Callable[[], None]] = []
        self.durable_listeners: list[Callable[[Seal, sqlite3.Connection], None]] = []
        # Given each held entry while its flush runs, to make ready what a listener will
        # send once it is out (`Store.subscribe`'s `prepare`): after the flush, only the
        # release is left.
        self.preparers: list[Callable[[Event], None]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._flusher: ThreadPoolExecutor | None = None
        self._flush_started = threading.Event()  # the flusher's thread is at its flush
        # Commits made but not yet given out, oldest first: (entries, seal, must flush).
        self._held: list[tuple[list[Event], Seal | None, bool]] = []
        self._in_flight: list[tuple[list[Event], Seal | None, bool]] | None = None
        self._waiters: list[Waiter] = []
        self._in_flight_waiters: list[Waiter] = []
        self._start_due = False  # a flush is to start at the end of this loop turn
        # A checkpoint's turn is scheduled: True if a flush it follows was durable.
        self._checkpoint_after: bool | None = None
        self._round_ended = False  # a round's end was given out since the last checkpoint turn
        # The seal of the newest step that changed anything (None: its entries wait in
        # memory, C31): a flush's seal goes to the durable listeners only if it is this one,
        # since they read the table as it stands (`_give_out_all`).
        self._newest_seal: Seal | None = None
        # Work steps left for after their commit (`later`), and whether its turn is due.
        self._later: list[Callable[[], None]] = []
        self._later_due = False

    def subscribe(self, listener: Callable[[Event], None],
                  after_each_commit: Callable[[], None] | None,
                  prepare: Callable[[Event], None] | None) -> Callable[[], None]:
        """`Store.subscribe`: the three hooks added; returns what removes them."""
        self.listeners.append(listener)
        if after_each_commit is not None:
            self.after_commit.append(after_each_commit)
        if prepare is not None:
            self.preparers.append(prepare)

        def unsubscribe() -> None:
            self.listeners.remove(listener)
            if after_each_commit is not None:
                self.after_commit.remove(after_each_commit)
            if prepare is not None:
                self.preparers.remove(prepare)

        return unsubscribe

    # --- group commit -------------------------------------------------------------------

    def group_on(self, loop: asyncio.AbstractEventLoop, flush_in: str) -> None:
        """Group money steps' flushes from now on, each at the end of a turn of `loop`, whose
        thread owns the store: run there (FLUSH_IN_LOOP), or in a thread of its own that
        hands its result back to the loop (FLUSH_IN_THREAD)."""
        if flush_in not in FLUSH_IN:
            raise ValueError(f"flush_in = {flush_in!r}: one of {', '.join(FLUSH_IN)}")
        self._loop = loop
        self._durability.flush_times.flush_in = flush_in
        if flush_in == FLUSH_IN_THREAD:
            self._flusher = _flusher_thread()

    @property
    def grouping(self) -> bool:
        return self._loop is not None

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        """The event loop group commit runs in (None: not grouping, or closed)."""
        return self._loop

    @property
    def holding(self) -> bool:
        """Some committed entries are not yet given out (their flush is due or running)."""
        return bool(self._held) or self._in_flight is not None

    def when_durable(self, waiter: Waiter) -> None:
        """`waiter` is called once every commit made so far is on the disk and given out
        (at once when nothing is held)."""
        if not self.holding:
            waiter(None)
        else:
            self._waiters.append(waiter)

    @property
    def first_held_seq(self) -> int | None:
        """The first log entry committed but not yet given out (None: all are out)."""
        for events, _, _ in (self._in_flight or []) + self._held:
            if events:
                return events[0].seq
        return None

    def close(self) -> None:
        """Flush what is held, in the caller's thread, as the store closes: it is on the
        disk and its anchor written, and its waiters are answered; its entries are not
        given out (the listeners are stopping; a subscriber reads them from the log)."""
        if self._flusher is not None:
            self._flusher.shutdown(wait=True)  # a flush in flight returns first
            self._flusher = None
        self._loop = None
        held = (self._in_flight or []) + self._held
        waiters = self._in_flight_waiters + self._waiters
        self._in_flight, self._held, self._in_flight_waiters, self._waiters = None, [], [], []
        if held:
            self._durability.flush_now()
            seals = [seal for _, seal, _ in held if seal is not None]
            if seals:
                self._durability.committed(seals[-1], durable=True)
        self._settle_waiters(waiters, None)
        self._run_later()  # nothing left behind: a journal's last lines are written

    # --- after a step -------------------------------------------------------------------

    def later(self, work: list[Callable[[], None]]) -> None:
        """Run `work` (what a step left for after its end: `Store.after_step`) on this
        thread, after the step's commit; with group commit in a callback of its own, queued
        behind the step's flush's start (`committed` schedules that first), so it runs
        while the disk works rather than in front of the flush. Without a loop, at once."""
        self._later += work
        if self._loop is None or self._loop.is_closed():  # no loop (left) to run it later
            self._run_later()
        elif not self._later_due:
            self._later_due = True
            self._loop.call_soon(self._run_later)

    def _run_later(self) -> None:
        self._later_due = False
        while self._later:  # one at a time: a failing one leaves the rest queued, not lost
            self._later.pop(0)()

    # --- a step's commit ----------------------------------------------------------------

    def committed(self, events: list[Event], seal: Seal | None, *, flushed: bool,
                  must_flush: bool) -> None:
        """The step just committed (flushed if `flushed`). Held while grouping if it must
        be flushed or anything before it is still held (entries go out in log order)."""
        if events or seal is not None:
            self._newest_seal = seal
        if self.grouping and not flushed and (must_flush or self.holding):
            self._held.append((events, seal, must_flush))
            if self._in_flight is None and not self._start_due:
                # Not at once: the steps that follow in this loop turn share the flush.
                self._start_due = True
                assert self._loop is not None
                self._loop.call_soon(self._start_flush)
            return
        self._give_out(events)
        if seal is not None and flushed:
            # After the report: waking the anchor's thread does not delay it. Only a durable
            # commit moves the anchor (`Durability.committed`): a grouped one (a card's) has
            # nothing to hand over.
            self._durability.committed(seal, durable=True)
            # After the step's report: the witness's digest of the money (a few reads and a
            # hash) is not in front of a lock-out or a settlement. Nothing has written since
            # the commit, so it reads the state the seal covers.
            self._tell_durable_listeners(seal)
        # Only now: what the step decided is out before the checkpoint's two flushes.
        self._durability.checkpoint_if_due(flushed)

    def _give_out(self, events: list[Event]) -> None:
        for event in events:  # listeners see only what was committed
            for listener in self.listeners:
                listener(event)
        if events:
            for given_out in self.after_commit:
                given_out()

    # --- the shared flush ---------------------------------------------------------------

    def _start_flush(self) -> None:
        """Flush every commit held now (on this thread, or in the flusher's); or, if none of
        them must be flushed (they only waited behind earlier ones), give them out at once."""
        self._start_due = False
        if self._loop is None or self._in_flight is not None:
            return  # closed meanwhile (close() flushed), or already on its way
        held, waiters, self._held, self._waiters = self._held, self._waiters, [], []
        if not any(must for _, _, must in held):
            self._give_out_all(held, waiters, durable=False)
            return
        self._in_flight, self._in_flight_waiters = held, waiters
        mark = self._durability.flush_mark()  # how far the WAL is now: what this flush covers
        if self._flusher is None:
            self._flush_on_loop(mark)
            return
        self._flush_started.clear()
        self._flusher.submit(self._flush_in_thread, self._loop, mark)
        # The flusher's thread needs the GIL to reach its flush, and this thread would keep
        # it for whatever the loop runs next (the lines below, a step's later work): the
        # disk would start only once the loop went idle, 0.2-0.6 ms later on this machine.
        # Waiting here gives the GIL up until the flush is under way (the flush itself
        # runs without the GIL; the flusher's thread opens the WAL before it says so, as
        # that call gives up the GIL too).
        self._flush_started.wait(FLUSH_START_WAIT_S)
        if self.preparers:  # the disk is working: this thread has nothing else to wait for
            for events, _, _ in held:
                for event in events:
                    for prepare in self.preparers:
                        prepare(event)

    def _flush_on_loop(self, mark: str | None) -> None:
        """FLUSH_IN_LOOP: the flush on this thread, its result taken at once. Nothing else
        runs meanwhile, so no step commits during it: what arrives waits in its socket or
        queue for the next turn, and shares the next flush. No other thread is woken to
        flush or to hand the result back (on this machine 0.5 ms of a money step's report
        at p99, docs/performance.md), and the step's later work (its journal lines) runs
        after the report rather than beside the disk."""
        error: BaseException | None = None
        seconds = 0.0
        try:
            seconds = self._durability.flush_in_thread()
        except Exception as exc:  # noqa: BLE001 - _flushed decides what a failed flush means
            error = exc
        if seconds >= SLOW_FLUSH_S:
            # The loop stood still that long, and storage that stalls once tends to stall
            # again, longer: past the watchdog's loop-lag bound (3.3 s) the daemon would be
            # restarted. From the next flush on, the loop goes on while the disk works.
            self._flusher = _flusher_thread()
            self._durability.flush_times.moved_to_a_thread(seconds)
        self._flushed(error, mark, seconds)

    def _flush_in_thread(self, loop: asyncio.AbstractEventLoop, mark: str | None) -> None:
        """In the flusher's thread: the flush, then its result handed straight to the loop.
        One callback, not an executor future's two (its state copied to an asyncio future,
        whose done callback runs a loop turn later): a money step's report waits for it."""
        error: BaseException | None = None
        seconds = 0.0
        try:
            seconds = self._durability.flush_in_thread(self._flush_started.set)
        except BaseException as exc:  # noqa: BLE001 - the loop decides what a failed flush means
            error = exc
        try:
            loop.call_soon_threadsafe(self._flushed, error, mark, seconds)
        except RuntimeError:  # the loop closed meanwhile: close() flushes what is held
            pass

    def _flushed(self, error: BaseException | None, mark: str | None, seconds: float) -> None:
        """On the loop's thread: the flush returned after `seconds` (`error`: it failed).
        Give out what it covered, then start the next one for what was committed
        meanwhile."""
        if self._in_flight is None:
            return  # the store closed meanwhile and flushed it itself
        covered, waiters = self._in_flight, self._in_flight_waiters
        self._in_flight, self._in_flight_waiters = None, []
        if error is not None:
            # The commits are in the WAL but not known to be on the disk: none of them is
            # reported, and the next money step tries the flush again.
            log.critical("store_flush_failed", error=str(error), held=len(covered))
            self._held = covered + self._held
            waiters, self._waiters = waiters + self._waiters, []
            self._settle_waiters(waiters, error)
            return
        self._durability.flushed_in_thread(mark)
        if not self._held:  # nothing committed meanwhile: the later waiters are answered too
            waiters, self._waiters = waiters + self._waiters, []
        self._give_out_all(covered, waiters, durable=True)
        # Committed while it flushed (a flusher thread's), at once; committed by a listener
        # just now (either place), `committed` has already scheduled their flush.
        if self._held and not self._start_due:
            self._start_flush()
        self._durability.flush_times.add(seconds)  # behind the report and the next flush

    def _give_out_all(self, covered: list[tuple[list[Event], Seal | None, bool]],
                      waiters: list[Waiter], *, durable: bool) -> None:
        """Give out held commits, in order; a durable group moves the anchor to its last
        seal and hands that seal to the durable listeners, but only if no step came after
        it: a listener reads the store and the table as the seal leaves them (the witness's
        digest of the money, the shoe's card acknowledgement), and a step held meanwhile is
        not on the disk, nor is a card's step whose entries wait in memory (C31) held behind
        it in the same turn (two frames in one read). The flush that covers the next one
        hands over its own seal."""
        seals = [seal for _, seal, _ in covered if seal is not None]
        given = [event for events, _, _ in covered for event in events]
        try:
            self._give_out(given)
        finally:
            # The replies before the anchor's hand-off and the durable listeners (the
            # witness's digest of the money): neither is needed to acknowledge what is on
            # the disk (the anchor may lag the store, ruling C24), so neither delays a reply.
            self._settle_waiters(waiters, None)
            # After the report too: whether a round ended, for the checkpoint's turn.
            self._round_ended = self._round_ended or (
                durable and any(event.kind in ROUND_ENDS for event in given))
            if self._loop is not None:
                # A callback of its own, after those the waiters just scheduled: the replies
                # they send do not wait for the checkpoint's flushes. Flushes before it runs
                # share it (a durable one among them counts).
                if self._checkpoint_after is None:
                    self._loop.call_soon(self._checkpoint_if_due)
                self._checkpoint_after = bool(self._checkpoint_after) or durable
        if seals and durable:  # after the report, as above
            self._durability.committed(seals[-1], durable=True)
        if seals and durable and seals[-1] is self._newest_seal:
            self._tell_durable_listeners(seals[-1])

    def _tell_durable_listeners(self, seal: Seal) -> None:
        """Each durable listener, whatever the others do: one that fails is logged and
        passed over. What each does is covered by the next durable commit (the witness's
        next head names the whole log, the shoe's next acknowledgement every card below
        it), so a seal one of them misses costs nothing the others should pay for."""
        for listener in self.durable_listeners:
            try:
                listener(seal, self._db)
            except Exception as exc:  # noqa: BLE001 - see above: logged, the rest go on
                log.error("durable_listener_failed", listener=getattr(
                    listener, "__qualname__", repr(listener)), error=str(exc),
                    commit_no=seal.commit_no)

    def _checkpoint_if_due(self) -> None:
        flushed, self._checkpoint_after = bool(self._checkpoint_after), None
        round_ended, self._round_ended = self._round_ended, False
        if self._loop is not None:  # else the store closed meanwhile
            self._durability.checkpoint_if_due(flushed, round_ended=round_ended)

    @staticmethod
    def _settle_waiters(waiters: list[Waiter], error: BaseException | None) -> None:
        for waiter in waiters:
            waiter(error)
