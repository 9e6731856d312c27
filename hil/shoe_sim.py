"""A simulated card-reading shoe: deals a real shuffled stack over a pseudo-terminal.

The daemon opens ``SimulatedShoe.port`` with pyserial (configuration
``[shoe] url = <port>``) and cannot tell it from a shoe on ``/dev/ttyUSB0``: the
simulator speaks firmware_bridge as DEVICE over the pty master. The HIL harness
is the dealer: ``await shoe.draw()`` pulls the next card out of the shoe.

Fault injection: ``misread_next()``, ``face_up_next()``, ``garbage()``,
``unplug()``/``replug()``, ``set_lid(open)``, ``sensor_fault()``, and a wrong
firmware or protocol version through the constructor.

With ``card_commit=True`` it is a protocol 1.2 shoe with the card commit
acknowledgement (docs/protocol.md 6.6): it keeps every card, and its cover card, until the
host's CardsCommitted covers it and sends the kept ones again after each handshake.
"""

from __future__ import annotations

import random
from typing import Any

from cards import BackColour, Card, shoe_of
from firmware_bridge import messages as wire
from hil.pty_device import PtyDevice, SimulatorError
from hil.sim_firmware import KeptReports

CUT_MIN_FROM_END = 10
"""631a.5(c), 681a.5(c): the cut card goes at least ten cards from the top or the bottom."""
COVER_MIN_FROM_BOTTOM_631A = 14
"""631a.5(d): the second cover card at least 14 cards above the bottom (baccarat)."""
COVER_MIN_FROM_BOTTOM_681A = 10
"""681a.5(d): at least ten cards above the bottom (21 Baccarat)."""
COVER_EXTRA_SPREAD = 10
"""The dealer places the cover card somewhere in the next few cards above the minimum."""


def build_stack(decks: int, rng: random.Random, *,
                cover_min_from_bottom: int = COVER_MIN_FROM_BOTTOM_631A) -> tuple[list[Card], int]:
    """Shuffle ``decks`` decks, cut them and place the cover card; returns (stack, cover_card_at).

    ``stack[0]`` is the first card out of the shoe; ``cover_card_at`` is how many
    cards come out before the cover card. 631a.5(c)-(d) (681a.5(c)-(d) with
    ``cover_min_from_bottom=10``): the cut card goes in at least ten cards from
    either end; the cards above it and the cut card go to the bottom; the second
    cover card at least ``cover_min_from_bottom`` cards above the bottom.
    """
    if decks < 1:
        raise ValueError(f"decks = {decks}: need at least one deck")
    stack = shoe_of(decks)
    rng.shuffle(stack)
    n = len(stack)
    cut = rng.randint(CUT_MIN_FROM_END, n - CUT_MIN_FROM_END)
    # The cut card and every card above it go to the bottom; it ends up under the whole
    # stack and never comes out before the second cover card.
    stack = stack[cut:] + stack[:cut]
    below = rng.randint(cover_min_from_bottom, min(n - 1, cover_min_from_bottom + COVER_EXTRA_SPREAD))
    return stack, n - below


class SimulatedShoe(PtyDevice):
    """A card-reading shoe on a pseudo-terminal; ``draw()`` deals the next card."""

    device_kind = wire.DeviceKind.SHOE

    def __init__(self, stack: list[Card], back: BackColour, cover_card_at: int, *,
                 serial_number: str = "SIM-SHOE-0001", firmware_version: str = "shoe-sim 1.0",
                 protocol_version: int | None = None, card_commit: bool = False,
                 **link: Any) -> None:
        """``protocol_version`` None speaks firmware_bridge's own; another value makes the
        daemon refuse the shoe (fault injection).  ``card_commit``: a 1.2 shoe announcing
        CAP_CARD_COMMIT (docs/protocol.md 6.6), which keeps every card and its cover card
        until the host says they are committed and sends the kept ones again after each
        handshake; without it the shoe behaves as 1.1.  ``link``: PtyDevice's
        endpoint_factory and baudrate (a broken or protocol 1.0 firmware core,
        hil.misbehaviour)."""
        super().__init__(serial_number=serial_number, firmware_version=firmware_version,
                         protocol_version=protocol_version, name="shoe", **link)
        self.card_commit = card_commit
        if card_commit:
            self.capabilities |= wire.CAP_CARD_COMMIT
        self._kept = KeptReports()
        """6.6 [M-6.6b, M-6.6e]: the cards and the cover card sent and not yet covered by a
        CardsCommitted."""
        self.replayed_indexes: list[int] = []
        """The indexes of the kept cards sent again after a handshake (6.6 [M-6.6c]), in
        the order they went."""
        self.replayed_covers: list[int] = []
        """The index of the kept cover card each time it was sent again [M-6.6e]."""
        self.covers_drawn: list[int] = []
        """The index of each cover card drawn, host connected or not: a tally to hold the
        table's record against."""
        self._stack: list[Card] = []
        self._back = BackColour.RED
        self._cover_card_at = 0
        self._position = 0
        self._index = 0
        self._cover_out = False
        self._misread_next = False
        self._face_up_next = False
        self.lost_reports = 0
        """Reports dropped because the host was not connected when the card came out."""
        self._load(stack, back, cover_card_at)

    # --- the dealer -----------------------------------------------------------------

    def load(self, stack: list[Card], back: BackColour, cover_card_at: int) -> None:
        """A new shoe: ``stack`` (top first) of ``back`` colour, the cover card after
        ``cover_card_at`` cards. The shoe reports ShoeLoaded (queued; sent in order)."""
        self._load(stack, back, cover_card_at)
        self.post(wire.ShoeLoaded(len(stack), int(back)))

    def _load(self, stack: list[Card], back: BackColour, cover_card_at: int) -> None:
        if not 0 <= cover_card_at <= len(stack):
            raise ValueError(f"cover_card_at = {cover_card_at}: must be 0..{len(stack)}")
        self._stack = list(stack)
        self._back = BackColour(back)
        self._cover_card_at = cover_card_at
        self._position = 0
        self._index = 0
        self._cover_out = False
        self._kept.clear()  # 6.6: ShoeLoaded discards the previous batch's kept reports

    async def draw(self) -> Card | None:
        """The dealer pulls the next card out of the shoe and the shoe reports it.

        Returns the card, or None when the cover card comes out. Returns once the
        host acknowledged the report; if the host is not connected, the card still
        leaves the shoe but its report is lost (as with a real shoe whose cable is out).
        """
        if self.cover_card_next:
            self._cover_out = True
            cover = wire.CoverCardDrawn(self._index)
            self.covers_drawn.append(cover.index)
            await self._report(cover)
            return None
        if self._position >= len(self._stack):
            raise SimulatorError(f"the shoe is empty: all {len(self._stack)} cards were dealt")
        card = self._stack[self._position]
        self._position += 1
        index, self._index = self._index, self._index + 1
        if self._misread_next:
            self._misread_next = False
            await self._report(wire.Fault(wire.FaultCode.SHOE_MISREAD,
                                          f"card {index} left the shoe unread"))
            return card
        face_up, self._face_up_next = self._face_up_next, False
        await self._report(
            wire.CardDrawn(index, int(card.rank), int(card.suit), int(self._back), face_up))
        return card

    async def _report(self, message: wire.Message) -> None:
        if self.card_commit and isinstance(message, (wire.CardDrawn, wire.CoverCardDrawn)):
            # 6.6 [M-6.6b, M-6.6e]: kept until a CardsCommitted covers it, host up or not.
            self._kept.keep(message)
        if not self.host_connected:
            if not self._kept.holds(message):
                self.lost_reports += 1  # a kept report goes out after the next handshake
            return
        await self.send(message)

    # --- protocol 1.2: the card commit acknowledgement (docs/protocol.md 6.6) -----------------

    @property
    def replayed(self) -> int:
        """Kept cards sent again after a handshake, in all."""
        return len(self.replayed_indexes)

    @property
    def kept_indexes(self) -> list[int]:
        """Indexes of the cards the host has not yet said it committed."""
        return sorted(self._kept.cards)

    @property
    def kept_cover(self) -> int | None:
        """The index of the cover card if the host has not yet committed a card after it."""
        return self._kept.cover.index if self._kept.cover is not None else None

    def session_start_messages(self, peer: wire.Hello | None) -> list[wire.Message]:
        """6.6 [M-6.6c]: after the fault re-reports, every kept card again, in index order,
        when the host announced CAP_CARD_COMMIT too (a 1.1 host gets what 1.1 says); the
        kept cover card [M-6.6e] in its place, before the card it came out ahead of."""
        messages = super().session_start_messages(peer)
        if peer is not None and peer.capabilities & wire.CAP_CARD_COMMIT:
            replay = self._kept.in_order()
            for message in replay:
                sent_again = self.replayed_indexes if isinstance(message, wire.CardDrawn) \
                    else self.replayed_covers
                sent_again.append(message.index)
            messages.extend(replay)
        return messages

    async def on_message(self, message: wire.Message) -> None:
        if isinstance(message, wire.CardsCommitted) and self.card_commit:
            self._kept.committed(message.next_index)

    @property
    def remaining(self) -> int:
        """Cards still in the shoe."""
        return len(self._stack) - self._position

    @property
    def drawn(self) -> int:
        """Cards dealt since the shoe was loaded (the cover card not counted)."""
        return self._position

    @property
    def back(self) -> BackColour:
        return self._back

    @property
    def cover_card_at(self) -> int:
        return self._cover_card_at

    @property
    def cover_card_next(self) -> bool:
        """The next draw brings out the cover card."""
        return not self._cover_out and self._position == self._cover_card_at

    def insert_next(self, cards: list[Card]) -> None:
        """Test rigging: these cards come out next, in order (e.g. to force a jackpot)."""
        self._stack[self._position:self._position] = list(cards)
        if self._cover_card_at >= self._position:
            self._cover_card_at += len(cards)

    # --- fault injection ------------------------------------------------------------------

    def misread_next(self) -> None:
        """The next card leaves the shoe unread: the shoe reports SHOE_MISREAD, not a card."""
        self._misread_next = True

    def face_up_next(self) -> None:
        """The next card is found face up in the shoe (631a.15(c)-(d), 681a.9(a))."""
        self._face_up_next = True

    async def set_lid(self, open_: bool) -> None:
        """Open or close the shoe's lid."""
        if open_:
            await self.fault(wire.FaultCode.SHOE_LID_OPEN, "lid opened")
        else:
            await self.clear_fault(wire.FaultCode.SHOE_LID_OPEN)

    async def sensor_fault(self, active: bool = True) -> None:
        """The card reader fails (or recovers from) its self-check."""
        if active:
            await self.fault(wire.FaultCode.SHOE_SENSOR_FAULT, "reader LED current out of range")
        else:
            await self.clear_fault(wire.FaultCode.SHOE_SENSOR_FAULT)

    async def card_jam(self, active: bool = True) -> None:
        """A card sticks in (or is freed from) the exit slot."""
        if active:
            await self.fault(wire.FaultCode.SHOE_CARD_JAM, "card stuck in the exit slot")
        else:
            await self.clear_fault(wire.FaultCode.SHOE_CARD_JAM)
