"""The pit page: every table of a pit on one screen, from the tables' MQTT feeds.

    python -m controller.display.pit --config /etc/tabled/table.toml --listen 10.20.30.40:8090
    python -m controller.display.pit --broker 127.0.0.1:1883 --site sim-pit

It subscribes to `<prefix>/<site>/tables/+/{status,alive}` and the tables' meter topics
(controller/progressive/pit_feed.py, controller/progressive/mqtt.py) and serves `/pit`,
a page that shows, for every table: its state, shoe and round, the faults holding it with
their age and what clears them, the linked wager's availability (605a.8), the linked and
local meters, the last results and the witness's state. A table whose daemon dies shows
as lost as soon as the broker publishes its last will. The page reads nothing but the
broker: it cannot touch a table, and a broker that goes away costs the page its feed
(shown on the page) and nothing else; on its return the retained messages refill it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import structlog

from controller.display.web import Response, WebServer, sse_message, static_file
from controller.errors import shown
from controller.logsetup import configure_logging
from controller.display.pit_settings import PROG, feed_settings, pit_arguments
from controller.progressive.broker import BrokerLogin
from controller.rules.submission import MAX_TABLE_ID_CHARS
from controller.text_files import loads_json

log = structlog.get_logger("display.pit")

TOPIC = "pit"
PUSH_INTERVAL_S = 0.1  # changes are sent together at most this often: 20 tables, one message
RECONNECT_MAX_S = 5


class PitBoard:
    """What the page shows, from the messages as they come (sans-I/O)."""

    def __init__(self, prefix: str, site: str) -> None:
        self.base = f"{prefix}/{site}/tables/"
        self.tables: dict[str, dict[str, Any]] = {}
        self.feed_connected = False

    def subscriptions(self) -> list[str]:
        return [self.base + "+/status", self.base + "+/alive", self.base + "+/progressive/+/+"]

    def apply(self, topic: str, payload: bytes) -> str | None:
        """One message; returns the table it changed, or None (ignored, or not newer).

        Anything on the broker may publish under the tables' prefix (a table of another
        version, a test tool, a mistake): a message this board cannot show is logged and
        dropped whole, so the table keeps its last good view, no table is made up from a
        stray topic, and the page's stream goes on."""
        if not topic.startswith(self.base) or not payload:
            return None  # an empty retained message is a deletion: the table was cleared
        parts = topic[len(self.base):].split("/")
        leaf = "/".join(parts[1:2]) if parts[1:] in (["alive"], ["status"]) else \
            "progressive" if len(parts) == 4 and parts[1] == "progressive" else None
        if leaf is None:
            return None
        try:
            body = loads_json(payload)
        except ValueError:  # not UTF-8, not JSON, a number of over 4,300 digits, too deep
            log.warning("pit_message_unreadable", topic=topic[:200])
            return None
        wrong = _what_is_wrong(parts[0], leaf, body)
        if wrong is not None:
            log.warning("pit_message_refused", topic=topic[:200], wrong=wrong)
            return None
        table = self.tables.setdefault(parts[0], {"table_id": parts[0], "alive": None,
                                                  "status": None, "meters": {}})
        if leaf == "alive":
            table["alive"] = body["alive"]
        elif leaf == "status":
            old = table["status"]
            # A late copy of an older status (the sequence starts again at a restart; the
            # time it was taken does not).
            if old is not None and body["at"] < old["at"]:
                return None
            table["status"] = body
        else:
            key = f"{parts[2]}/{parts[3]}"
            old = table["meters"].get(key)
            if old is not None and body["sequence"] < old["sequence"] \
                    and not body.get("linked"):
                return None
            table["meters"][key] = {"amount_cents": body.get("amount_cents"),
                                    "linked": bool(body.get("linked")),
                                    "sequence": body["sequence"]}
        return parts[0]

    def view(self, table_id: str) -> dict[str, Any]:
        table = self.tables[table_id]
        status = table["status"] or {}
        meters = [{**m, "amount_cents": table["meters"].get(
            f"{m['progressive']}/{m['level']}", {}).get("amount_cents", m.get("amount_cents"))}
                  for m in status.get("meters", [])]
        return {"table_id": table_id, "alive": table["alive"] or "unknown",
                "state": status.get("state"), "game": status.get("game"),
                "shoe": status.get("shoe"), "round": status.get("round"),
                "faults": status.get("faults", []), "link": status.get("link", {}),
                "meters": meters, "results": status.get("results", []),
                "witness": status.get("witness"), "sequence": status.get("sequence"),
                "at": status.get("at")}

    def message(self, table_ids: set[str] | None = None) -> bytes:
        ids = sorted(self.tables) if table_ids is None else sorted(table_ids)
        return sse_message(TOPIC, {"feed": {"connected": self.feed_connected},
                                   "full": table_ids is None,
                                   "tables": [self.view(t) for t in ids]})


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _text_or_none(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _dicts(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, dict) for item in value)


# What a table's status message must hold for the page to show it (the table's side:
# controller/progressive/pit_feed.py `status_payload`); a key may be absent where the page
# shows a dash.
_STATUS_SHAPE: dict[str, tuple[Any, str]] = {
    "at": (_number, "the time the status was taken, in seconds"),
    "sequence": (lambda v: v is None or _whole(v), "a whole number"),
    "table_id": (_text_or_none, "text"),
    "state": (_text_or_none, "text"),
    "game": (_text_or_none, "text"),
    "variant": (_text_or_none, "text"),
    "shoe": (lambda v: v is None or isinstance(v, dict), "an object"),
    "round": (lambda v: v is None or isinstance(v, dict), "an object"),
    "witness": (lambda v: v is None or isinstance(v, dict), "an object"),
    "link": (lambda v: isinstance(v, dict) and all(map(_text_or_none, v.values())),
             "an object of progressives, each null or the reason it is down"),
    "results": (_dicts, "a list of objects"),
    "faults": (lambda v: _dicts(v) and all(
        isinstance(f.get("device"), str) and isinstance(f.get("code"), str)
        and _number(f.get("since")) and _text_or_none(f.get("detail"))
        and _text_or_none(f.get("action")) for f in v),
        "a list of faults, each with text device and code and a number since"),
    "meters": (lambda v: _dicts(v) and all(
        isinstance(m.get("progressive"), str) and isinstance(m.get("level"), str)
        and (m.get("amount_cents") is None or _whole(m.get("amount_cents"))) for m in v),
        "a list of meters, each with text progressive and level and whole amount_cents"),
}


def _what_is_wrong(table_id: str, leaf: str, body: Any) -> str | None:
    """Why the board cannot show this message (None: it can)."""
    if not 0 < len(table_id) <= MAX_TABLE_ID_CHARS or not table_id.isprintable():
        return f"the table id in the topic: allowed: 1 to {MAX_TABLE_ID_CHARS} printable characters"
    if not isinstance(body, dict):
        return "the message: allowed: a JSON object"
    if leaf == "alive":
        return None if isinstance(body.get("alive"), str) else \
            f"alive = {shown(body.get('alive'))}: allowed: text, e.g. online or lost"
    if leaf == "progressive":
        if not _whole(body.get("sequence")):
            return f"sequence = {shown(body.get('sequence'))}: allowed: a whole number"
        amount = body.get("amount_cents")
        return None if amount is None or _whole(amount) else \
            f"amount_cents = {shown(amount)}: allowed: a whole number of cents"
    if "at" not in body:
        return "at: missing; allowed: the time the status was taken, in seconds"
    for key, (fits, allowed) in _STATUS_SHAPE.items():
        if key in body and not fits(body[key]):
            return f"{key} = {shown(body[key])}: allowed: {allowed}"
    return None


class PitService:
    def __init__(self, host: str, port: int, prefix: str, site: str,
                 login: BrokerLogin | None = None) -> None:
        self.broker = (host, port)
        self.login = login or BrokerLogin()
        self.board = PitBoard(prefix, site)
        self.web = WebServer(self._route, self._snapshot, frozenset({TOPIC}))
        self._changed: set[str] = set()
        self._feed_changed = False
        self._wake = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._network: Any = None  # the broker client's BrokerThread, once started

    # --- the broker side (the broker's thread hands every message to the loop) -----------

    def start_feed(self) -> None:
        from controller.progressive.broker import BrokerTrouble, broker_client
        from controller.progressive.broker_thread import BrokerThread

        self._loop = asyncio.get_running_loop()
        client, context = broker_client(f"tabled-pit-{os.getpid()}", self.login)
        self.trouble = BrokerTrouble(log, *self.broker, self.login, context)
        client.on_connect = self._on_connect
        client.on_disconnect = self._on_disconnect
        client.on_message = self._on_message
        self._network = BrokerThread(client, *self.broker, keepalive_s=5, name="mqtt-pit",
                                     on_connect_fail=self.trouble.failed,
                                     max_delay_s=RECONNECT_MAX_S)
        self._network.start()

    def stop_feed(self) -> None:
        if self._network is not None:
            self._network.stop()

    def _on_connect(self, client: Any, userdata: Any, flags: Any, reason: Any,
                    properties: Any = None) -> None:
        if getattr(reason, "is_failure", False):
            self.trouble.refused(reason)  # /healthz answers 503 meanwhile
            return
        self.trouble.connected()
        for topic in self.board.subscriptions():  # again on every reconnect: clean session
            client.subscribe(topic, qos=1)
        self._call(self._feed, True)

    def _on_disconnect(self, client: Any, userdata: Any, flags: Any, reason: Any,
                       properties: Any = None) -> None:
        self._call(self._feed, False)

    def _on_message(self, client: Any, userdata: Any, message: Any) -> None:
        self._call(self._apply, message.topic, bytes(message.payload))

    def _call(self, function: Any, *args: Any) -> None:
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(function, *args)

    def _feed(self, connected: bool) -> None:
        self.board.feed_connected = connected
        self._feed_changed = True
        self._wake.set()

    def _apply(self, topic: str, payload: bytes) -> None:
        changed = self.board.apply(topic, payload)
        if changed is not None:
            self._changed.add(changed)
            self._wake.set()

    async def push_changes(self) -> None:
        """The changed tables to every browser, together, at most every PUSH_INTERVAL_S."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            changed, self._changed = self._changed, set()
            if changed or self._feed_changed:
                self._feed_changed = False
                self.web.publish(TOPIC, self.board.message(changed))
            await asyncio.sleep(PUSH_INTERVAL_S)

    # --- the browser side -------------------------------------------------------------------

    def _snapshot(self, topics: frozenset[str]) -> list[bytes]:
        return [self.board.message()]

    def _route(self, path: str, query: Mapping[str, list[str]]) -> Response | None:
        if path == "/":
            return Response(302, b"", headers={"Location": "/pit"})
        if path == "/pit":
            return static_file("pit.html")
        if path.startswith("/static/"):
            return static_file(path[len("/static/"):])
        if path == "/pit.json":
            body = {"feed": {"connected": self.board.feed_connected},
                    "tables": [self.board.view(t) for t in sorted(self.board.tables)]}
            return Response(200, json.dumps(body).encode(), "application/json")
        if path == "/healthz":
            ok = self.board.feed_connected
            return Response(200 if ok else 503, b"ok\n" if ok else b"broker not connected\n")
        return None


async def serve(args: argparse.Namespace) -> int:
    settings = feed_settings(args)
    host, port = settings.host, settings.port
    service = PitService(host, port, settings.prefix, settings.site, settings.login)
    listen_host, listen_port = args.listen
    bound = await service.web.start(listen_host, listen_port)
    log.info("pit_listening", page=f"http://{listen_host}:{bound}/pit", broker=f"{host}:{port}",
             tls=settings.login.tls, username=settings.login.username or None,
             topics=service.board.base + "#")
    if args.port_file:
        tmp = Path(args.port_file + ".tmp")
        tmp.write_text(f"{bound}\n")
        os.replace(tmp, args.port_file)
    service.start_feed()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    pusher = asyncio.create_task(service.push_changes())
    started = time.monotonic()
    await stop.wait()
    pusher.cancel()
    await asyncio.gather(pusher, return_exceptions=True)
    service.stop_feed()
    await service.web.close()
    log.info("pit_stopped", served_s=round(time.monotonic() - started, 1))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = pit_arguments().parse_args(argv)
    configure_logging(level=args.log_level)
    try:
        return asyncio.run(serve(args))
    except OSError as exc:
        print(f"{PROG}: cannot serve on {args.listen[0]}:{args.listen[1]}: {exc}",
              file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
