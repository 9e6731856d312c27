"""The MQTT clients' network thread (controller/progressive/broker_thread.py): connected and
reconnected whatever the number of its socket's descriptor, a failing callback said and
survived, a stop that ends the thread.

Against a Mosquitto of the test's own (hil/pit_servers.PrivateBroker), which the test
restarts. Before stop 62, paho's own thread (`loop_start`) waited in select(): with every
descriptor below 1024 in use, as in a daemon holding thousands of control connections, a
client never connected.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import structlog

from controller.progressive.broker import BrokerLogin, broker_client
from controller.progressive.broker_thread import BrokerThread
from controller.progressive.mqtt import MqttMeterPublisher, meter_message
from hil.broker_reader import DELIVERY_TIMEOUT_S, Reader, wait_until
from hil.pit_servers import PrivateBroker, free_port, require_private_servers
from tests.descriptors import SELECT_LIMIT, low_descriptors_taken

pytestmark = pytest.mark.timeout(120)

TOPIC = "casino/fd/tables/T1/progressive/h9/progressive"


@pytest.fixture
def broker() -> Iterator[PrivateBroker]:
    require_private_servers(broker_only=True)
    with PrivateBroker() as private:
        yield private


def h9(amount_cents: int, sequence: int) -> Any:
    return meter_message("casino", "fd", "T1", "h9", "progressive", amount_cents, sequence,
                         1_800_000_000.0 + sequence)



def test_a_table_and_a_pit_page_past_descriptor_1023_connect_and_reconnect(
        broker: PrivateBroker) -> None:
    with low_descriptors_taken() as low:
        reader = Reader(broker.port, BrokerLogin(), "casino/fd/#", client_id="fd-reader")
        publisher: Any = None
        try:
            assert wait_until(lambda: reader.client.is_connected())
            low.take()  # any number freed meanwhile: the publisher's socket is past 1023 too
            publisher = MqttMeterPublisher("127.0.0.1", broker.port, client_id="fd-T1")
            assert publisher.wait_connected(DELIVERY_TIMEOUT_S)
            assert publisher._client.socket().fileno() >= SELECT_LIMIT
            assert reader.client.socket().fileno() >= SELECT_LIMIT
            publisher.publish(h9(1_234_500, 1))
            assert reader.wait_for(TOPIC, sequence=1)["amount_cents"] == 1_234_500
            broker.restart()  # both lose the broker, which forgets every retained message
            assert wait_until(lambda: publisher.connections == 2)
            publisher.publish(h9(1_234_550, 2))
            assert reader.wait_for(TOPIC, sequence=2)["amount_cents"] == 1_234_550
            assert publisher.state()["connected"] is True
            assert publisher.state()["reason"] is None
        finally:
            if publisher is not None:
                publisher.close()
            reader.close()
    assert not publisher._network._thread.is_alive()
    assert not reader.network._thread.is_alive()
    assert publisher._client.socket() is None  # the DISCONNECT sent, the socket closed


def test_a_callback_that_raises_is_said_and_the_next_message_is_delivered(
        broker: PrivateBroker) -> None:
    with structlog.testing.capture_logs() as logs:
        reader = Reader(broker.port, BrokerLogin(), "casino/fd/#", client_id="fd-reader",
                        fail_first=1)
        publisher = MqttMeterPublisher("127.0.0.1", broker.port, client_id="fd-T1")
        try:
            assert publisher.wait_connected(DELIVERY_TIMEOUT_S)
            assert wait_until(lambda: reader.client.is_connected())
            publisher.publish(h9(1_000_050, 1))  # the callback raises on this one
            assert wait_until(lambda: reader.failures_left == 0)
            publisher.publish(h9(1_000_100, 2))
            assert reader.wait_for(TOPIC, sequence=2)["amount_cents"] == 1_000_100
        finally:
            publisher.close()
            reader.close()
    errors = [entry for entry in logs if entry["event"] == "mqtt_thread_error"]
    assert [entry["error"] for entry in errors] == ["RuntimeError(\"a display's defect\")"]


def test_no_broker_is_tried_at_once_and_a_stop_ends_the_thread() -> None:
    client, _ = broker_client("fd-nobody", BrokerLogin())
    failed = threading.Event()
    network = BrokerThread(client, "127.0.0.1", free_port(), keepalive_s=5,  # nobody there
                           name="test-nobody", on_connect_fail=failed.set, min_delay_s=60)
    started = time.monotonic()
    network.start()
    assert failed.wait(DELIVERY_TIMEOUT_S)  # the first try is at once, not after a wait
    network.stop()  # during the 60 s wait before the next try
    assert time.monotonic() - started < DELIVERY_TIMEOUT_S
    assert not network._thread.is_alive()


def test_a_stop_during_a_connect_in_progress_says_goodbye_on_the_new_socket(
        broker: PrivateBroker) -> None:
    """Forced interleaving: stop() is called while the thread is inside paho's reconnect()
    (a TCP connect may take paho's 5 s timeout), and the connect completes only after stop()
    has marked the stop. Before stop 64, stop() queued the DISCONNECT itself, on a client
    that had no socket yet (paho refused it: MQTT_ERR_NO_CONN); the thread then sent the
    CONNECT and ended, leaving the new socket open to the garbage collector, and the broker
    a connection that would end without a DISCONNECT (its will published)."""
    client, _ = broker_client("fd-stopping", BrokerLogin())
    network = BrokerThread(client, "127.0.0.1", broker.port, keepalive_s=5,
                           name="test-stopping", on_connect_fail=lambda: None)
    entered, made = threading.Event(), []
    real_reconnect = client.reconnect

    def reconnect_after_the_stop() -> Any:
        entered.set()
        assert wait_until(lambda: network._stop_at is not None)  # stop()'s mark, made
        result = real_reconnect()
        made.append(client.socket())
        return result

    client.reconnect = reconnect_after_the_stop
    network.start()
    assert entered.wait(DELIVERY_TIMEOUT_S)
    network.stop()
    assert not network._thread.is_alive()
    assert len(made) == 1 and made[0] is not None
    assert made[0].fileno() == -1  # the connection's socket closed, not left to the collector
    assert client.socket() is None  # paho closed it once its DISCONNECT was written
