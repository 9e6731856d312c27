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
        self._kept: dict[int, wire.CardDrawn] = {}  # 6.6: sent, not yet committed by the host
        self._kept_cover: wire.CoverCardDrawn | None = None  # 6.6 [M-6.6e]: the same

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
            card = wire.CardDrawn(index, index % 13 + 1, index % 4, int(BackColour.RED), False)
            if self.hello.capabilities & wire.CAP_CARD_COMMIT:
                self._kept[index] = card  # [M-6.6b]
            self._send(card, now)
            return True
        if action == "cover" and self.kind is wire.DeviceKind.SHOE:
            cover = wire.CoverCardDrawn(self._cards_drawn)
            if self.hello.capabilities & wire.CAP_CARD_COMMIT:
                self._kept_cover = cover  # [M-6.6e]
            self._send(cover, now)
            return True
        return False

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
                    for message in kept_in_order(self._kept, self._kept_cover):  # 6.6 [M-6.6c]: after the Faults
                        self.endpoint.send(message, now)
            elif isinstance(event, MessageReceived):
                self.received.append(event.message)
                if isinstance(event.message, wire.CardsCommitted):
                    for index in [i for i in self._kept if i < event.message.next_index]:
                        del self._kept[index]
                    cover = self._kept_cover
                    if cover is not None and cover.index < event.message.next_index:
                        self._kept_cover = None
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


def kept_in_order(kept: Mapping[int, wire.CardDrawn], cover: wire.CoverCardDrawn | None
                  ) -> list[wire.CardDrawn | wire.CoverCardDrawn]:
    """What a 1.2 shoe sends again after a handshake (docs/protocol.md 6.6 [M-6.6c, M-6.6e]):
    its kept cards in index order, its kept cover card before the first card drawn after it
    (a cover card's index is the number of cards drawn before it)."""
    replay: list[wire.CardDrawn | wire.CoverCardDrawn] = [kept[i] for i in sorted(kept)]
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
