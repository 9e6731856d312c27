"""The meter display feed: every committed meter change reaches a real MQTT subscriber, in order,
with the current amount retained (the display is not the ledger)."""

from __future__ import annotations

import json
import secrets
import threading
from pathlib import Path
from typing import Any

import pytest

from controller.progressive.mqtt import meter_message, meter_topic
from controller.progressive.system import ProgressiveSystem
from controller.memory.store import Store
from drivers.protocols import LockedOut
from hil.mqtt_cleanup import clear_retained
from tests.progressive.conftest import (
    HEAVENLY_9_MYSTERY, MQTT_HOST, MQTT_PORT, base, config, service_required, view,
)

DELIVERY_TIMEOUT_S = 10.0  # bounded wait for the local broker; deliveries take milliseconds
SUITED_NINES = view("2S 3S 4S", "AS 4S 4S")


def test_topic_layout_and_payload() -> None:
    message = meter_message("casino", "pa-01", "T1", "h9", "progressive", 1_000_050, 7, 12.5)
    assert message.topic == "casino/pa-01/tables/T1/progressive/h9/progressive"
    assert message.retain and message.qos == 1
    assert json.loads(message.payload) == {
        "amount_cents": 1_000_050, "sequence": 7, "at": 12.5, "table_id": "T1",
        "progressive": "h9", "level": "progressive", "linked": False}
    with pytest.raises(ValueError, match="topic level"):
        meter_topic("casino", "a/b", "T1", "h9", "progressive")


class Subscriber:
    """A real paho subscriber that records every message and wakes waiters on each one."""

    def __init__(self, topic: str) -> None:
        import paho.mqtt.client as mqtt

        self.messages: list[tuple[str, dict[str, Any], bool]] = []
        self._changed = threading.Condition()
        self._subscribed = threading.Event()
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2)
        self.client.on_connect = lambda c, u, f, r, p=None: c.subscribe(topic, qos=1)
        self.client.on_subscribe = lambda *a: self._subscribed.set()
        self.client.on_message = self._on_message
        self.client.connect(MQTT_HOST, MQTT_PORT)
        self.client.loop_start()
        assert self._subscribed.wait(DELIVERY_TIMEOUT_S), "broker did not confirm the subscription"

    def _on_message(self, client: Any, userdata: Any, message: Any) -> None:
        if not message.payload:
            return  # a cleared retained message
        with self._changed:
            self.messages.append((message.topic, json.loads(message.payload), message.retain))
            self._changed.notify_all()

    def wait_for(self, predicate: Any) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: predicate(self.messages), DELIVERY_TIMEOUT_S)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def test_every_meter_change_is_published_and_the_amount_retained(tmp_path: Path) -> None:
    service_required("Mosquitto", MQTT_HOST, MQTT_PORT)
    site = f"test-{secrets.token_hex(4)}"
    subscriber = Subscriber(f"casino/{site}/#")
    cfg = config(HEAVENLY_9_MYSTERY, name="h9", table_id="T-MQTT", extra={
        "mqtt": {"host": MQTT_HOST, "port": MQTT_PORT, "site": site}})
    store = Store(tmp_path / "t.sqlite")
    system = ProgressiveSystem.from_config(cfg, store)
    try:
        for round_id in range(1, 6):
            system.on_lock(LockedOut("button", 0.0, frozenset({1, 4})), base([1, 4]), round_id)
        system.on_round_result(5, SUITED_NINES, [])  # an award and a reseed: two more changes
        final = {m["level"]: m for m in system.meters()}

        def complete(messages: list) -> bool:
            last = {m["level"]: m["sequence"] for _, m, _ in messages}
            return all(last.get(level) == final[level]["sequence"] for level in final)

        assert subscriber.wait_for(complete), subscriber.messages
        for level, meter in final.items():
            seen = [m for _, m, _ in subscriber.messages if m["level"] == level]
            # Every change from the seed on, in order, none missing.
            assert [m["sequence"] for m in seen] == list(range(1, meter["sequence"] + 1))
            assert seen[-1]["amount_cents"] == meter["amount_cents"]
        # A display that connects now gets the current amounts at once (retained).
        late = Subscriber(f"casino/{site}/tables/T-MQTT/progressive/h9/+")
        assert late.wait_for(lambda ms: len(ms) == len(final))
        assert {m["level"]: (m["amount_cents"], retained) for _, m, retained in late.messages} \
            == {level: (meter["amount_cents"], True) for level, meter in final.items()}
        late.close()
    finally:
        system.close()
        store.close()
        subscriber.close()
        # Leave no retained test messages behind (the meters, the pit feed's alive and status).
        clear_retained(MQTT_HOST, MQTT_PORT, "casino", site, "T-MQTT")
