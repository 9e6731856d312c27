"""The control socket's subscribers: each fed page by page from the store (nothing is
buffered per subscriber beyond one page; one that stops reading is dropped with a reason);
caught-up subscribers share the last RECENT_EVENTS committed entries, each encoded once,
and are sent a new entry as it is committed (no wake-up of their task in between)."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import structlog

from controller.access import Caller
from controller.control_wire import event_line, kept_line, line, send
from controller.events.codec import EventRecord
from controller.events.system_records import SubscriberDropped
from controller.memory.delivery import WhenDurable
from controller.memory.store import Event, Store

log = structlog.get_logger("control")

HISTORY_PAGE = 256  # entries read from the store per step of a stream (about 100 KB)
RECENT_EVENTS = HISTORY_PAGE
"""Committed entries kept, each encoded at most once, for the streams that are caught up:
they take a new entry from here instead of each reading it back from the store and encoding
it again (a card's step is two entries, and every stream is woken for them)."""
History = Callable[[int, int], Sequence[Event]]  # (after_seq, count) -> the next entries
Record = Callable[[EventRecord], None]  # into the event log (controller/events)


class _Stream:
    """One subscriber's connection and how far it has been sent. `live` while its task is
    waiting, caught up and with nothing unsent: then a commit's lines are written to it as
    the commit ends (`send_live`); otherwise its task is woken, which pages, drains and
    drops a stalled reader."""

    __slots__ = ("wake", "writer", "last", "live", "unsent")

    def __init__(self, writer: asyncio.StreamWriter, after_seq: int) -> None:
        self.wake = asyncio.Event()
        self.writer = writer
        self.last = after_seq
        self.live = False
        self.unsent: list[bytes] = []  # a commit's lines for a live stream, until it ends



class EventStreams:
    """Every subscriber of one control server. `record` writes a dropped subscriber to the
    log (through the server's refusal log); `stall_s` is how long one may read nothing."""

    def __init__(self, record: Record, stall_s: Callable[[], float]) -> None:
        self._record = record
        self._stall_s = stall_s
        self.when_durable: WhenDurable | None = None  # the followed store's (group commit)
        self.subscribers: set[_Stream] = set()
        # The last RECENT_EVENTS published entries, consecutive seqs, oldest first: [event,
        # its stream line or None until a stream first needs it].
        self._recent: deque[list[Any]] = deque(maxlen=RECENT_EVENTS)
        self._history: History | None = None
        self.closing = False
        # Lines made while their entry's flush ran (`_prepare`), by seq, with the entry.
        self._prepared: dict[int, tuple[Event, bytes]] = {}

    def set_history(self, history: History) -> None:
        self._history = history

    def close(self) -> None:
        self.closing = True
        for stream in list(self.subscribers):
            stream.live = False
            stream.wake.set()

    def follow(self, store: Store) -> None:
        """Stream what `store` commits: each entry is taken as it is given out, and once a
        commit's entries are all out, `send_live` writes them together."""
        store.subscribe(self._take, after_each_commit=self.send_live, prepare=self._prepare)
        self.when_durable = store.when_durable  # replies wait for it (control_session.py)

    def publish(self, event: Event) -> None:
        """Stream one committed entry on its own (a log that is not a Store's)."""
        self._take(event)
        self.send_live()

    def _take(self, event: Event) -> None:
        """Every committed log entry, in order. A live stream (caught up, nothing unsent) is
        given the entry's line to send with the rest of its commit (`send_live`); any other
        is woken: it takes entries from the last RECENT_EVENTS kept here (encoded once for
        every stream), or, further behind, reads the store itself, page by page (so a slow
        one costs no memory here)."""
        recent = self._recent
        if recent and recent[-1][0].seq + 1 != event.seq:
            recent.clear()  # not the next entry: what is kept must have no gap
        prepared = self._prepared.pop(event.seq, None) if self._prepared else None
        item: list[Any] = [event, prepared[1] if prepared and prepared[0] is event else None]
        recent.append(item)
        for stream in self.subscribers:
            if stream.live and stream.last + 1 == event.seq:
                stream.unsent.append(kept_line(item))
                stream.last = event.seq
            else:
                stream.live = False
                stream.wake.set()

    def _prepare(self, event: Event) -> None:
        """An entry held for its flush: its line made while the disk works, so that once it
        is out the streams only write it (nothing is sent here)."""
        if self.subscribers:
            if len(self._prepared) >= RECENT_EVENTS:  # entries a closed store never gave out
                self._prepared.clear()
            self._prepared[event.seq] = (event, event_line(event))

    def send_live(self) -> None:
        """Write each live stream's lines of the commit just given out, in one write: the
        dealer's prompt goes out with the card it answers, not one wake-up of the reader
        later. A stream whose socket does not take it all, or has gone, is its task's."""
        for stream in self.subscribers:
            if not stream.unsent:
                continue
            lines, stream.unsent = stream.unsent, []
            transport = stream.writer.transport
            sent = False
            if not transport.is_closing():
                try:
                    transport.write(b"".join(lines))
                    sent = True
                except Exception:  # its task finds what failed (drain raises), ends the stream
                    log.debug("stream_write_failed", exc_info=True)
            if not sent:
                stream.last -= len(lines)  # the task pages them again from the kept ones
            if not sent or transport.get_write_buffer_size():
                stream.live = False
                stream.wake.set()

    def stream_page(self, after_seq: int, *, kept: bool = True) -> list[tuple[int, bytes]]:
        """The next entries of a stream that has sent up to `after_seq`, as (seq, line):
        from the entries kept here if the next one is kept (and `kept`), else a page read
        from the store."""
        page = self._recent_lines(after_seq) if kept else None
        if page is not None:
            return page
        history = self._history(after_seq, HISTORY_PAGE) if self._history else []
        return [(event.seq, event_line(event)) for event in history]

    def _recent_lines(self, after_seq: int) -> list[tuple[int, bytes]] | None:
        """The kept entries after `after_seq` as stream lines, or None if the entry right
        after it is no longer (or not yet) kept."""
        recent = self._recent
        if not recent:
            return None
        # The kept seqs are consecutive (`_take`): each one is `first` plus its place, not
        # read off its entry (a named tuple's field is an attribute lookup, two a line).
        first = recent[0][0].seq
        end = first + len(recent)
        if not first <= after_seq + 1 <= end:
            return None
        # A loop, not a comprehension (a function call of its own), for a page of two.
        page: list[tuple[int, bytes]] = []
        for seq in range(after_seq + 1, end):
            page.append((seq, kept_line(recent[seq - first])))
        return page

    async def serve(self, response: dict[str, Any], writer: asyncio.StreamWriter,
                    caller: Caller) -> None:
        stream = _Stream(writer, response["after_seq"])
        self.subscribers.add(stream)  # before reading so nothing committed falls in between
        try:
            await send(writer, {"id": response["id"], "ok": True, "result": "subscribed"})
            history = True  # the first page is the store's, whatever is kept: the history
            while not self.closing:
                stream.wake.clear()  # before the read: a commit after it sets the flag again
                stream.live = False
                page = self.stream_page(stream.last, kept=not history)
                history = False
                if page:
                    writer.writelines([line for _, line in page])  # one send, not one a line
                    stream.last = page[-1][0]
                if (page or writer.transport.get_write_buffer_size()) and not await \
                        self._drained(writer, caller, stream.last):
                    return
                if len(page) < HISTORY_PAGE:
                    # Caught up, everything sent: publish writes what comes next, and wakes
                    # this task only if the socket backs up or the stream falls behind.
                    stream.live = not stream.wake.is_set()
                    await stream.wake.wait()
                else:
                    await asyncio.sleep(0)  # a long history: let the rest of the loop run
        finally:
            stream.live = False
            self.subscribers.discard(stream)

    async def _drained(self, writer: asyncio.StreamWriter, caller: Caller, last: int) -> bool:
        if not writer.transport.get_write_buffer_size():
            # Everything went out at once (the usual case): drain cannot wait, so it needs no
            # timer; it still raises if the subscriber has gone.
            await writer.drain()
            return True
        try:
            await asyncio.wait_for(writer.drain(), self._stall_s())
            return True
        except TimeoutError:
            reason = (f"read nothing for {self._stall_s():g} s "
                      "([access] subscriber_stall_s); reconnect with after_seq "
                      f"= the last seq received")
            self._record(SubscriberDropped(caller.describe(), reason, last))
            writer.write(line({"closed": reason}))
            writer.transport.abort()  # its buffer is full: nothing more is kept for it
            return False
