"""The meter display feed over MQTT: a pure message builder and a thin paho adapter.

Topic: `<prefix>/<site>/tables/<table_id>/progressive/<name>/<level>`; payload
(UTF-8 JSON): `{"amount_cents", "sequence", "at", "table_id", "progressive",
"level", "linked"}`. Messages are retained (a display that connects late sees
the current amount at once) and sent at QoS 1. `sequence` is the meter's
version in its ledger, so a subscriber can drop an older message that arrives
late. The display is not the ledger: a lost message changes no money, and the
next change (or a restart, which republishes every meter) corrects it.

The publisher logs in and speaks TLS as `[mqtt]` says (controller/progressive/broker.py).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from controller.progressive.broker import (
    CONNECT_TIMEOUT_S, BrokerLogin, BrokerTrouble, broker_client,
)
from controller.progressive.broker_thread import BrokerThread

log = structlog.get_logger("progressive.mqtt")

QOS_AT_LEAST_ONCE = 1
# The broker drops a silent client after 1.5 x this (MQTT 3.1.1 section 3.1.2.10) and then
# publishes its last will: a table cut off from the network shows as lost on the pit page
# within 1.5 x 5 s; a ping every 5 s per table is nothing to a broker.
KEEPALIVE_S = 5


@dataclass(frozen=True, slots=True)
class MeterMessage:
    topic: str
    payload: bytes
    retain: bool = True
    qos: int = QOS_AT_LEAST_ONCE


def meter_topic(prefix: str, site: str, table_id: str, progressive: str, level: str) -> str:
    for word in (prefix, site, table_id, progressive, level):
        if not word or any(ch in word for ch in "/+#"):
            raise ValueError(f"topic level {word!r} must be non-empty without '/', '+' or '#'")
    return f"{prefix}/{site}/tables/{table_id}/progressive/{progressive}/{level}"


def meter_message(prefix: str, site: str, table_id: str, progressive: str, level: str,
                  amount_cents: int, sequence: int, at: float, *, linked: bool = False
                  ) -> MeterMessage:
    """The retained message for a meter's current amount (sans-I/O)."""
    payload = {"amount_cents": amount_cents, "sequence": sequence, "at": at,
               "table_id": table_id, "progressive": progressive, "level": level,
               "linked": linked}
    return MeterMessage(meter_topic(prefix, site, table_id, progressive, level),
                        json.dumps(payload, sort_keys=True, separators=(",", ":")).encode())


class MeterPublisher(Protocol):
    """What the progressive system needs from a display feed."""

    connections: int  # the broker's acceptances so far: a change means send everything again

    def publish(self, message: MeterMessage) -> None: ...

    def state(self) -> dict[str, Any]: ...

    def close(self) -> None: ...


class MqttMeterPublisher:
    """Publishes on a network thread of its own (controller/progressive/broker_thread.py), so
    the table's event loop never blocks on the broker."""

    def __init__(self, host: str, port: int, *, client_id: str = "",
                 login: BrokerLogin | None = None,
                 will: MeterMessage | None = None, goodbye: MeterMessage | None = None) -> None:
        """`will`: what the broker publishes if this connection dies without a DISCONNECT;
        `goodbye`: what `close()` publishes first (a clean stop is not a loss)."""
        login = login or BrokerLogin()
        self._client, context = broker_client(client_id, login)
        self.trouble = BrokerTrouble(log, host, port, login, context)
        if will is not None:
            self._client.will_set(will.topic, will.payload, qos=will.qos, retain=will.retain)
        self._goodbye = goodbye
        # Counts CONNACKs: a reader that sees it change knows the broker may have lost the
        # retained messages (a restart without persistence) and sends them again.
        self.connections = 0
        self._connected = threading.Event()
        self._client.on_connect = self._on_connect
        self._client.on_disconnect = self._on_disconnect
        # paho queues QoS 1 messages while disconnected; the thread reconnects every 1-30 s.
        self._network = BrokerThread(self._client, host, port, keepalive_s=KEEPALIVE_S,
                                     name="mqtt-meters", on_connect_fail=self.trouble.failed,
                                     max_delay_s=30)
        self._network.start()

    def _on_connect(self, client: Any, userdata: Any, flags: Any, reason: Any,
                    properties: Any = None) -> None:
        if not getattr(reason, "is_failure", False):
            self.connections += 1
            self._connected.set()
            self.trouble.connected()
        else:
            self.trouble.refused(reason)

    def _on_disconnect(self, client: Any, userdata: Any, flags: Any, reason: Any,
                       properties: Any = None) -> None:
        self._connected.clear()

    def state(self) -> dict[str, Any]:
        """The feed as `tablectl status` shows it: while not connected, the pit page sees the
        table as lost and the displays keep their last amounts (paho holds what is sent)."""
        return {**self.trouble.who, "connected": self._connected.is_set(),
                "reason": self.trouble.reason}

    def wait_connected(self, timeout: float = CONNECT_TIMEOUT_S) -> bool:
        return self._connected.wait(timeout)

    def publish(self, message: MeterMessage) -> None:
        self._client.publish(message.topic, message.payload, qos=message.qos,
                             retain=message.retain)

    def close(self) -> None:
        if self._goodbye is not None and self._connected.is_set():
            sent = self._client.publish(self._goodbye.topic, self._goodbye.payload,
                                        qos=self._goodbye.qos, retain=self._goodbye.retain)
            try:
                sent.wait_for_publish(CONNECT_TIMEOUT_S)
            except (RuntimeError, ValueError):
                pass  # the broker went away meanwhile: the will says "lost", which it is
        self._network.stop()  # a DISCONNECT after the queued messages
