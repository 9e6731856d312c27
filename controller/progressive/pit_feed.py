"""The table's state feed to the pit page over MQTT: a retained status, liveness by last will.

Beside the meter topics of `controller.progressive.mqtt`, each table publishes:

- `<prefix>/<site>/tables/<table_id>/status`: retained JSON of what the pit page shows of
  the table (state, shoe and round, the faults holding it with their age and what clears
  them, the link's state, the meters, the last results, the witness's state). Sent when
  it changes, with a `sequence` (from 1 again at a restart) and an `at` that only grows, so
  a late copy can be told from a new one.
- `<prefix>/<site>/tables/<table_id>/alive`: retained `{"table_id", "alive": "online"}` once
  the table is connected; the broker itself publishes the table's last will, `"lost"`
  (retained), when the table's connection dies without a goodbye (a killed daemon, a cut
  cable: MQTT 3.1.1 section 3.1.2.5); a clean stop sends `"offline"` first.

The page is not the ledger: a message lost while the broker is away changes no money, and
the table sends everything again when it reconnects (`PitFeed.republish`).
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from controller.progressive.mqtt import MeterMessage, meter_topic
from controller.memory.store import Event

ONLINE, OFFLINE, LOST = "online", "offline", "lost"
LAST_RESULTS = 6  # what a pit supervisor scans for a streak; the table's own roads show more
FEED_INTERVAL_S = 0.25  # how often the daemon looks for a change: well inside the page's 2 s


def table_topic(prefix: str, site: str, table_id: str, leaf: str) -> str:
    """`<prefix>/<site>/tables/<table_id>/<leaf>` (the words checked as meter topics are)."""
    base = meter_topic(prefix, site, table_id, "x", "x").rsplit("/progressive/", 1)[0]
    return f"{base}/{leaf}"


def alive_message(prefix: str, site: str, table_id: str, word: str) -> MeterMessage:
    payload = json.dumps({"table_id": table_id, "alive": word}, sort_keys=True,
                         separators=(",", ":"))
    return MeterMessage(table_topic(prefix, site, table_id, "alive"), payload.encode())


def _faults(status: Mapping[str, Any], since: dict[tuple[str, str], float], now: float
            ) -> list[dict[str, Any]]:
    """The faults holding the table, each with when it was first seen and what clears it."""
    first = status.get("fault") or {}
    held: list[dict[str, Any]] = []
    for fault in status.get("faults_holding") or []:
        key = (str(fault.get("device")), str(fault.get("code")))
        is_first = (first.get("device"), first.get("code")) == key
        held.append({"device": key[0], "code": key[1],
                     "detail": str(first.get("detail", "")) if is_first else "",
                     "action": str(first.get("action") or fault.get("clears") or "")
                     if is_first else str(fault.get("clears") or "")})
    if first and not held:
        held.append({"device": str(first.get("device")), "code": str(first.get("code")),
                     "detail": str(first.get("detail", "")), "action": str(first.get("action", ""))})
    if status.get("out_of_order"):
        held.append({"device": "table", "code": "out_of_order",
                     "detail": str(status["out_of_order"]),
                     "action": "a technician reads tablectl status and the fault guide "
                               "(docs/faults.md) before the table reopens"})
    keys = {(f["device"], f["code"]) for f in held}
    for key in list(since):
        if key not in keys:
            del since[key]  # cleared: a fault that comes back later is a new one
    for fault in held:
        fault["since"] = since.setdefault((fault["device"], fault["code"]), now)
    return held


def status_payload(status: Mapping[str, Any], *, meters: Sequence[Mapping[str, Any]],
                   link: Mapping[str, str | None], results: Sequence[Mapping[str, Any]],
                   fault_since: dict[tuple[str, str], float], now: float) -> dict[str, Any]:
    """What the pit page shows of one table, from the daemon's own `status` (sans-I/O)."""
    shoe = status.get("shoe") or {}
    round_ = status.get("round") or {}
    witness = status.get("witness") or {}
    return {
        "table_id": status.get("table_id"), "state": status.get("state"),
        "game": status.get("game"), "variant": status.get("variant"),
        "shoe": {"shoe_no": shoe.get("shoe_no"), "rounds": shoe.get("rounds"),
                 "cards_left": shoe.get("cards_left")},
        "round": {"round_id": round_.get("round_id"), "round_no": round_.get("round_no")},
        "faults": _faults(status, fault_since, now),
        # 605a.8: None when the linked wager is offered, else why not (the dealer's words).
        "link": dict(link),
        "meters": [{"progressive": m["progressive"], "level": m["level"],
                    "linked": bool(m.get("linked")), "amount_cents": m.get("amount_cents"),
                    "stale": bool(m.get("stale"))} for m in meters],
        "results": list(results),
        "witness": {"link": witness.get("link"), "pending_heads": witness.get("pending_heads"),
                    "detail": witness.get("detail") or witness.get("last_error")
                    or witness.get("failure")},
    }


class PitFeed:
    """The daemon's side: remembers the last results and the faults' ages, and publishes the
    status whenever it differs from the last one sent."""

    def __init__(self, publish: Callable[[MeterMessage], None], prefix: str, site: str,
                 table_id: str, clock: Callable[[], float] = time.time) -> None:
        self._publish = publish
        self.prefix, self.site, self.table_id = prefix, site, table_id
        self._clock = clock
        self.results: deque[dict[str, Any]] = deque(maxlen=LAST_RESULTS)
        self._fault_since: dict[tuple[str, str], float] = {}
        self._last: dict[str, Any] | None = None
        self.sequence = 0

    def on_event(self, event: Event) -> None:
        """Store listener: a settled round's result joins the last results."""
        if event.kind != "round_settled" or event.payload.get("simulated"):
            return
        result = event.payload.get("result") or {}
        self.results.appendleft({"round_id": event.round_id, "winner": result.get("winner"),
                                 "player_total": result.get("player_total"),
                                 "banker_total": result.get("banker_total")})

    def update(self, status: Mapping[str, Any], meters: Sequence[Mapping[str, Any]],
               link: Mapping[str, str | None]) -> bool:
        """Publish the status if it changed; True when it did."""
        now = self._clock()
        payload = status_payload(status, meters=meters, link=link, results=list(self.results),
                                 fault_since=self._fault_since, now=now)
        if payload == self._last:
            return False
        self._last = payload
        self.sequence += 1
        body = {**payload, "sequence": self.sequence, "at": now}
        self._publish(MeterMessage(
            table_topic(self.prefix, self.site, self.table_id, "status"),
            json.dumps(body, sort_keys=True, separators=(",", ":")).encode()))
        return True

    def republish(self) -> None:
        """After the broker came back (it may have lost its retained messages): the next
        `update` sends the status again even if nothing changed, and the table says it is
        online again."""
        self._last = None
        self._publish(alive_message(self.prefix, self.site, self.table_id, ONLINE))
