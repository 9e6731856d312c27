"""A paho client's traffic with the broker, on a thread of its own that waits in epoll
(the selectors module's default on Linux), in place of paho's `loop_start`.

paho's own network thread waits in `select()`, which refuses a descriptor numbered 1024 or
above. A table daemon may hold thousands of descriptors (a control connection is one:
`[access] max_connections` is 4096 under `LimitNOFILE=16384`), and so may a pit page
serving many browsers: a connection to the broker made then got such a number, paho's
select() raised at once, the connection was dropped, and the next try 1-30 s later met the
same fate for as long as the descriptors were held. This thread drives the same client
through paho's calls for an event loop of one's own (`reconnect`, `loop_read`,
`loop_write`, `loop_misc`); paho's `on_socket_register_write` wakes it when another
thread's publish has bytes to send.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import structlog

log = structlog.get_logger("progressive.broker")

RECONNECT_MIN_S = 1.0  # paho's default first wait after a lost connection
TICK_S = 1.0  # the longest wait without paho's housekeeping (keepalive pings, timeouts)
FLUSH_AT_STOP_S = 2.0  # how long a stop waits for the queued DISCONNECT to be sent
JOIN_AT_STOP_S = 7.0  # a connect in progress may take paho's 5 s connect timeout


class BrokerThread:
    """Connects `client` to the broker at `host`:`port` from `start()`, keeps it connected,
    and carries its traffic until `stop()` says goodbye. Waits between tries as paho's loop
    does: at once the first time, then from `min_delay_s` doubling up to `max_delay_s`, back
    to the shortest once the broker has accepted a connection."""

    def __init__(self, client: Any, host: str, port: int, *, keepalive_s: int, name: str,
                 on_connect_fail: Callable[[], None], min_delay_s: float = RECONNECT_MIN_S,
                 max_delay_s: float = 30.0) -> None:
        self._client = client
        self._broker = (host, port, keepalive_s)
        self._on_connect_fail = on_connect_fail
        self._min_delay_s, self._max_delay_s = min_delay_s, max_delay_s
        self._delay_s: float | None = None  # None: the broker accepted us since the last wait
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._stop_at: float | None = None  # monotonic time stop() was called
        client.on_socket_register_write = lambda client, userdata, sock: self._wake()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        host, port, keepalive_s = self._broker
        self._client.connect_async(host, port, keepalive=keepalive_s)
        self._thread.start()

    def stop(self) -> None:
        """Send what is queued and a DISCONNECT (the broker then keeps the will to itself),
        at most `FLUSH_AT_STOP_S`, then end the thread. The thread queues the DISCONNECT
        itself, on whatever socket it holds once it sees the stop: queued from here, it
        would be refused while a connect is in progress (paho has no socket yet) and the
        socket that connect makes would be left open."""
        self._stop_at = time.monotonic()
        self._wake()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(JOIN_AT_STOP_S)
        if not self._thread.is_alive():
            self._wake_r.close()
            self._wake_w.close()

    def _wake(self) -> None:
        with contextlib.suppress(OSError):  # full (it is readable already) or closed
            self._wake_w.send(b"\0")

    def _run(self) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(self._wake_r, selectors.EVENT_READ)
            watched: Any = None  # the socket registered with the selector
            first = True
            goodbye = False  # the DISCONNECT queued
            while True:
                sock = self._client.socket()
                if watched is not None and sock is not watched:
                    with contextlib.suppress(KeyError, ValueError, OSError):
                        selector.unregister(watched)  # paho closed it
                    watched = None
                stop_at = self._stop_at
                if stop_at is not None and sock is not None and not goodbye:
                    self._client.disconnect()  # queued after what is already queued
                    goodbye = True
                    continue
                if stop_at is not None and (sock is None or not self._client.want_write() or
                                            time.monotonic() - stop_at >= FLUSH_AT_STOP_S):
                    if sock is not None:  # the broker did not take the DISCONNECT in time
                        sock.close()
                    return
                try:
                    if sock is None:
                        if not first and self._wait(selector):
                            return
                        first = False
                        self._connect()
                        continue
                    if watched is None:
                        selector.register(sock, selectors.EVENT_READ)
                        watched = sock
                    self._serve(selector, sock)
                except Exception as exc:  # noqa: BLE001 -- a defect: said, and the feed goes on
                    log.error("mqtt_thread_error", error=repr(exc))
                    time.sleep(0.1)  # no tight loop should the defect repeat at once

    def _wait(self, selector: selectors.BaseSelector) -> bool:
        """The wait before the next try; True if stop() came meanwhile."""
        self._delay_s = (self._min_delay_s if self._delay_s is None
                         else min(2 * self._delay_s, self._max_delay_s))
        deadline = time.monotonic() + self._delay_s
        while self._stop_at is None and (left := deadline - time.monotonic()) > 0:
            if selector.select(left):
                self._drain()
        return self._stop_at is not None

    def _connect(self) -> None:
        try:
            self._client.reconnect()  # paho's: TCP, TLS, then the CONNECT queued
        except OSError:  # ssl.SSLError and socket.timeout included
            self._on_connect_fail()

    def _serve(self, selector: selectors.BaseSelector, sock: Any) -> None:
        """One wait for the socket (or a wake), then what it is ready for."""
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if self._client.want_write()
                                         else 0)
        if selector.get_key(sock).events != events:
            selector.modify(sock, events)
        pending = getattr(sock, "pending", None)  # TLS: bytes decrypted but not yet read
        buffered = callable(pending) and pending() > 0
        readable = writable = False
        for key, mask in selector.select(0 if buffered else TICK_S):
            if key.fileobj is self._wake_r:
                self._drain()
            else:
                readable, writable = bool(mask & selectors.EVENT_READ), bool(
                    mask & selectors.EVENT_WRITE)
        if readable or buffered:
            self._client.loop_read()
            if self._client.is_connected():
                self._delay_s = None
        if writable and self._client.socket() is sock:
            self._client.loop_write()
        self._client.loop_misc()

    def _drain(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while self._wake_r.recv(4096):
                pass
