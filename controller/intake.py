"""The table's one way in for device events: drivers emit from any thread, the table
sees each event once, one step at a time, in the order emitted, on the loop's thread."""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Callable

import structlog

from drivers.protocols import CardDrawn, DeviceEvent

log = structlog.get_logger("tabled")

QUEUE_LIMIT = 10_000  # device events waiting for the table; a full queue means the loop is stuck


class EventIntake:
    """`step` runs one event through the table; no event reaches it before `ready` is set
    (the start's check of the whole history)."""

    def __init__(self, step: Callable[[DeviceEvent], None], ready: asyncio.Event) -> None:
        self._step = step
        self._ready = ready
        self.queue: asyncio.Queue[DeviceEvent] = asyncio.Queue(maxsize=QUEUE_LIMIT)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.loop_thread = 0  # the loop's thread, once it runs
        self._from_threads: deque[DeviceEvent] = deque()
        self._handling = False  # the table is in a step (an event must then wait its turn)
        self.consumer: asyncio.Task[None] | None = None

    def bind(self) -> None:
        """Called on the running loop: events from its own thread are queued at once."""
        self.loop = asyncio.get_running_loop()
        self.loop_thread = threading.get_ident()

    def start(self) -> None:
        self.consumer = asyncio.create_task(self.consume(), name="table-events")

    def stop(self) -> None:
        if self.consumer is not None:
            self.consumer.cancel()

    def emit(self, event: DeviceEvent) -> None:
        """Device callback: safe from any thread; only enqueues. On the loop's own thread (the
        shoe's serial reader, the shuffler's callbacks) the event is queued at once, not one
        loop turn and a wake-up of the loop's self-pipe later; from another thread (a GPIO
        edge callback) it waits in `_from_threads` for the loop. Either way the table sees
        events in the order they were emitted: a thread's event emitted first is queued
        first."""
        assert self.loop is not None
        if threading.get_ident() == self.loop_thread:
            if self._from_threads:
                self._take_from_threads()
            self.enqueue(event)
        else:
            self._from_threads.append(event)  # deque.append is atomic: no lock needed
            self.loop.call_soon_threadsafe(self._hand_over)

    def _hand_over(self) -> None:
        """The loop takes what threads emitted (a GPIO edge: the lock-out button, a seat)."""
        self._take_from_threads(at_once=True)

    def _take_from_threads(self, *, at_once: bool = False) -> None:
        while self._from_threads:
            self.enqueue(self._from_threads.popleft(), at_once=at_once)

    def enqueue(self, event: DeviceEvent, *, at_once: bool = False) -> None:
        """Into the queue, or, for an event that finds the table waiting, straight to the
        table: the queue would only add a loop turn before its step. Straight only where no
        driver's code is under the call, half way through its own bookkeeping (a driver may
        emit mid-update, and the step may call that driver back): the loop's hand-over of
        what threads emitted (`at_once`), and the shoe's card, which its driver emits as the
        last thing it does with a frame (drivers/shoe.py)."""
        if (at_once or type(event) is CardDrawn) and self._idle():
            self._handle(event)
            return
        try:
            self.queue.put_nowait(event)
        except asyncio.QueueFull:
            log.error("event_queue_full", dropped=type(event).__name__)

    def _idle(self) -> bool:
        """The table is waiting for its next event: not in a step (an event a step causes
        waits for it to end), nothing queued or handed to the consumer (an item stays in the
        queue until the woken consumer takes it), and the consumer is running."""
        consumer = self.consumer
        return (not self._handling and self.queue.empty() and not self._from_threads
                and consumer is not None and not consumer.done()
                and self._ready.is_set())

    async def consume(self) -> None:
        await self._ready.wait()  # device events wait in the queue until then
        while True:
            self._handle(await self.queue.get())

    def _handle(self, event: DeviceEvent) -> None:
        self._handling = True
        try:
            self._step(event)
        finally:
            self._handling = False

    def alive(self) -> bool:
        return self.consumer is not None and not self.consumer.done()
