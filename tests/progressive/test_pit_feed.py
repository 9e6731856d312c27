"""The table's feed to the pit page (controller/progressive/pit_feed.py), sans-I/O."""

from __future__ import annotations

import json
from typing import Any

import pytest

from controller.progressive.mqtt import MeterMessage
from controller.progressive.pit_feed import (
    LOST, ONLINE, PitFeed, alive_message, status_payload, table_topic,
)
from controller.memory.store import Event

MISREAD = {"device": "shoe", "code": "card_misread", "detail": "index 17 unreadable",
           "action": "show the card to the reader, then acknowledge"}


def daemon_status(**changes: Any) -> dict[str, Any]:
    """The parts of tabled's `status` the feed reads (controller/daemon.py)."""
    status: dict[str, Any] = {
        "table_id": "PIT-01", "state": "betting_open", "game": "baccarat",
        "variant": "standard", "shoe": {"shoe_no": 2, "rounds": 14, "cards_left": 330},
        "round": {"round_id": 41, "round_no": 15, "wagers": [{"seat": 1}]},
        "fault": None, "faults_holding": [], "out_of_order": None,
        "witness": {"link": "up", "pending_heads": 1, "unwitnessed_s": 0.4,
                    "last_error": None},
        "uptime_s": 12.5}
    status.update(changes)
    return status


METERS = [{"progressive": "h9", "level": "progressive", "linked": True,
           "amount_cents": 1_000_150, "stale": False, "sequence": 9}]


def settled(seq: int, round_id: int, winner: str, simulated: bool = False) -> Event:
    return Event(seq, 0.0, "round_settled", "info", None, round_id,
                 {"simulated": simulated, "result": {"winner": winner, "player_total": 3,
                                                     "banker_total": 8}}, "", "", "")


class Sent:
    def __init__(self) -> None:
        self.messages: list[MeterMessage] = []

    def __call__(self, message: MeterMessage) -> None:
        self.messages.append(message)

    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(m.payload) for m in self.messages]


def test_topics_and_the_alive_words() -> None:
    assert table_topic("casino", "pit-1", "PIT-01", "status") == \
        "casino/pit-1/tables/PIT-01/status"
    message = alive_message("casino", "pit-1", "PIT-01", LOST)
    assert (message.topic, message.retain, message.qos) == (
        "casino/pit-1/tables/PIT-01/alive", True, 1)
    assert json.loads(message.payload) == {"alive": "lost", "table_id": "PIT-01"}
    with pytest.raises(ValueError, match="topic level"):
        table_topic("casino", "pit/1", "PIT-01", "status")


def test_the_status_carries_what_the_pit_page_shows_and_nothing_that_ticks() -> None:
    since: dict[tuple[str, str], float] = {}
    payload = status_payload(
        daemon_status(state="device_fault", fault=MISREAD, faults_holding=[
            {"device": "shoe", "code": "card_misread", "clears": "acknowledge"},
            {"device": "seats", "code": "link_down", "clears": "the panel's link back up"}]),
        meters=METERS, link={"h9": None}, results=[], fault_since=since, now=100.0)
    assert payload == {
        "table_id": "PIT-01", "state": "device_fault", "game": "baccarat",
        "variant": "standard", "shoe": {"shoe_no": 2, "rounds": 14, "cards_left": 330},
        "round": {"round_id": 41, "round_no": 15},
        "faults": [{**MISREAD, "since": 100.0},
                   {"device": "seats", "code": "link_down", "detail": "",
                    "action": "the panel's link back up", "since": 100.0}],
        "link": {"h9": None},
        "meters": [{"progressive": "h9", "level": "progressive", "linked": True,
                    "amount_cents": 1_000_150, "stale": False}],
        "results": [], "witness": {"link": "up", "pending_heads": 1, "detail": None}}


def test_a_change_is_sent_once_with_a_growing_sequence_and_faults_keep_their_age() -> None:
    sent = Sent()
    clock = iter([10.0, 11.0, 12.0, 13.0, 14.0, 15.0]).__next__
    feed = PitFeed(sent, "casino", "pit-1", "PIT-01", clock=clock)
    assert feed.update(daemon_status(), METERS, {"h9": None})
    assert not feed.update(daemon_status(uptime_s=99.0), METERS, {"h9": None})  # no change
    assert feed.update(daemon_status(fault=MISREAD, faults_holding=[]), METERS, {"h9": None})
    assert feed.update(daemon_status(fault=MISREAD, faults_holding=[], state="device_fault"),
                       METERS, {"h9": None})
    assert feed.update(daemon_status(), METERS, {"h9": "linked ledger unreachable"})
    bodies = sent.bodies()
    assert [b["sequence"] for b in bodies] == [1, 2, 3, 4]
    assert [b["at"] for b in bodies] == [10.0, 12.0, 13.0, 14.0]
    assert [f["since"] for f in bodies[1]["faults"]] == [12.0]
    assert [f["since"] for f in bodies[2]["faults"]] == [12.0]  # the same fault, older
    assert bodies[2]["faults"][0]["action"] == MISREAD["action"]
    assert (bodies[3]["faults"], bodies[3]["link"]) == ([], {"h9": "linked ledger unreachable"})
    assert {m.topic for m in sent.messages} == {"casino/pit-1/tables/PIT-01/status"}


def test_results_are_the_last_six_live_rounds_newest_first_and_republish_resends() -> None:
    sent = Sent()
    feed = PitFeed(sent, "casino", "pit-1", "PIT-01", clock=lambda: 1.0)
    for n, winner in enumerate(["banker", "player", "tie", "banker", "banker", "player",
                                "player"], start=1):
        feed.on_event(settled(n, n, winner))
    feed.on_event(settled(9, 9, "tie", simulated=True))  # 631a.15(d): not a round of play
    feed.update(daemon_status(), METERS, {"h9": None})
    results = sent.bodies()[0]["results"]
    assert [(r["round_id"], r["winner"]) for r in results] == [
        (7, "player"), (6, "player"), (5, "banker"), (4, "banker"), (3, "tie"), (2, "player")]
    feed.republish()
    assert json.loads(sent.messages[-1].payload)["alive"] == ONLINE
    assert feed.update(daemon_status(), METERS, {"h9": None})  # sent again, unchanged
    assert sent.bodies()[-1]["sequence"] == 2
