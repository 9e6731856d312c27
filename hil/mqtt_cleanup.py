"""Clear the retained meter messages a simulated table left on the MQTT broker.

The daemon publishes every meter retained (a display that connects late sees the
current amount at once). A simulated run must not leave those behind on a shared
broker: a real display subscribed to the site would show a simulated table's
meters. After the run, every retained message under the table's topics is
replaced by an empty retained message, which the broker treats as deletion.

No waiting on luck: retained messages are delivered for a subscription before a
message this client publishes after the subscription is acknowledged, so a
sentinel published then marks the end of what was retained.
"""

from __future__ import annotations

import threading
import uuid
from typing import Any

CONNECT_TIMEOUT_S = 10.0


def table_topics(prefix: str, site: str, table_id: str) -> str:
    """The wildcard covering every topic of one table (controller.progressive.mqtt)."""
    return f"{prefix}/{site}/tables/{table_id}/#"


def clear_retained(host: str, port: int, prefix: str, site: str, table_id: str) -> list[str]:
    """Delete the table's retained messages; returns the topics cleared (sorted)."""
    import paho.mqtt.client as mqtt

    wildcard = table_topics(prefix, site, table_id)
    sentinel = wildcard[:-1] + f"_cleanup/{uuid.uuid4().hex}"
    retained: set[str] = set()
    subscribed, finished = threading.Event(), threading.Event()

    def on_subscribe(client: Any, userdata: Any, mid: Any, reasons: Any, props: Any) -> None:
        subscribed.set()

    def on_message(client: Any, userdata: Any, message: Any) -> None:
        if message.topic == sentinel:
            finished.set()
        elif message.retain and message.payload:
            retained.add(message.topic)

    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2,
                         client_id=f"tabled-sim-cleanup-{uuid.uuid4().hex[:8]}")
    client.on_subscribe = on_subscribe
    client.on_message = on_message
    client.connect(host, port)
    client.loop_start()
    try:
        client.subscribe(wildcard, qos=1)
        if not subscribed.wait(CONNECT_TIMEOUT_S):
            raise TimeoutError(f"the broker at {host}:{port} did not acknowledge {wildcard}")
        client.publish(sentinel, b"end", qos=1).wait_for_publish(CONNECT_TIMEOUT_S)
        if not finished.wait(CONNECT_TIMEOUT_S):
            raise TimeoutError(f"the broker at {host}:{port} did not echo the cleanup sentinel")
        client.unsubscribe(wildcard)
        for topic in sorted(retained):
            client.publish(topic, b"", qos=1, retain=True).wait_for_publish(CONNECT_TIMEOUT_S)
    finally:
        client.loop_stop()
        client.disconnect()
    return sorted(retained)
