"""The pit page's board (controller/display/pit.py): what it keeps of the tables' messages."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from controller.display.pit import PitBoard
from controller.display.pit_settings import FeedSettings, feed_settings
from controller.progressive.broker import BrokerLogin
from hil.pit_servers import make_broker_certificates

BASE = "casino/pit-1/tables"


def status(table_id: str, at: float, sequence: int, state: str = "betting_open") -> bytes:
    return json.dumps({"table_id": table_id, "state": state, "sequence": sequence, "at": at,
                       "meters": [{"progressive": "h9", "level": "progressive",
                                   "linked": True, "amount_cents": 1_000_000}],
                       "faults": [], "link": {"h9": None}, "results": []}).encode()


def test_the_board_keeps_each_tables_newest_status_liveness_and_meters() -> None:
    board = PitBoard("casino", "pit-1")
    assert board.subscriptions() == [f"{BASE}/+/status", f"{BASE}/+/alive",
                                     f"{BASE}/+/progressive/+/+"]
    assert board.apply(f"{BASE}/PIT-02/alive", b'{"alive":"online","table_id":"PIT-02"}') \
        == "PIT-02"
    assert board.apply(f"{BASE}/PIT-02/status", status("PIT-02", 20.0, 7)) == "PIT-02"
    # A daemon restarted starts its sequence again; the time it took the status does not.
    assert board.apply(f"{BASE}/PIT-02/status", status("PIT-02", 25.0, 1, "opening")) == "PIT-02"
    assert board.apply(f"{BASE}/PIT-02/status", status("PIT-02", 21.0, 8, "dealing")) is None
    assert board.apply(f"{BASE}/PIT-02/progressive/h9/progressive",
                       b'{"amount_cents":1000150,"sequence":4,"linked":true}') == "PIT-02"
    view = board.view("PIT-02")
    assert (view["alive"], view["state"], view["sequence"]) == ("online", "opening", 1)
    assert view["meters"] == [{"progressive": "h9", "level": "progressive", "linked": True,
                               "amount_cents": 1_000_150}]  # the meter topic is newer
    board.apply(f"{BASE}/PIT-02/alive", b'{"alive":"lost","table_id":"PIT-02"}')
    assert board.view("PIT-02")["alive"] == "lost"


def test_what_the_board_ignores() -> None:
    board = PitBoard("casino", "pit-1")
    assert board.apply(f"{BASE}/PIT-01/status", b"") is None  # a cleared retained message
    assert board.apply(f"{BASE}/PIT-01/status", b"not json") is None
    assert board.apply(f"{BASE}/PIT-01/status", b"[1, 2]") is None
    assert board.apply("casino/other-site/tables/PIT-01/status", status("PIT-01", 1, 1)) is None
    assert board.apply(f"{BASE}/PIT-01/something/else", b"{}") is None
    # None of them made up a table (a stray topic used to put an empty PIT-01 on the page).
    assert board.tables == {}


def good_board() -> PitBoard:
    board = PitBoard("casino", "pit-1")
    board.apply(f"{BASE}/PIT-01/alive", b'{"alive":"online","table_id":"PIT-01"}')
    board.apply(f"{BASE}/PIT-01/status", status("PIT-01", 20.0, 7))
    board.apply(f"{BASE}/PIT-01/progressive/h9/progressive",
                b'{"amount_cents":1000150,"sequence":4,"linked":false}')
    return board


def with_key(key: str, value: object) -> bytes:
    body = json.loads(status("PIT-01", 30.0, 8, "dealing"))
    body[key] = value
    return json.dumps(body).encode()


# Messages anyone on the broker could publish under the tables' prefix. Before, the first
# five raised out of `apply` (TypeError, ValueError) in the loop's callback, and the meters,
# faults and link ones were kept and then raised in `message()`, which ended the task that
# pushes changes to the browsers: the page stopped updating until the service restarted.
HOSTILE_MESSAGES = [
    ("status", with_key("at", "later"), "at = 'later': allowed: the time the status was taken"),
    ("status", b'{"at": ' + b"9" * 5000 + b"}", None),
    ("progressive/h9/progressive", b'{"amount_cents": 5, "sequence": "x"}',
     "sequence = 'x': allowed: a whole number"),
    ("progressive/h9/progressive", b'{"amount_cents": 1.5, "sequence": 9}',
     "amount_cents = 1.5: allowed: a whole number of cents"),
    ("alive", b'{"alive": 7}', "alive = 7: allowed: text, e.g. online or lost"),
    ("status", with_key("meters", "abc"), "meters = 'abc': allowed: a list of meters"),
    ("status", with_key("meters", [{"level": "x"}]), "meters = [{'level': 'x'}]: allowed"),
    ("status", with_key("faults", [{"device": "shoe"}]), "faults = [{'device': 'shoe'}]"),
    ("status", with_key("faults", "shoe jam"), "faults = 'shoe jam': allowed: a list of faults"),
    ("status", with_key("link", {"h9": 5}), "link = {'h9': 5}: allowed: an object of"),
    ("status", with_key("results", [1, 2]), "results = [1, 2]: allowed: a list of objects"),
    ("status", with_key("shoe", "eight decks"), "shoe = 'eight decks': allowed: an object"),
    ("status", with_key("state", ["dealing"]), "state = ['dealing']: allowed: text"),
    ("status", json.dumps({"state": "dealing"}).encode(), "at: missing; allowed"),
    ("status", json.dumps(["at", 1]).encode(), "the message: allowed: a JSON object"),
]


@pytest.mark.parametrize(("leaf", "payload", "named"), HOSTILE_MESSAGES,
                         ids=[f"{leaf}-{i}" for i, (leaf, _, _) in enumerate(HOSTILE_MESSAGES)])
def test_a_message_the_page_cannot_show_is_dropped_and_named(leaf, payload, named, capsys):
    board = good_board()
    before = board.message()
    assert board.apply(f"{BASE}/PIT-01/{leaf}", payload) is None
    assert board.message() == before  # the table keeps its last good view, whole
    logged = capsys.readouterr().out
    if named is None:
        assert "pit_message_unreadable" in logged
    else:
        assert "pit_message_refused" in logged and named in logged, logged


def test_a_table_id_the_page_cannot_show_makes_no_table(capsys) -> None:
    board = PitBoard("casino", "pit-1")
    assert board.apply(f"{BASE}/{'T' * 65}/alive", b'{"alive":"online"}') is None
    assert board.apply(f"{BASE}/PIT\u000701/alive", b'{"alive":"online"}') is None
    assert board.tables == {}
    assert "the table id in the topic: allowed: 1 to 64 printable characters" \
        in capsys.readouterr().out


def test_one_message_carries_every_changed_table() -> None:
    board = PitBoard("casino", "pit-1")
    for table_id in ("PIT-03", "PIT-01", "PIT-02"):
        board.apply(f"{BASE}/{table_id}/status", status(table_id, 1.0, 1))
    full = board.message()
    assert full.startswith(b"event: pit\ndata: ")
    body = json.loads(full.split(b"data: ", 1)[1])
    assert (body["full"], [t["table_id"] for t in body["tables"]]) == (
        True, ["PIT-01", "PIT-02", "PIT-03"])
    part = json.loads(board.message({"PIT-02"}).split(b"data: ", 1)[1])
    assert (part["full"], [t["table_id"] for t in part["tables"]]) == (False, ["PIT-02"])


def pit_args(**given: Any) -> argparse.Namespace:
    """The page's arguments as its parser leaves them when only `given` are on the line."""
    return argparse.Namespace(**{"config": None, "broker": None, "site": None, "prefix": None,
                                 "tls": False, "ca_file": None, "username": None,
                                 "password_file": None, **given})


def test_the_broker_and_site_come_from_a_table_configuration_or_the_arguments(
        tmp_path: Path) -> None:
    config = tmp_path / "table.toml"
    config.write_text('[mqtt]\nhost = "10.0.0.5"\nport = 1884\nsite = "floor-2"\n')
    assert feed_settings(pit_args(config=str(config))) == FeedSettings(
        "10.0.0.5", 1884, "casino", "floor-2")
    args = pit_args(config=str(config), broker=("127.0.0.1", 1883), site="pit-9",
                    prefix="tabled")
    assert feed_settings(args) == FeedSettings("127.0.0.1", 1883, "tabled", "pit-9")
    config.write_text("[table]\nid = 'T'\n")
    with pytest.raises(SystemExit, match=r"has no \[mqtt\] section; allowed: a table "
                                         r"configuration with \[mqtt\], or --broker and --site"):
        feed_settings(pit_args(config=str(config)))
    with pytest.raises(SystemExit, match="--broker HOST:PORT and --site NAME"):
        feed_settings(pit_args(broker=("h", 1)))
    # A port that is not a port in the table's [mqtt] raised ValueError out of int().
    config.write_text('[mqtt]\nhost = "10.0.0.5"\nport = "1884x"\nsite = "floor-2"\n')
    with pytest.raises(SystemExit, match=r"\[mqtt\] host = '10.0.0.5', port = '1884x': "
                                         "allowed: a host name or address and a port 1 to 65535"):
        feed_settings(pit_args(config=str(config)))


def test_the_page_takes_tls_from_the_table_and_logs_in_as_its_own_user(tmp_path: Path) -> None:
    """A table's [mqtt] says how to reach the broker (TLS, its CA); the page's login is its
    own, read-only user (docs/deployment.md, "The broker"), never the table's."""
    ca = tmp_path / "ca.pem"
    ca.write_bytes(make_broker_certificates().ca_pem)
    table_password = tmp_path / "table-password"
    table_password.write_text("the table's\n")
    table_password.chmod(0o600)
    config = tmp_path / "table.toml"
    config.write_text(f'[mqtt]\nhost = "mqtt.casino.lan"\nsite = "floor-1"\ntls = true\n'
                      f'ca_file = "{ca}"\nusername = "table-BAC-01"\n'
                      f'password_file = "{table_password}"\n')
    assert feed_settings(pit_args(config=str(config))) == FeedSettings(
        "mqtt.casino.lan", 8883, "casino", "floor-1", BrokerLogin("", "", True, str(ca)))
    own = tmp_path / "pit-password"
    own.write_text("read only\n")
    own.chmod(0o400)
    assert feed_settings(pit_args(config=str(config), username="pitpage",
                                  password_file=str(own))).login == BrokerLogin(
        "pitpage", "read only", True, str(ca))
    page = r"^python -m controller\.display\.pit: "  # the page's messages, as its usage says
    with pytest.raises(SystemExit, match=page + "--password-file needs --username: allowed: "
                                         "the page's own user on the broker"):
        feed_settings(pit_args(config=str(config), password_file=str(own)))
    own.chmod(0o644)
    with pytest.raises(SystemExit, match=page + fr"--password-file {own} has mode 0644: group "
                                         fr"or others can read it \(chmod 0600 {own}\); allowed: "
                                         "a file holding the password alone on one line"):
        feed_settings(pit_args(config=str(config), username="pitpage", password_file=str(own)))
    with pytest.raises(SystemExit, match=page + r"a CA file \(.*ca.pem\) without TLS: "
                                         r"allowed: --tls \(or \[mqtt\] tls = true\)"):
        feed_settings(pit_args(broker=("127.0.0.1", 1883), site="s", ca_file=str(ca)))
    with pytest.raises(SystemExit, match=page + r"CA file .*nowhere.pem: allowed: a readable "
                                         "PEM file of CA certificates"):
        feed_settings(pit_args(broker=("127.0.0.1", 8883), site="s", tls=True,
                               ca_file=str(tmp_path / "nowhere.pem")))


@pytest.mark.parametrize("text", ["127.0.0.1:\u00b2", "a" * 70 + ":8090", ":8090", "[]:8090",
                                  "127.0.0.1:65536", "127.0.0.1"])
def test_a_listen_or_broker_address_the_page_cannot_use_is_refused(text: str) -> None:
    """Before, '²' raised ValueError out of argparse's type function, and a label of over 63
    characters UnicodeError at the bind."""
    from controller.display.pit_settings import _host_port

    with pytest.raises(argparse.ArgumentTypeError, match="allowed: HOST:PORT, e.g. 127.0.0.1:1883"):
        _host_port(text, "--listen")
    assert _host_port("[::1]:0", "--listen") == ("::1", 0)
    assert _host_port("pit-broker.casino.lan:1883", "--broker") == ("pit-broker.casino.lan", 1883)


async def test_the_page_goes_on_updating_after_a_message_it_cannot_show() -> None:
    """The service end to end from paho's hand-off (`_apply`) to what it publishes to the
    browsers: before, a status whose meters were text ended the pushing task, and every
    later change reached no browser."""
    from controller.display.pit import PitService

    service = PitService("127.0.0.1", 1, "casino", "pit-1")
    sent: list[bytes] = []
    service.web.publish = lambda topic, message: sent.append(message)  # type: ignore[method-assign]
    pusher = asyncio.create_task(service.push_changes())
    try:
        service._apply(f"{BASE}/PIT-01/status", with_key("meters", "abc"))
        await asyncio.sleep(0.05)
        service._apply(f"{BASE}/PIT-02/status", status("PIT-02", 40.0, 1, "dealing"))
        for _ in range(100):
            if sent or pusher.done():
                break
            await asyncio.sleep(0.02)
        assert not pusher.done()
        [message] = sent
        body = json.loads(message.split(b"data: ", 1)[1])
        assert [(t["table_id"], t["state"]) for t in body["tables"]] == [("PIT-02", "dealing")]
    finally:
        pusher.cancel()
