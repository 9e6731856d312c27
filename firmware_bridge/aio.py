"""Thin asyncio adapters around the sans-I/O LinkEndpoint: serial, a raw fd (pty master), pyusb.

The adapter's only jobs are moving bytes between a transport and the core,
running the core's timers on the loop clock, and turning core events into
awaitables.  All protocol decisions stay in ``firmware_bridge.link``.

* ``AsyncLink.open_serial(url, ...)`` opens any pyserial URL (``/dev/ttyUSB0``,
  a pty slave path, ``socket://host:port``) through pyserial-asyncio-fast, with
  an exclusive lock where the platform has one; a device path is read and written
  without ``select()`` (``firmware_bridge/serial_port.py``), whatever its descriptor's
  number.
* ``AsyncLink.over_fd(fd, ...)`` serves the device side of a pseudo-terminal
  (the master fd) with ``loop.add_reader``; the caller keeps owning the fd.
* ``AsyncLink.over_usb(device, ep_out=, ep_in=, ...)`` runs pyusb's blocking
  bulk transfers off the loop: one reader thread polling bulk IN with a short
  timeout and one single-thread executor for bulk OUT (so writes keep order).
  USB packets are just a byte stream to the framing: a frame may span packets
  and a packet may hold several frames.

Every factory starts the link at once: the core sends RESET (host and device
alike), then ``wait_up()`` returns the peer's Hello.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future as ThreadFuture
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from firmware_bridge.errors import (
    BridgeError,
    LinkDownError,
    LinkError,
    LinkTimeoutError,
    TransportError,
)
from firmware_bridge.link import (
    BAUD_DEFAULT,
    LinkDown,
    LinkEndpoint,
    LinkEvent,
    LinkState,
    LinkTiming,
    MessageAcked,
    MessageReceived,
    PeerRefused,
    Role,
)
from firmware_bridge.messages import Hello, Message

log = logging.getLogger(__name__)

RECEIVE_QUEUE_LIMIT = 1024
"""Messages received but not yet taken by receive(); beyond it the oldest is dropped and
counted (a full shoe of 8 decks is 416 cards: a healthy consumer never gets near)."""

FD_READ_SIZE = 4096  # one pty buffer's worth per read() call
FD_WRITE_BUFFER_LIMIT = 16 * 1024
"""Bytes waiting for a slow fd; beyond it they are dropped (the link layer resends):
64 max frames, far more than a window."""

FD_EIO_RETRY = 0.1
"""A pty master reads EIO while no process has the slave open; look again this often
instead of spinning on a reader that is always 'ready'."""

USB_PACKET_SIZE = 64  # full-speed bulk wMaxPacketSize (USB 2.0 section 5.8.3)
USB_READ_TIMEOUT_MS = 500
"""Bulk IN read timeout. A read returns as soon as bytes arrive, so this adds no latency; it
bounds how long close() waits for the reader thread (half a second, at an unplug or a
shutdown) and sets how often an idle link wakes the reader: twice a second, not twenty
times (the idle-CPU figure of bench/bench_daemon.py)."""

USB_MAX_QUEUED_WRITES = 32
"""Bulk OUT writes waiting for the writer thread; beyond it new bytes are dropped (a device
that stopped reading would otherwise grow the queue forever; the link layer resends)."""

SERIAL_WRITE_BUFFER_LIMIT = 16 * 1024  # as FD_WRITE_BUFFER_LIMIT, for a stalled serial port

_LIBUSB_ERROR_TIMEOUT = -7  # libusb_error code for a transfer timeout

USB_WRITE_TIMEOUT_MS = 1000
"""Bulk OUT timeout: a device that NAKs OUT for a second is not reading; the write is
dropped and the link layer's retransmission (or failure) takes over."""


class _Transport(Protocol):
    def write(self, data: bytes) -> None: ...

    async def close(self) -> None: ...


def _consume_exception(future: asyncio.Future[Any]) -> None:
    # Futures of cancelled senders may fail later; retrieve so asyncio does not warn.
    if not future.cancelled():
        future.exception()


class AsyncLink:
    """One link endpoint on an asyncio transport.  Create with a factory classmethod."""

    def __init__(
        self,
        role: Role,
        hello: Hello,
        *,
        timing: LinkTiming | None = None,
        accept_peer: Callable[[Hello], str | None] | None = None,
        session_ids: Callable[[], int] | None = None,
        endpoint: LinkEndpoint | None = None,
    ) -> None:
        """``endpoint``: a core built by the caller (e.g. a simulator's deliberately broken
        one, hil.misbehaviour); otherwise one is made from the other arguments."""
        self._loop = asyncio.get_running_loop()
        self._core = endpoint or LinkEndpoint(
            role, hello, timing=timing, accept_peer=accept_peer, session_ids=session_ids
        )
        self._transport: _Transport | None = None
        self._rx: deque[Message] = deque()
        self._acks: dict[int, asyncio.Future[None]] = {}
        self._waiters: set[asyncio.Future[None]] = set()
        self._down_pending: LinkError | None = None
        self._transport_error: BridgeError | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: float | None = None
        self._write_due = False  # a write of what the core produced, after the readers
        self._closed = False
        self._rx_dropped = 0
        self.on_event: Callable[[LinkEvent], None] | None = None
        """Called for every core event (LinkUp, LinkDown, PeerRefused, BadMessage, ...)."""

    # --- factories -------------------------------------------------------------------

    @classmethod
    async def open_serial(
        cls,
        url: str,
        role: Role,
        hello: Hello,
        *,
        baudrate: int = BAUD_DEFAULT,
        accept_peer: Callable[[Hello], str | None] | None = None,
        timing: LinkTiming | None = None,
        **kw: Any,
    ) -> AsyncLink:
        """Open a pyserial URL (8N1) and start the link; raises TransportError if it cannot open."""
        import serial  # pyserial: imported here so the sans-I/O modules never need it
        import serial_asyncio_fast

        link = cls(
            role, hello, timing=timing or LinkTiming.for_baudrate(baudrate),
            accept_peer=accept_peer, **kw,
        )
        options: dict[str, Any] = {
            "baudrate": baudrate, "bytesize": serial.EIGHTBITS,
            "parity": serial.PARITY_NONE, "stopbits": serial.STOPBITS_ONE,
        }
        if "://" not in url and os.name == "posix":
            options["exclusive"] = True  # flock: a second daemon cannot share the shoe's port
        protocol = _SerialProtocol(link)
        try:
            if "://" in url:  # pyserial's URL handlers (socket://, loop://, spy://)
                transport, _ = await serial_asyncio_fast.create_serial_connection(
                    link._loop, lambda: protocol, url, **options
                )
            else:  # a device: read and written without select() (serial_port.py says why)
                from firmware_bridge.serial_port import SerialPort

                port = await link._loop.run_in_executor(None, lambda: SerialPort(url, **options))
                transport, _ = await serial_asyncio_fast.connection_for_serial(
                    link._loop, lambda: protocol, port
                )
        except (OSError, ValueError) as exc:  # SerialException is an OSError
            raise TransportError(f"cannot open serial port {url}: {exc}") from exc
        link._attach(_SerialTransport(transport, protocol))
        return link

    @classmethod
    def over_fd(
        cls, fd: int, role: Role, hello: Hello, *, close_fd: bool = False, **kw: Any
    ) -> AsyncLink:
        """Serve the link on a raw fd (a pty master); the fd is made non-blocking and,
        unless ``close_fd``, still belongs to the caller after close()."""
        link = cls(role, hello, **kw)
        link._attach(_FdTransport(link, fd, close_fd=close_fd))
        return link

    @classmethod
    def over_usb(
        cls,
        device: Any,
        *,
        ep_out: Any,
        ep_in: Any,
        role: Role,
        hello: Hello,
        **kw: Any,
    ) -> AsyncLink:
        """Serve the link on a pyusb device's bulk endpoints (addresses or Endpoint objects)."""
        link = cls(role, hello, **kw)
        link._attach(_UsbTransport(link, device, ep_out, ep_in))
        return link

    # --- public API ------------------------------------------------------------------------

    @property
    def state(self) -> LinkState:
        return self._core.state

    @property
    def peer(self) -> Hello | None:
        return self._core.peer

    @property
    def counters(self) -> dict[str, int]:
        counters = self._core.counters.as_dict()
        counters["rx_dropped"] = self._rx_dropped
        return counters

    @property
    def endpoint(self) -> LinkEndpoint:
        """The sans-I/O core (for diagnostics; do not drive it directly)."""
        return self._core

    async def wait_up(self, timeout: float | None) -> Hello:
        """Wait until the handshake is done and return the peer's Hello.

        Raises LinkTimeoutError (timeout, or the core gave up), IncompatibleVersionError /
        LinkRefusedError (refused), LinkDownError (closed or transport lost)."""
        try:
            return await asyncio.wait_for(self._wait_up(), timeout)
        except TimeoutError as exc:
            if isinstance(exc, LinkError):
                raise
            raise LinkTimeoutError(
                f"link not up within {timeout} s (state {self.state.value})"
            ) from exc

    async def _wait_up(self) -> Hello:
        while True:
            self._raise_if_closed()
            state = self._core.state
            if state is LinkState.UP:
                self._down_pending = None  # the caller is in the new session now
                assert self._core.peer is not None
                return self._core.peer
            if state is LinkState.REFUSED:
                assert self._core.refusal is not None
                raise self._core.refusal
            if state is LinkState.FAILED:
                down = self._core.last_down
                raise LinkTimeoutError(down.reason if down else "link failed") from (
                    down.error if down else None
                )
            await self._changed()

    async def send(self, message: Message) -> None:
        """Send ``message`` and return once the peer acknowledged it.

        Raises LinkDownError if the link is not up or goes down first (the message may or
        may not have arrived), LinkBusyError if the send queue is full, MessageError if the
        message is invalid."""
        self._raise_if_closed()
        ticket = self._core.send(message, self._loop.time())
        future: asyncio.Future[None] = self._loop.create_future()
        future.add_done_callback(_consume_exception)
        self._acks[ticket] = future
        self._service()
        # shield: a cancelled sender must not disturb the core's bookkeeping of the frame
        await asyncio.shield(future)

    async def receive(self) -> Message:
        """Next received message; raises LinkDownError once when a session ends, and
        whenever the link is failed, refused or closed."""
        while True:
            if self._rx:
                return self._rx.popleft()
            if self._down_pending is not None:
                error, self._down_pending = self._down_pending, None
                raise LinkDownError(f"link down: {error}") from error
            self._raise_if_closed()
            if self._core.state in (LinkState.FAILED, LinkState.REFUSED, LinkState.IDLE):
                cause = self._core.refusal or (self._core.last_down.error
                                               if self._core.last_down else None)
                raise LinkDownError(f"link is {self._core.state.value}") from cause
            await self._changed()

    @property
    def closed(self) -> bool:
        """True once closed or its transport was lost: no further session can start on it."""
        return self._closed or self._transport_error is not None

    async def wait_revived(self, timeout: float | None) -> bool:
        """Wait while REFUSED (docs/protocol.md 4.5); True once a new session began (a peer
        RESET, or reconnect()), False after ``timeout``.  Raises LinkDownError if the
        transport is lost or the link closed meanwhile."""
        async def left_refused() -> None:
            while self._core.state is LinkState.REFUSED:
                self._raise_if_closed()
                await self._changed()
            self._raise_if_closed()

        try:
            await asyncio.wait_for(left_refused(), timeout)
        except TimeoutError:
            return False
        return True

    def reconnect(self) -> None:
        """Start a new session on the same transport (sends RESET)."""
        self._raise_if_closed()
        self._core.connect(self._loop.time())
        self._service()

    async def close(self) -> None:
        """Stop the link and its transport; pending sends fail with LinkDownError."""
        if self._closed:
            return
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
        self._fail_acks(LinkDownError("link closed"), None)
        self._notify()
        if self._transport is not None:
            await self._transport.close()

    # --- plumbing -----------------------------------------------------------------------

    def _attach(self, transport: _Transport) -> None:
        self._transport = transport
        self._core.connect(self._loop.time())
        self._service()

    def _raise_if_closed(self) -> None:
        if self._transport_error is not None:
            raise LinkDownError(f"transport lost: {self._transport_error}") from (
                self._transport_error
            )
        if self._closed:
            raise LinkDownError("link closed")

    def _on_bytes(self, data: bytes) -> None:
        if self._closed:
            return
        self._core.receive(data, self._loop.time())
        self._service(received=True)

    def _on_transport_lost(self, exc: BaseException | None) -> None:
        if self._closed or self._transport_error is not None:
            return
        self._transport_error = TransportError(f"{exc or 'closed by the other end'}")
        if self._timer is not None:
            self._timer.cancel()
        self._fail_acks(LinkDownError(f"transport lost: {exc}"), exc)
        self._notify()

    def _on_timer(self) -> None:
        self._timer = None
        if self._closed or self._transport_error is not None:
            return
        # asyncio may run a timer up to one clock resolution early; never let the core
        # see a time before the deadline it asked for, or it would re-arm the same one.
        now = max(self._loop.time(), self._timer_at or 0.0)
        self._core.poll(now)
        self._service()

    def _service(self, *, received: bool = False) -> None:
        """Write what the core produced, dispatch its events, re-arm its timer.

        `received`: bytes just came in. If they carried messages, what the core produced
        for them (their acknowledgement) is written a callback later, after the readers
        woken here have taken the messages: the daemon reports a card before it writes the
        card's ACK, not after (a write that wakes the device's reader is 13 us at p50 and
        30 us at p99 here, docs/performance.md). The bytes and their order are the core's
        either way: a message sent meanwhile drains them first, the ACK riding on it where
        the core allows (docs/protocol.md 5.10), and the later write finds the rest."""
        events = self._core.events()
        after_readers = received and any(type(event) is MessageReceived for event in events)
        if not after_readers:
            self._write_outgoing()
        for event in events:
            self._dispatch(event)
        self._arm_timer(self._core.next_deadline())
        self._notify()
        if after_readers and not self._write_due:
            # Scheduled after _notify: the readers' wake-ups are queued ahead of it.
            self._write_due = True
            self._loop.call_soon(self._write_outgoing)

    def _write_outgoing(self) -> None:
        self._write_due = False
        out = self._core.outgoing()
        if out and self._transport is not None and self._transport_error is None \
                and not self._closed:
            self._transport.write(out)

    def _arm_timer(self, deadline: float | None) -> None:
        """Have `_on_timer` run by the core's next deadline. A timer already armed at or
        before it is kept: every frame received or sent moves the keepalive's and the
        silence's deadlines later, and a timer cancelled and made again at each frame was
        a few microseconds of every card; the kept timer fires early, the core finds nothing
        due (`LinkEndpoint.poll` acts only on deadlines passed) and it is armed again then."""
        if deadline is None or self._closed:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._timer_at = None
            return
        if self._timer is not None and self._timer_at is not None and self._timer_at <= deadline:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = deadline
        self._timer = self._loop.call_at(deadline, self._on_timer)

    def _dispatch(self, event: LinkEvent) -> None:
        if isinstance(event, MessageReceived):
            if len(self._rx) >= RECEIVE_QUEUE_LIMIT:
                self._rx.popleft()
                self._rx_dropped += 1
            self._rx.append(event.message)
        elif isinstance(event, MessageAcked):
            future = self._acks.pop(event.ticket, None)
            if future is not None and not future.done():
                future.set_result(None)
        elif isinstance(event, LinkDown):
            self._down_pending = event.error
            self._fail_acks(
                LinkDownError(f"{event.reason}; delivery of the message is unknown"), event.error
            )
        elif isinstance(event, PeerRefused):
            self._fail_acks(LinkDownError(event.reason), event.error)
        if self.on_event is not None:
            try:
                self.on_event(event)
            except Exception:  # a listener's bug must not kill the transport's read path
                log.exception("AsyncLink.on_event listener failed on %r", event)

    def _fail_acks(self, error: LinkError, cause: BaseException | None) -> None:
        error.__cause__ = cause
        acks, self._acks = self._acks, {}
        for future in acks.values():
            if not future.done():
                future.set_exception(error)

    async def _changed(self) -> None:
        future: asyncio.Future[None] = self._loop.create_future()
        self._waiters.add(future)
        try:
            await future
        finally:
            self._waiters.discard(future)

    def _notify(self) -> None:
        for future in self._waiters:
            if not future.done():
                future.set_result(None)


# --- transports ---------------------------------------------------------------------


SERIAL_CLOSE_TIMEOUT = 1.0
"""How long close() waits for the port to be released before aborting: a reconnect reopens
the same port with an exclusive lock, so the old descriptor must be gone first."""


class _SerialProtocol(asyncio.Protocol):
    def __init__(self, link: AsyncLink) -> None:
        self._link = link
        self.lost: asyncio.Future[None] = link._loop.create_future()

    def data_received(self, data: bytes) -> None:
        self._link._on_bytes(data)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.lost.done():
            self.lost.set_result(None)
        self._link._on_transport_lost(exc)


class _SerialTransport:
    def __init__(self, transport: asyncio.BaseTransport, protocol: _SerialProtocol) -> None:
        self._transport: Any = transport
        self._protocol = protocol
        self.dropped = 0

    def write(self, data: bytes) -> None:
        if self._transport.is_closing():
            return
        if self._transport.get_write_buffer_size() + len(data) > SERIAL_WRITE_BUFFER_LIMIT:
            self.dropped += len(data)  # the port is stalled; the link layer resends
            return
        self._transport.write(data)

    async def close(self) -> None:
        self._transport.close()
        try:
            await asyncio.wait_for(asyncio.shield(self._protocol.lost), SERIAL_CLOSE_TIMEOUT)
        except TimeoutError:
            self._transport.abort()  # a stalled port would never flush; drop the bytes
            await asyncio.sleep(0)


class _FdTransport:
    """Non-blocking reads with add_reader; writes with a bounded buffer and add_writer."""

    def __init__(self, link: AsyncLink, fd: int, *, close_fd: bool) -> None:
        self._link = link
        self._loop = link._loop
        self._fd = fd
        self._close_fd = close_fd
        self._buffer = bytearray()
        self._writing = False
        self._retry: asyncio.TimerHandle | None = None
        self._closed = False
        self.dropped = 0
        os.set_blocking(fd, False)
        self._loop.add_reader(fd, self._readable)

    def _readable(self) -> None:
        try:
            data = os.read(self._fd, FD_READ_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            if exc.errno == errno.EIO:  # pty master: nobody has the slave open right now
                self._loop.remove_reader(self._fd)
                self._retry = self._loop.call_later(FD_EIO_RETRY, self._resume_reading)
                return
            self._fatal(exc)
            return
        if not data:
            self._fatal(None)  # EOF: the other end of a pipe/socket closed
            return
        self._link._on_bytes(data)

    def _resume_reading(self) -> None:
        self._retry = None
        if not self._closed:
            self._loop.add_reader(self._fd, self._readable)

    def write(self, data: bytes) -> None:
        if self._closed:
            return
        if self._buffer:
            self._queue(data)
            return
        try:
            written = os.write(self._fd, data)
        except (BlockingIOError, InterruptedError):
            written = 0
        except OSError as exc:
            if exc.errno == errno.EIO:
                return  # no reader on the slave side: the bytes are lost, as on a cut cable
            self._fatal(exc)
            return
        if written < len(data):
            self._queue(data[written:])

    def _queue(self, data: bytes) -> None:
        if len(self._buffer) + len(data) > FD_WRITE_BUFFER_LIMIT:
            self.dropped += len(self._buffer) + len(data)
            self._buffer.clear()  # stale frames are worthless; the link layer resends
            return
        self._buffer += data
        if not self._writing:
            self._writing = True
            self._loop.add_writer(self._fd, self._writable)

    def _writable(self) -> None:
        try:
            written = os.write(self._fd, self._buffer)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            if exc.errno != errno.EIO:
                self._fatal(exc)
                return
            written = len(self._buffer)
        del self._buffer[:written]
        if not self._buffer:
            self._writing = False
            self._loop.remove_writer(self._fd)

    def _fatal(self, exc: BaseException | None) -> None:
        self._stop()
        self._link._on_transport_lost(exc)

    def _stop(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._retry is not None:
            self._retry.cancel()
        with contextlib.suppress(Exception):
            self._loop.remove_reader(self._fd)
        with contextlib.suppress(Exception):
            self._loop.remove_writer(self._fd)

    async def close(self) -> None:
        self._stop()
        if self._close_fd:
            with contextlib.suppress(OSError):
                os.close(self._fd)


class _UsbTransport:
    """pyusb bulk transfers off the event loop (pyusb calls block)."""

    def __init__(self, link: AsyncLink, device: Any, ep_out: Any, ep_in: Any) -> None:
        self._link = link
        self._loop = link._loop
        self._device = device
        self._ep_out = ep_out
        self._ep_in = ep_in
        packet = int(getattr(ep_in, "wMaxPacketSize", USB_PACKET_SIZE) or USB_PACKET_SIZE)
        self._read_size = packet * 8  # a multiple of the packet size avoids overflow errors
        self._stop = threading.Event()
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="usb-bulk-out")
        self._reader = threading.Thread(
            target=self._read_loop, name="usb-bulk-in", daemon=True
        )
        self.write_timeouts = 0
        self.dropped = 0
        self._queued_writes = 0
        self._queue_lock = threading.Lock()
        self._reader.start()

    def _to_loop(self, callback: Callable[..., None], *args: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is already closed: nobody listens
            self._loop.call_soon_threadsafe(callback, *args)

    def _read_loop(self) -> None:
        import usb.core

        while not self._stop.is_set():
            try:
                data = self._device.read(self._ep_in, self._read_size, timeout=USB_READ_TIMEOUT_MS)
            except usb.core.USBTimeoutError:
                continue
            except Exception as exc:  # noqa: BLE001 - any backend failure ends the transport
                if self._stop.is_set():
                    return
                if (getattr(exc, "errno", None) in (errno.ETIMEDOUT, errno.EAGAIN)
                        or getattr(exc, "backend_error_code", None) == _LIBUSB_ERROR_TIMEOUT):
                    continue  # some backends report timeouts as a plain USBError
                self._to_loop(self._link._on_transport_lost, exc)
                return
            if data:
                self._to_loop(self._link._on_bytes, bytes(data))

    def write(self, data: bytes) -> None:
        if self._stop.is_set():
            return
        with self._queue_lock:
            if self._queued_writes >= USB_MAX_QUEUED_WRITES:
                self.dropped += len(data)
                return
            self._queued_writes += 1
        future = self._writer.submit(self._write_blocking, data)
        future.add_done_callback(self._write_done)

    def _write_blocking(self, data: bytes) -> None:
        import usb.core

        try:
            # pyusb/libusb split the transfer into max-packet transactions; frames are
            # delimited in-band, so no zero-length packet is needed
            self._device.write(self._ep_out, data, timeout=USB_WRITE_TIMEOUT_MS)
        except usb.core.USBTimeoutError:
            self.write_timeouts += 1  # dropped: retransmission recovers or the link fails

    def _write_done(self, future: ThreadFuture[None]) -> None:
        with self._queue_lock:
            self._queued_writes -= 1
        exc = future.exception() if not future.cancelled() else None
        if exc is not None and not self._stop.is_set():
            self._to_loop(self._link._on_transport_lost, exc)

    async def close(self) -> None:
        self._stop.set()
        self._writer.shutdown(wait=False, cancel_futures=True)
        await self._loop.run_in_executor(None, self._reader.join, 2 * USB_READ_TIMEOUT_MS / 1000 + 1)
