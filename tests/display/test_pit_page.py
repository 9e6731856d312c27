"""The pit page's board (controller/display/pit.py): what it keeps of the tables' messages."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from controller.display.pit import PitBoard, feed_settings

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
    assert list(board.tables) == ["PIT-01"] and board.view("PIT-01")["alive"] == "unknown"


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


def test_the_broker_and_site_come_from_a_table_configuration_or_the_arguments(
        tmp_path: Path) -> None:
    config = tmp_path / "table.toml"
    config.write_text('[mqtt]\nhost = "10.0.0.5"\nport = 1884\nsite = "floor-2"\n')
    args = argparse.Namespace(config=str(config), broker=None, site=None, prefix=None)
    assert feed_settings(args) == ("10.0.0.5", 1884, "casino", "floor-2")
    args = argparse.Namespace(config=str(config), broker=("127.0.0.1", 1883), site="pit-9",
                              prefix="tabled")
    assert feed_settings(args) == ("127.0.0.1", 1883, "tabled", "pit-9")
    config.write_text("[table]\nid = 'T'\n")
    with pytest.raises(SystemExit, match=r"has no \[mqtt\] section; allowed: a table "
                                         r"configuration with \[mqtt\], or --broker and --site"):
        feed_settings(argparse.Namespace(config=str(config), broker=None, site=None,
                                         prefix=None))
    with pytest.raises(SystemExit, match="--broker HOST:PORT and --site NAME"):
        feed_settings(argparse.Namespace(config=None, broker=("h", 1), site=None, prefix=None))
