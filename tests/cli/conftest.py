"""A fake tabled for tablectl's tests: the real ControlServer and a real Store on a
background event loop, with handlers returning canned data.

The CLI under test runs `asyncio.run` in the test's thread, so the server needs a loop
of its own; everything touching the server or the store runs on that loop's thread.
"""

from __future__ import annotations

import asyncio
import copy
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from controller.auth import authorise, hash_pin
from controller.control import ControlError, ControlServer, event_json
from controller.commands.args import COMMAND_ARGS
from controller.memory.store import Store

SUPERVISOR_PIN = "2468"
FAST_PBKDF2 = 1000  # iterations: production strength would cost a second per test

STATUS: dict[str, Any] = {
    "table_id": "SIM-BAC-01", "state": "betting_open", "game": "baccarat",
    "variant": "standard", "config": "/etc/tabled/table.toml",
    "shoe": {"shoe_no": 3, "cards_drawn": 45, "cards_left": 371, "cover_card_seen": False,
             "last_hand": False, "rounds": 7},
    "round": {"round_id": None, "round_no": 7, "wagers": [
        {"seat": 1, "wager": "banker", "amount_cents": 2500},
        {"seat": 5, "wager": "player", "amount_cents": 10000}], "next": None},
    "fault": None, "out_of_order": None, "uptime_s": 3725.4,
}

DEVICES: list[dict[str, Any]] = [
    {"device": "shoe", "kind": "shoe", "link": "up", "port": "/dev/ttyUSB0",
     "serial_number": "SH-00042", "firmware_version": "2.1.0", "protocol_version": 1,
     "uptime_s": 3720.0, "counters": {"crc_errors": 2, "retransmits": 5, "resyncs": 1,
                                      "reconnects": 0, "frames_in": 1200},
     "last_error": ""},
    {"device": "shuffler", "kind": "shuffler", "link": "up", "port": "usb:1209:bac1",
     "serial_number": "SF-7", "firmware_version": "1.4.2", "protocol_version": 1,
     "uptime_s": 3719.5, "counters": {"crc_errors": 0, "retransmits": 0, "resyncs": 0,
                                      "reconnects": 0}, "last_error": ""},
    {"device": "seats", "kind": "seats", "link": "up", "port": "gpio:lgpio",
     "serial_number": "", "firmware_version": "", "protocol_version": None,
     "uptime_s": None, "counters": {"button_presses": 4}, "last_error": ""},
]

ROUND: dict[str, Any] = {
    "round_id": 41, "shoe_no": 3, "round_no": 7, "state": "settled", "simulated": False,
    "wagers": [{"seat": 1, "wager": "banker", "amount_cents": 123456},
               {"seat": 5, "wager": "player", "amount_cents": 10000}],
    "cards": [{"index": 40, "card": "9H", "hand": "player"},
              {"index": 41, "card": "KS", "hand": "banker"},
              {"index": 42, "card": "3C", "hand": "player"},
              {"index": 43, "card": "7D", "hand": "banker"}],
    "result": {"player": ["9H", "3C"], "banker": ["KS", "7D"], "player_total": 2,
               "banker_total": 7, "winner": "banker", "player_natural": False,
               "banker_natural": False},
    "settlements": [
        {"seat": 1, "wager": "banker", "amount_cents": 123456, "outcome": "win",
         "win_cents": 123456, "vigorish_cents": 6173, "net_cents": 117283},
        {"seat": 5, "wager": "player", "amount_cents": 10000, "outcome": "lose",
         "win_cents": 0, "vigorish_cents": 0, "net_cents": -10000}],
    "opened_at": 1763758800.0, "settled_at": 1763758803.12,
}


class FakeDaemon:
    """A control server answering like tabled, on its own thread and loop."""

    def __init__(self, workdir: Path) -> None:
        self.socket = str(workdir / "control.sock")
        self.store = Store(workdir / "fake.sqlite", clock=self._clock)
        self.now = 1763758800.0  # 2025-11-21T21:00:00Z; each event one second later
        self.status = copy.deepcopy(STATUS)
        self.devices = copy.deepcopy(DEVICES)
        self.rounds = [copy.deepcopy(ROUND)]
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.self_tests: dict[str, dict[str, Any]] = {
            name: {"device": name, "passed": True, "detail": f"{name} ok"}
            for name in ("shoe", "shuffler", "seats")}
        self._on_subscribe: list[Callable[[], None]] = []
        pins = {"ana": hash_pin(SUPERVISOR_PIN, iterations=FAST_PBKDF2)}
        self.server = ControlServer(self.socket, mode=0o660,
                                    authorise=lambda who, pin: authorise(pins, who, pin))
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def _clock(self) -> float:
        self.now += 1.0
        return self.now

    # --- lifecycle ------------------------------------------------------------------

    def start(self) -> FakeDaemon:
        self._thread.start()
        reg = self.register
        reg("status", lambda a: self.status)
        reg("devices", lambda a: self.devices)
        reg("rounds", lambda a: self.rounds[-int(a.get("limit", 10)):])
        reg("events", self._events)
        reg("verify_chain", lambda a: {"entries": self.store.verify_chain()})
        reg("self_test", self._self_test)
        self.server.set_history(self._history)
        self.server.follow(self.store)
        self.run(self.server.start())
        return self

    def stop(self) -> None:
        self.run(self.server.close())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        self.store.close()

    def run(self, coro: Any) -> Any:
        """Run a coroutine on the server's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(10)

    def call_in_loop(self, fn: Callable[[], Any]) -> Any:
        async def wrapper() -> Any:
            return fn()
        return self.run(wrapper())

    # --- behaviour --------------------------------------------------------------------

    def register(self, name: str, handler: Callable[[Mapping[str, Any]], Any], *,
                 supervisor: bool = False) -> None:
        def recorded(args: Mapping[str, Any]) -> Any:
            # What the client sent: the daemon's check fills in defaults for the rest.
            defaults = {k: a.default for k, a in COMMAND_ARGS.get(name, {}).items()}
            self.calls.append((name, {k: v for k, v in args.items()
                                      if k not in defaults or v != defaults[k]}))
            return handler(args)
        # The daemon's own argument checks: the CLI is tested against what the daemon takes.
        self.server.register(name, recorded, supervisor=supervisor,
                             args=COMMAND_ARGS.get(name))

    def append(self, kind: str, payload: Mapping[str, Any] | None = None, **kw: Any) -> None:
        """Commit one log entry (from the test's thread); subscribers see it."""
        def commit() -> None:
            with self.store.transaction():
                self.store.append_entry(kind, payload, **kw)
        self.call_in_loop(commit)

    def on_next_subscribe(self, *events: tuple[str, dict[str, Any], dict[str, Any]]) -> None:
        """Commit these (kind, payload, kwargs) entries once a client has subscribed, the
        way a technician's touch arrives after the CLI is listening."""
        def emit() -> None:
            for kind, payload, kw in events:
                with self.store.transaction():
                    self.store.append_entry(kind, payload, **kw)
        self._on_subscribe.append(emit)

    def _commit(self, kind: str, payload: Mapping[str, Any], kw: Mapping[str, Any]) -> None:
        """Commit one entry; call on the server's loop."""
        with self.store.transaction():
            self.store.append_entry(kind, payload, **kw)

    def on_next_subscribe_do(self, action: Callable[[], None]) -> None:
        self._on_subscribe.append(action)

    def _history(self, after: int, count: int) -> list[Any]:
        # ControlServer calls this right after it queued the new subscriber, so anything
        # committed from here on reaches the stream (duplicates are dropped by seq).
        pending, self._on_subscribe = self._on_subscribe, []
        for action in pending:
            self.loop.call_soon(action)
        return self.store.events_from(after, count)

    def _events(self, a: Mapping[str, Any]) -> list[dict[str, Any]]:
        events = self.store.events(after_seq=int(a.get("after_seq", 0)),
                                   limit=int(a.get("limit", 50)), kind=a.get("kind"),
                                   device=a.get("device"), severity=a.get("severity"),
                                   since=float(a["since"]) if a.get("since") is not None
                                   else None)
        return [event_json(e) for e in events]

    def _self_test(self, a: Mapping[str, Any]) -> dict[str, Any]:
        name = str(a.get("device", ""))
        if name not in self.self_tests:
            raise ControlError(f"no device {name!r}; allowed: {', '.join(self.self_tests)}",
                               "bad_request")
        return self.self_tests[name]


@pytest.fixture
def fake(tmp_path: Path) -> Iterator[FakeDaemon]:
    daemon = FakeDaemon(tmp_path).start()
    yield daemon
    daemon.stop()


@pytest.fixture(autouse=True)
def _plain_output(monkeypatch: pytest.MonkeyPatch) -> None:
    """Expected fragments are plain text (whole: tests/conftest.py's wide terminal; the
    tests of wrapping ask for `at_80_columns`); the socket comes only from --socket."""
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.delenv("TABLECTL_SOCKET", raising=False)


@pytest.fixture
def at_80_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """tablectl's output as a pipe has it: no terminal and no COLUMNS, so 80 columns (and
    `events` unwrapped, one entry a line)."""
    monkeypatch.delenv("COLUMNS", raising=False)
