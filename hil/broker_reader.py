"""A display's or the pit page's view of the broker for tests and campaigns: a client that
subscribes, logs in as `login` says, and keeps the last message of each topic.

It runs on the feeds' own network thread (controller/progressive/broker_thread.py), so it
connects whatever its socket's descriptor number: a campaign holding thousands of control
connections has its own descriptors past 1023 too.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

from controller.progressive.broker import BrokerLogin, broker_client
from controller.progressive.broker_thread import BrokerThread

DELIVERY_TIMEOUT_S = 30.0  # a local broker answers in ms; a loaded machine, slower


def wait_until(condition: Callable[[], Any]) -> bool:
    """Whether `condition()` came true within DELIVERY_TIMEOUT_S (a bound, not a pause)."""
    deadline = time.monotonic() + DELIVERY_TIMEOUT_S
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)
    return bool(condition())


class Reader:
    """`fail_first`: that many messages make the callback raise (a display's defect)."""

    def __init__(self, port: int, login: BrokerLogin, topic: str, *, client_id: str = "",
                 fail_first: int = 0) -> None:
        self.messages: dict[str, dict[str, Any]] = {}
        self.failures_left = fail_first
        self._changed = threading.Condition()
        self.client, _ = broker_client(client_id, login)
        self.client.on_connect = lambda c, u, f, r, p=None: c.subscribe(topic, qos=1)
        self.client.on_message = self._on_message
        self.network = BrokerThread(self.client, "127.0.0.1", port, keepalive_s=5,
                                    name="test-reader", on_connect_fail=lambda: None,
                                    max_delay_s=2)
        self.network.start()

    def _on_message(self, client: Any, userdata: Any, message: Any) -> None:
        if self.failures_left:
            self.failures_left -= 1
            raise RuntimeError("a display's defect")
        with self._changed:
            self.messages[message.topic] = json.loads(message.payload)
            self._changed.notify_all()

    def wait_for(self, topic: str, **fields: Any) -> dict[str, Any] | None:
        """The topic's last message once it has arrived with `fields` (any, without), or
        what is there after DELIVERY_TIMEOUT_S."""
        def arrived() -> bool:
            message = self.messages.get(topic)
            return message is not None and all(message.get(k) == v for k, v in fields.items())

        with self._changed:
            self._changed.wait_for(arrived, DELIVERY_TIMEOUT_S)
            return self.messages.get(topic)

    def close(self) -> None:
        self.network.stop()
