"""`[mqtt]` on a casino's broker: a user and password, and TLS against the broker's
certificate (docs/deployment.md, "The broker"). Checked against a Mosquitto of the test's own
that speaks only TLS and lets in only its users: what the tables and the pit page send arrives,
and a wrong password or an untrusted certificate is said in the journal once, with the reason.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
import structlog

from controller.progressive.broker import BrokerLogin
from controller.progressive.config import parse_progressive_config
from controller.progressive.errors import ProgressiveConfigError
from controller.progressive.mqtt import MqttMeterPublisher
from controller.progressive.system import ProgressiveSystem
from controller.memory.store import Store
from drivers.protocols import LockedOut
from hil.broker_reader import DELIVERY_TIMEOUT_S, Reader, wait_until
from hil.pit_servers import (
    BrokerCertificates, PrivateBroker, make_broker_certificates, require_private_servers,
)
from tests.progressive.conftest import HEAVENLY_9, base, config

TABLE_USER, TABLE_PASSWORD = "table-T1", "table's secret"
PIT_USER, PIT_PASSWORD = "pitpage", "read only"
H9_SEED, H9_PER_WAGER_CENTS = 1_000_000, 50  # 631c.2(i): $10,000 seed, 10% of a $5 wager


def password_file(path: Path, password: str) -> str:
    path.write_text(password + "\n", encoding="utf-8")
    path.chmod(0o600)
    return str(path)


@pytest.fixture(scope="module")
def certificates() -> BrokerCertificates:
    return make_broker_certificates()


@pytest.fixture
def broker(certificates: BrokerCertificates, tmp_path: Path) -> Any:
    require_private_servers(broker_only=True)
    (tmp_path / "ca.pem").write_bytes(certificates.ca_pem)
    with PrivateBroker(certificates=certificates,
                       passwords={TABLE_USER: TABLE_PASSWORD, PIT_USER: PIT_PASSWORD}) as private:
        yield private


def mqtt_section(broker: PrivateBroker, tmp_path: Path, password: str = TABLE_PASSWORD,
                 **more: Any) -> dict[str, Any]:
    return {"host": "127.0.0.1", "port": broker.port, "site": "secure", "tls": True,
            "ca_file": str(tmp_path / "ca.pem"), "username": TABLE_USER,
            "password_file": password_file(tmp_path / "mqtt-password", password), **more}


def test_a_table_logs_in_over_tls_and_its_meters_reach_the_pit_pages_user(
        broker: PrivateBroker, tmp_path: Path) -> None:
    cfg = config(HEAVENLY_9, name="h9", table_id="T1",
                 extra={"mqtt": mqtt_section(broker, tmp_path)})
    assert cfg.mqtt is not None and cfg.mqtt.login == BrokerLogin(
        TABLE_USER, TABLE_PASSWORD, True, str(tmp_path / "ca.pem"))
    system = ProgressiveSystem.from_config(cfg, Store(tmp_path / "t1.sqlite"))
    reader = Reader(broker.port, BrokerLogin(PIT_USER, PIT_PASSWORD, True,
                                             str(tmp_path / "ca.pem")),
                    "casino/secure/tables/T1/#")
    try:
        publisher: Any = system.feeds.publisher
        assert publisher.wait_connected(DELIVERY_TIMEOUT_S)
        for round_id in (1, 2, 3):
            system.on_lock(LockedOut("button", 0.0, frozenset({1, 4})), base([1, 4]), round_id)
        topic = "casino/secure/tables/T1/progressive/h9/progressive"
        deadline = time.monotonic() + DELIVERY_TIMEOUT_S
        while (reader.wait_for(topic) or {}).get("sequence") != 4 \
                and time.monotonic() < deadline:
            time.sleep(0.05)  # the seed's message first, then a change per round
        assert reader.messages[topic]["amount_cents"] == H9_SEED + 6 * H9_PER_WAGER_CENTS
        assert reader.messages[topic]["sequence"] == 4
        assert system.feed_pit({"table_id": "T1", "state": "betting_open", "shoe": {},
                                "round": {}})  # the pit page's view, and the table alive
        assert reader.wait_for("casino/secure/tables/T1/alive") == {"alive": "online",
                                                                    "table_id": "T1"}
        assert reader.wait_for("casino/secure/tables/T1/status")["state"] == "betting_open"
        assert system.feed_state() == {"broker": f"127.0.0.1:{broker.port}", "tls": True,
                                       "username": TABLE_USER, "connected": True,
                                       "reason": None}  # as `tablectl status` shows it
    finally:
        reader.close()
        system.close()
        system.store.close()



def test_a_wrong_password_is_said_once_however_often_paho_tries_again(
        broker: PrivateBroker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    section = mqtt_section(broker, tmp_path, password="not it")
    cfg = config(HEAVENLY_9, name="h9", table_id="T1", extra={"mqtt": section})
    assert cfg.mqtt is not None
    refusals: list[str] = []
    with structlog.testing.capture_logs() as logs:
        publisher = MqttMeterPublisher("127.0.0.1", broker.port, login=cfg.mqtt.login)
        refused = publisher.trouble.refused
        monkeypatch.setattr(publisher.trouble, "refused",
                            lambda reason: (refusals.append(str(reason)), refused(reason)))
        try:
            assert wait_until(lambda: len(refusals) >= 2)  # paho tries again after 1 s
            assert not publisher.wait_connected(0)
            assert publisher.state() == {"broker": f"127.0.0.1:{broker.port}", "tls": True,
                                         "username": TABLE_USER, "connected": False,
                                         "reason": "Not authorized"}
        finally:
            publisher.close()
    said = [entry for entry in logs if entry["event"].startswith("mqtt_")]
    assert said == [{"event": "mqtt_connect_refused", "log_level": "error",
                     "reason": "Not authorized", "broker": f"127.0.0.1:{broker.port}",
                     "tls": True, "username": TABLE_USER,
                     "allowed": "[mqtt] username and password_file as the broker's "
                                "password_file has them, and the broker's ACL letting that "
                                "user in"}]
    assert refusals[:2] == ["Not authorized", "Not authorized"]


def test_a_broker_certificate_no_trusted_ca_signed_is_said_with_the_reason(
        broker: PrivateBroker, tmp_path: Path) -> None:
    """The table trusts another CA than the one that signed the broker's certificate (a
    broker on the wrong host, or one in the middle): nothing is sent, and the journal says why."""
    stranger = tmp_path / "another-ca.pem"
    stranger.write_bytes(make_broker_certificates().ca_pem)
    login = BrokerLogin(TABLE_USER, TABLE_PASSWORD, True, str(stranger))
    with structlog.testing.capture_logs() as logs:
        publisher = MqttMeterPublisher("127.0.0.1", broker.port, login=login)
        try:
            assert wait_until(lambda: publisher.trouble.reason is not None)
            assert not publisher.wait_connected(0)
        finally:
            publisher.close()
    [said] = [entry for entry in logs if entry["event"].startswith("mqtt_")]
    assert (said["event"], said["broker"], said["tls"]) == (
        "mqtt_connect_failed", f"127.0.0.1:{broker.port}", True)
    assert "CERTIFICATE_VERIFY_FAILED" in said["reason"], said


def test_the_pit_page_logs_in_as_its_own_user_over_tls(broker: PrivateBroker,
                                                       tmp_path: Path) -> None:
    from controller.display.pit import PitService

    async def connects(login: BrokerLogin) -> tuple[bool, str | None]:
        service = PitService("127.0.0.1", broker.port, "casino", "secure", login)
        service.start_feed()
        try:
            for _ in range(int(DELIVERY_TIMEOUT_S / 0.05)):
                if service.board.feed_connected or service.trouble.reason is not None:
                    break
                await asyncio.sleep(0.05)
            return service.board.feed_connected, service.trouble.reason
        finally:
            service.stop_feed()

    ca = str(tmp_path / "ca.pem")
    assert asyncio.run(connects(BrokerLogin(PIT_USER, PIT_PASSWORD, True, ca))) == (True, None)
    assert asyncio.run(connects(BrokerLogin(PIT_USER, "guess", True, ca))) == (
        False, "Not authorized")


def test_the_login_settings_are_checked_before_the_table_starts(tmp_path: Path) -> None:
    """Every problem at once, each naming the key, the value and what is allowed; the password
    is read now, so a table that could never log in says so before it deals."""
    readable = tmp_path / "readable"
    readable.write_text("pw\n")
    readable.chmod(0o644)
    empty = tmp_path / "empty"
    password_file(empty, "")
    two = tmp_path / "two"
    password_file(two, "one\ntwo")
    ca = tmp_path / "ca.pem"
    ca.write_text("not a certificate\n")
    table = {"table": {"id": "T"}}

    def problems(**section: Any) -> list[str]:
        with pytest.raises(ProgressiveConfigError) as refused:
            parse_progressive_config({**table, "mqtt": {"host": "h", "site": "s", **section}},
                                     "table.toml")
        return refused.value.problems

    assert problems(password_file=str(readable)) == [
        "mqtt.password_file: a password without a username; allowed: username = the table's "
        "user on the broker, beside it"]
    allowed = ("allowed: a file holding the password alone on one line, mode 0600 or 0400, "
               "owned by the daemon's user")
    assert problems(username="u", password_file=str(readable)) == [
        f"mqtt.password_file: {readable} has mode 0644: group or others can read it (chmod "
        f"0600 {readable}); {allowed}"]
    assert problems(username="u", password_file=str(empty)) == [
        f"mqtt.password_file: {empty} holds nothing; {allowed}"]
    assert problems(username="u", password_file=str(two)) == [
        f"mqtt.password_file: {two} holds more than one line; {allowed}"]
    assert problems(username="u", password_file=str(tmp_path / "absent")) == [
        f"mqtt.password_file: {tmp_path / 'absent'} cannot be read: No such file or directory; "
        f"{allowed}"]
    assert problems(ca_file=str(ca)) == [
        "mqtt.ca_file: a CA file without TLS; allowed: tls = true beside it, or no ca_file"]
    [bad_ca] = problems(tls=True, ca_file=str(ca))
    assert bad_ca.startswith(f"mqtt.ca_file = '{ca}': not allowed; allowed: a readable PEM "
                             "file of CA certificates (it could not be loaded: ")
    assert problems(tls="yes", username="a\nb") == [
        "mqtt.tls = 'yes': not allowed; allowed: true (TLS to the broker; port 8883 unless "
        "given) or false",
        "mqtt.username = 'a\\nb': not allowed; allowed: the table's user on the broker, "
        "printable, e.g. 'table-BAC-01'"]
    assert problems(password="pw") == [
        "mqtt.password: unknown key; allowed keys: ca_file, client_id, host, password_file, "
        "port, prefix, site, tls, username"]
    # TLS without a port: MQTT over TLS's own, 8883; without TLS, 1883.
    for tls, port in ((True, 8883), (False, 1883)):
        cfg = config(HEAVENLY_9, extra={"mqtt": {"host": "h", "site": "s", "tls": tls}})
        assert cfg.mqtt is not None and cfg.mqtt.port == port
    # The password is in no repr (a log line or a traceback that shows the configuration).
    assert "secret" not in repr(BrokerLogin("u", "secret"))
