"""The daemon process on simulated hardware, its `[mqtt]` feed on a broker that speaks only
TLS and lets in only its users (docs/deployment.md, "The broker"): with the table's own
login the pit page's user reads the table alive, and `status` says the feed is connected;
with a wrong password the table still opens, and `status` carries the broker's refusal."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from controller.progressive.broker import BrokerLogin
from hil.pit_servers import PrivateBroker, make_broker_certificates, require_private_servers
from hil.table_harness import TableHarness
from hil.broker_reader import Reader

pytestmark = [pytest.mark.hil, pytest.mark.timeout(300)]

CONFIG = Path(__file__).parents[1] / "config" / "simulated-table.toml"
TABLE_ID = "SIM-BAC-01"
TABLE_USER, PIT_USER, PIT_PASSWORD = "table-SIM", "pitpage", "read only"
FEED_TIMEOUT_S = 30.0  # the broker answers in ms; a loaded machine, slower


def feed_overrides(port: int, ca: Path, password_file: Path) -> list[str]:
    return ["mqtt.host=127.0.0.1", f"mqtt.port={port}", "mqtt.site=e2e", "mqtt.tls=true",
            f'mqtt.ca_file="{ca}"', f"mqtt.username={TABLE_USER}",
            f'mqtt.password_file="{password_file}"']


async def feed_settles(table: TableHarness) -> dict[str, Any]:
    """The status's display_feed once it is connected or has a reason it is not."""
    for _ in range(int(FEED_TIMEOUT_S / 0.1)):
        feed = (await table.call("status"))["display_feed"]
        if feed["connected"] or feed["reason"] is not None:
            return dict(feed)
        await asyncio.sleep(0.1)
    raise AssertionError(f"the feed neither connected nor failed: {feed}")


async def test_the_daemon_logs_in_over_tls_and_a_wrong_password_costs_only_the_feed(
        tmp_path: Path) -> None:
    require_private_servers(broker_only=True)
    certificates = make_broker_certificates()
    ca = tmp_path / "ca.pem"
    ca.write_bytes(certificates.ca_pem)
    password_file = tmp_path / "mqtt-password"
    password_file.write_text("the table's\n")
    password_file.chmod(0o600)
    with PrivateBroker(certificates=certificates,
                       passwords={TABLE_USER: "the table's", PIT_USER: PIT_PASSWORD}) as broker:
        broker_name = f"127.0.0.1:{broker.port}"
        overrides = feed_overrides(broker.port, ca, password_file)
        reader = Reader(broker.port, BrokerLogin(PIT_USER, PIT_PASSWORD, True, str(ca)),
                        f"casino/e2e/tables/{TABLE_ID}/#")
        try:
            async with TableHarness(CONFIG, tmp_path / "table", seed=5,
                                    extra_overrides=overrides) as table:
                assert await feed_settles(table) == {
                    "broker": broker_name, "tls": True, "username": TABLE_USER,
                    "connected": True, "reason": None}
                alive = await asyncio.to_thread(reader.wait_for,
                                                f"casino/e2e/tables/{TABLE_ID}/alive")
                assert alive == {"alive": "online", "table_id": TABLE_ID}
                status = await asyncio.to_thread(reader.wait_for,
                                                 f"casino/e2e/tables/{TABLE_ID}/status")
                assert status is not None and status["table_id"] == TABLE_ID
        finally:
            reader.close()

        password_file.write_text("not the table's\n")
        async with TableHarness(CONFIG, tmp_path / "table", seed=5,
                                extra_overrides=overrides) as table:
            assert await feed_settles(table) == {
                "broker": broker_name, "tls": True, "username": TABLE_USER,
                "connected": False, "reason": "Not authorized"}
            status = await table.call("status")
            assert status["out_of_order"] is None and status["fault"] is None
