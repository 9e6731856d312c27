"""The card-reading dealing shoe on a serial link (``drivers.protocols.Shoe``).

Opened by pyserial URL (``/dev/ttyUSB0``, a pseudo-terminal path, ``socket://host:port``)
with an exclusive lock, speaking firmware_bridge as HOST. Every card the shoe
reads becomes a ``CardDrawn`` (rank, suit, back colour, face up or not), the cover
card a ``CoverCardDrawn``, a new batch a ``ShoeLoaded``. Lid, sensor, jam and
misread faults become ``DeviceFault``s: a misread card is never guessed, and a
gap in the shoe's card index (a card left the shoe unreported) is a fault too.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any

from cards import BackColour, Card, Rank, Suit
from drivers import protocols as events
from drivers.errors import ShoeNotConnectedError
from drivers.link_device import COMMON_FAULT_ACTIONS, LinkedDevice, host_hello
from drivers.reconnect import ReconnectPolicy
from firmware_bridge import messages as wire

SHOE_FAULT_ACTIONS: Mapping[wire.FaultCode, str] = {
    **COMMON_FAULT_ACTIONS,
    wire.FaultCode.SHOE_LID_OPEN:
        "Close the shoe's lid; cards are not read while it is open.",
    wire.FaultCode.SHOE_SENSOR_FAULT:
        "Stop dealing: the shoe's card reader failed its check. Clean the reading window; "
        "if it persists, replace the shoe.",
    wire.FaultCode.SHOE_MISREAD:
        "Stop: the card that just left the shoe was not read. Do not use it until a floorperson "
        "rules; the table does not guess a card.",
    wire.FaultCode.SHOE_CARD_JAM:
        "A card is stuck in the shoe's exit: free it without exposing it, then call a floorperson.",
    wire.FaultCode.SHOE_CARD_FACE_UP:
        "A card is face up in the shoe: 631a.15(c)-(d) / 681a.9(a) apply; call a floorperson.",
}


class SerialShoe(LinkedDevice):
    """Card-reading shoe on a serial port; events go to the ``emit`` given to ``start()``."""

    kind = "shoe"
    device_kind = wire.DeviceKind.SHOE
    fault_actions = SHOE_FAULT_ACTIONS

    def __init__(self, name: str, url: str, *, baudrate: int = 115200,
                 reconnect: ReconnectPolicy | None = None,
                 firmware_versions: Collection[str] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """``url``: anything pyserial's ``serial_for_url`` opens; ``firmware_versions``: the
        approved versions (None = any); ``reconnect``: backoff (tests use short delays)."""
        super().__init__(name, url, reconnect=reconnect, firmware_versions=firmware_versions,
                         clock=clock)
        self.url = url
        self.baudrate = baudrate
        self._expected_index: int | None = None
        self.last_card_received_ns: int = 0  # perf_counter_ns when the last card frame arrived
        # Protocol 1.2's card commit acknowledgement (docs/protocol.md 6.6).
        self._table_has_below: Callable[[], int] = lambda: 0  # until the driver counts itself
        self._table_has_cover: Callable[[], bool] = lambda: False  # until it sees ShoeLoaded
        self._cover_passed_on = False  # this batch's cover card went to the table, since start()
        self._loads = 0  # ShoeLoaded received since start(): names the batch an ack is for
        self._acked_below = 0  # the last CardsCommitted sent, in this batch
        self._acks: set[asyncio.Task[None]] = set()

    async def _open(self) -> Any:
        from firmware_bridge.aio import AsyncLink
        from firmware_bridge.link import Role

        hello = host_hello(wire.CAP_PROTOCOL_1_1 | wire.CAP_CARD_COMMIT)
        return await AsyncLink.open_serial(self.url, Role.HOST, hello, baudrate=self.baudrate,
                                           accept_peer=self._accept_peer)

    @property
    def card_commit(self) -> bool:
        """This session uses the card commit acknowledgement: the shoe announced it too."""
        peer = self._peer
        return peer is not None and bool(peer.capabilities & wire.CAP_CARD_COMMIT)

    def follow_table(self, has_below: Callable[[], int], has_cover: Callable[[], bool]) -> None:
        """Before start(): where the table is in the batch (controller/card_commits.py): the
        index below which it has every card, and whether it has the batch's cover card."""
        self._table_has_below = has_below
        self._table_has_cover = has_cover

    def cards_committed(self, loads: int, next_index: int) -> None:
        """6.6 [M-6.6a]: the daemon calls this after a durable commit; the shoe may forget
        every card below ``next_index``. Sent only for the batch in the shoe (``loads``: the
        ShoeLoaded the table has seen, which the shoe's next batch makes stale), only
        forward, only in a session that uses the acknowledgement; a CardsCommitted that a
        link failure loses costs nothing but a replay the driver drops."""
        if loads != self._loads or next_index <= self._acked_below or not self.card_commit:
            return
        self._acked_below = next_index
        task = asyncio.get_running_loop().create_task(self._send_commit(next_index))
        self._acks.add(task)
        task.add_done_callback(self._acks.discard)

    async def _send_commit(self, next_index: int) -> None:
        try:
            await self._send(wire.CardsCommitted(next_index), ShoeNotConnectedError)
        except ShoeNotConnectedError:
            self._counters["commit_acks_unsent"] += 1
        else:
            self._counters["commit_acks"] += 1

    def _replayed(self, index: int) -> bool:
        """6.6 [M-6.6d]: a card the table already has, sent again after a handshake."""
        if not self.card_commit:
            return False
        expected = self._expected_index
        return index < (expected if expected is not None else self._table_has_below())

    def _cover_replayed(self) -> bool:
        """6.6 [M-6.6d, M-6.6e]: the batch's cover card sent again after a handshake, when
        the table already has it (a batch has one cover card). Once this driver has seen the
        batch's ShoeLoaded its own record says; before, the table's restored state does."""
        if not self.card_commit:
            return False
        return self._cover_passed_on or (not self._loads and self._table_has_cover())

    async def _on_message(self, message: wire.Message) -> None:
        # One type test a message, the card's first: the card-to-decision path.
        if isinstance(message, wire.CardDrawn):
            if self._replayed(message.index):
                self._counters["cards_replayed_dropped"] += 1
                return
            self.last_card_received_ns = time.perf_counter_ns()
            self._check_index(message.index)
            self._expected_index = message.index + 1
            self._counters["cards"] += 1
            card = Card(Rank(message.rank), Suit(message.suit))
            # The last thing done with the frame: the daemon may run the table's step inside
            # this call (controller/daemon.py, Daemon._enqueue).
            self._send_event(events.CardDrawn(self.name, message.index, card,
                                              BackColour(message.back_colour), message.face_up))
        elif isinstance(message, wire.CoverCardDrawn):
            if self._cover_replayed():
                self._counters["cover_cards_replayed_dropped"] += 1
                return
            self._check_index(message.index)
            self._expected_index = message.index
            self._cover_passed_on = True
            self._counters["cover_cards"] += 1
            self._send_event(events.CoverCardDrawn(self.name, message.index))
        elif isinstance(message, wire.ShoeLoaded):
            self._expected_index = 0
            self._acked_below = 0
            self._cover_passed_on = False
            self._loads += 1
            self._counters["shoes_loaded"] += 1
            self._send_event(events.ShoeLoaded(self.name, message.cards,
                                               BackColour(message.back_colour)))
        else:
            self._counters["unexpected_messages"] += 1

    async def _dispatch(self, message: wire.Message) -> None:
        if isinstance(message, wire.Fault) and message.code == wire.FaultCode.SHOE_MISREAD:
            # The misread card left the shoe: it used up one index.
            if self._expected_index is not None:
                self._expected_index += 1
            self._counters["misreads"] += 1
        await super()._dispatch(message)

    def _check_index(self, index: int) -> None:
        expected = self._expected_index
        if expected is not None and index != expected:
            # Never guess: a card that left the shoe unreported makes every later card suspect.
            self._fault("shoe_index_gap",
                        f"card index {index} arrived where {expected} was expected: "
                        f"{index - expected} card(s) unaccounted for",
                        "Stop dealing: the shoe lost track of a card. A floorperson checks the "
                        "cards dealt against the discard rack before play continues.")

    async def request_status(self) -> None:
        """Ask the shoe for its Status (answered in the background; diagnostics)."""
        await self._send(wire.StatusRequest(), ShoeNotConnectedError)
