"""The firmware behaviour the simulated devices share, sans-I/O, and a model that runs it on any clock.

``reply_to`` is what every simulated device answers (Status, SelfTestResult);
the pty simulators (hil.pty_device) call it from their asyncio loop.
``FirmwareModel`` runs the same behaviour around a ``LinkEndpoint`` with no I/O
and no clock of its own (bytes and ``now`` in, bytes out), so the conformance
suite can drive a simulated shoe or display on simulated time; the shuffler
simulator (hil.usb_shuffler) is driven the same way through ``ShufflerModel``.
Either takes an ``endpoint_factory``, which is how hil.misbehaviour builds the
deliberately broken simulators.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from cards import BackColour
from firmware_bridge import messages as wire
from firmware_bridge.link import LinkEndpoint, LinkTiming, LinkUp, MessageReceived, Role

EndpointFactory = Callable[[wire.Hello, LinkTiming], LinkEndpoint]

DEFAULT_SERIALS = {
    wire.DeviceKind.SHOE: ("SIM-SHOE-0001", "shoe-sim 1.1"),
    wire.DeviceKind.SHUFFLER: ("SIM-SHUF-0001", "shuffler-sim 1.1"),
    wire.DeviceKind.DISPLAY: ("SIM-DISP-0001", "display-sim 1.1"),
}
STIMULUS_FAULTS = {
    wire.DeviceKind.SHOE: wire.FaultCode.SHOE_LID_OPEN,
    wire.DeviceKind.SHUFFLER: wire.FaultCode.SHUFFLER_DOOR_OPEN,
    wire.DeviceKind.DISPLAY: wire.FaultCode.DISPLAY_LAMP_FAILED,
}
"""The fault each simulator raises when the conformance suite asks for an active fault."""


def reply_to(message: wire.Message, *, active_faults: Mapping[wire.FaultCode, str],
             uptime_s: float, self_test: tuple[bool, str]) -> wire.Message | None:
    """A simulated device's answer to a host request (docs/protocol.md 6.2), or None."""
    if isinstance(message, wire.StatusRequest):
        state = wire.DeviceState.FAULTED if active_faults else wire.DeviceState.READY
        detail = ", ".join(code.name for code in active_faults) or "ok"
        return wire.Status(int(uptime_s) & 0xFFFFFFFF, state, detail)
    if isinstance(message, wire.SelfTestRequest):
        return wire.SelfTestResult(*self_test)
    return None


def default_endpoint(hello: wire.Hello, timing: LinkTiming) -> LinkEndpoint:
    return LinkEndpoint(Role.DEVICE, hello, timing=timing)


class FirmwareModel:
    """A simulated shoe or display's firmware on the caller's clock (see the module docstring)."""

    def __init__(self, kind: wire.DeviceKind, *, timing: LinkTiming | None = None,
                 endpoint_factory: EndpointFactory = default_endpoint,
                 capabilities: int | None = None) -> None:
        """``capabilities`` None: the kind's own (a shoe adds CAP_CARD_COMMIT, 6.6)."""
        serial, firmware = DEFAULT_SERIALS[kind]
        self.kind = kind
        if capabilities is None:
            capabilities = wire.CAP_PROTOCOL_1_1 | (
                wire.CAP_CARD_COMMIT if kind is wire.DeviceKind.SHOE else 0)
        self.hello = wire.Hello(wire.PROTOCOL_VERSION, kind, serial, firmware, capabilities)
        self.endpoint = endpoint_factory(self.hello, timing or LinkTiming())
        self.active_faults: dict[wire.FaultCode, str] = {}
        self.received: list[wire.Message] = []
        self._cards_drawn = 0
        self._kept = KeptReports()  # 6.6: sent, not yet committed by the host

    def boot(self, now: float) -> None:
        """Power-up: the firmware announces itself with RESET (4.1)."""
        self.endpoint.connect(now)

    def receive(self, data: bytes, now: float) -> None:
        self.endpoint.receive(data, now)
        self._run(now)

    def poll(self, now: float) -> None:
        self.endpoint.poll(now)
        self._run(now)

    def outgoing(self) -> bytes:
        return self.endpoint.outgoing()

    def next_deadline(self) -> float | None:
        return self.endpoint.next_deadline()

    def stimulate(self, action: str, now: float) -> bool:
        """Conformance stimuli: "fault" raises the kind's fault and keeps it active;
        "event" makes a shoe draw a card, "cover" its cover card (other kinds have no
        spontaneous event)."""
        if action == "fault":
            code = STIMULUS_FAULTS[self.kind]
            self.active_faults[code] = "raised for the conformance suite"
            self._send(wire.Fault(code, self.active_faults[code]), now)
            return True
        if action == "event" and self.kind is wire.DeviceKind.SHOE:
            index, self._cards_drawn = self._cards_drawn, self._cards_drawn + 1
            self._draw(wire.CardDrawn(index, index % 13 + 1, index % 4, int(BackColour.RED),
                                      False), now)
            return True
        if action == "cover" and self.kind is wire.DeviceKind.SHOE:
            self._draw(wire.CoverCardDrawn(self._cards_drawn), now)
            return True
        return False

    def _draw(self, report: KeptReport, now: float) -> None:
        """A card or the cover card left the shoe: kept [M-6.6b, M-6.6e] if the shoe
        announces the card commit acknowledgement, and reported."""
        if self.hello.capabilities & wire.CAP_CARD_COMMIT:
            self._kept.keep(report)
        self._send(report, now)

    def _send(self, message: wire.Message, now: float) -> None:
        from firmware_bridge.link import LinkState

        if self.endpoint.state is LinkState.UP:
            self.endpoint.send(message, now)

    def _run(self, now: float) -> None:
        for event in self.endpoint.events():
            if isinstance(event, LinkUp):
                # 4.3: every active fault first, before any other message of the session
                for code, detail in self.active_faults.items():
                    self.endpoint.send(wire.Fault(code, detail), now)
                peer = self.endpoint.peer
                if peer is not None and peer.capabilities & wire.CAP_CARD_COMMIT:
                    for message in self._kept.in_order():  # 6.6 [M-6.6c]: after the Faults
                        self.endpoint.send(message, now)
            elif isinstance(event, MessageReceived):
                self.received.append(event.message)
                if isinstance(event.message, wire.CardsCommitted):
                    self._kept.committed(event.message.next_index)
                reply = reply_to(event.message, active_faults=self.active_faults, uptime_s=now,
                                 self_test=self._self_test())
                if reply is not None:
                    self.endpoint.send(reply, now)

    def _self_test(self) -> tuple[bool, str]:
        if self.active_faults:
            return False, "active faults: " + ", ".join(code.name for code in self.active_faults)
        return True, "all checks passed"


class ShufflerModel:
    """hil.usb_shuffler's SimulatedShuffler, unthreaded, behind the same interface."""

    def __init__(self, *, timing: LinkTiming | None = None,
                 endpoint_factory: EndpointFactory = default_endpoint,
                 capabilities: int = wire.CAP_PROTOCOL_1_1) -> None:
        from hil.usb_shuffler import SimulatedShuffler

        self.kind = wire.DeviceKind.SHUFFLER
        chosen = timing or LinkTiming()

        def factory(hello: wire.Hello) -> LinkEndpoint:
            return endpoint_factory(
                wire.Hello(hello.protocol_version, hello.device_kind, hello.serial_number,
                           hello.firmware_version, capabilities), chosen)

        self.device = SimulatedShuffler(threaded=False, endpoint_factory=factory,
                                        serial_number=DEFAULT_SERIALS[self.kind][0],
                                        firmware_version=DEFAULT_SERIALS[self.kind][1])

    @property
    def endpoint(self) -> LinkEndpoint:
        return self.device.endpoint

    def boot(self, now: float) -> None:
        self.device.endpoint.connect(now)

    def receive(self, data: bytes, now: float) -> None:
        self.device.host_write(data)
        self.device.step(now)

    def poll(self, now: float) -> None:
        self.device.step(now)

    def outgoing(self) -> bytes:
        return self.device.take_output()

    def next_deadline(self) -> float | None:
        return self.device.next_deadline()

    def stimulate(self, action: str, now: float) -> bool:
        if action == "fault":
            self.device.set_door(True)
            self.device.step(now)
            return True
        return False


KeptReport = wire.CardDrawn | wire.CoverCardDrawn


class KeptReports:
    """What a 1.2 shoe keeps until the host commits it (docs/protocol.md 6.6): every card
    sent [M-6.6b] and its cover card [M-6.6e], host connected or not."""

    def __init__(self) -> None:
        self.cards: dict[int, wire.CardDrawn] = {}
        self.cover: wire.CoverCardDrawn | None = None

    def keep(self, report: KeptReport) -> None:
        if isinstance(report, wire.CardDrawn):
            self.cards[report.index] = report
        else:
            self.cover = report

    def holds(self, message: wire.Message) -> bool:
        return message is self.cover or (isinstance(message, wire.CardDrawn)
                                         and self.cards.get(message.index) is message)

    def committed(self, next_index: int) -> None:
        """A CardsCommitted: forget every card below ``next_index``, and the cover card once
        ``next_index`` is above its index (the card drawn after it is committed)."""
        for index in [i for i in self.cards if i < next_index]:
            del self.cards[index]
        if self.cover is not None and self.cover.index < next_index:
            self.cover = None

    def clear(self) -> None:
        """ShoeLoaded: the previous batch's are discarded."""
        self.cards.clear()
        self.cover = None

    def in_order(self) -> list[KeptReport]:
        """What is sent again after a handshake [M-6.6c, M-6.6e]: the cards in index order,
        the cover card before the first card drawn after it (its index is the number of
        cards drawn before it)."""
        replay: list[KeptReport] = [self.cards[i] for i in sorted(self.cards)]
        cover = self.cover
        if cover is not None:
            at = next((n for n, card in enumerate(replay) if card.index >= cover.index),
                      len(replay))
            replay.insert(at, cover)
        return replay


def make_model(kind: wire.DeviceKind, *, baudrate: int = 115200,
               endpoint_factory: EndpointFactory = default_endpoint) -> FirmwareModel | ShufflerModel:
    """The simulator of ``kind`` as a sans-I/O model with the timing of ``baudrate``."""
    timing = LinkTiming.for_baudrate(baudrate)
    if kind is wire.DeviceKind.SHUFFLER:
        return ShufflerModel(timing=timing, endpoint_factory=endpoint_factory)
    return FirmwareModel(kind, timing=timing, endpoint_factory=endpoint_factory)
