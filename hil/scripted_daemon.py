"""The daemon's side of the control socket with a scripted event log, and a display
service started in this process on it: for what the simulated table does not produce on
demand (a 21 Baccarat shoe, a fault, a jackpot, a whole shoe in a second) in the browser
tests (hil/test_display_browser.py, hil/test_scoreboard_browser.py)."""

from __future__ import annotations

from typing import Any


class Served:
    """A display service started in this process, for take_screenshots."""

    def __init__(self, port: int) -> None:
        self.port = port

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


class ScriptedDaemon:
    """The daemon's side of the control socket with a scripted event log: for what the
    simulated table does not produce on demand (a 21 Baccarat shoe, a fault, a jackpot)."""

    def __init__(self, path: str, status: dict[str, Any]) -> None:
        from controller.access import Role
        from controller.control import ControlServer

        from controller.commands.args import COMMAND_ARGS

        self.server = ControlServer(path)
        self.log: list[Any] = []
        self.status = status
        # The commands the display uses, each needing only the read role and taking the
        # arguments the daemon's take.
        self.meters: list[dict[str, Any]] = []  # what `meters` answers (the daemon's own)
        for name, handler in (("status", lambda args: self.status),
                              ("meters", lambda args: self.meters),
                              ("devices", lambda args: []), ("events", self._events)):
            self.server.register(name, handler, role=Role.READ, args=COMMAND_ARGS.get(name))
        self.server.set_history(
            lambda after, limit: [e for e in self.log if e.seq > after][:limit])

    def _events(self, args: Any) -> list[dict[str, Any]]:
        from controller.control import event_json

        chosen = [e for e in self.log if e.seq > args.get("after_seq", 0)
                  and args.get("kind") in (None, e.kind)]
        return [event_json(e) for e in chosen[-args.get("limit", 50):]]

    def emit(self, kind: str, payload: dict[str, Any], device: str | None = None) -> float:
        """Log and publish one event. The payload goes through its catalogued record first
        (controller/events), as the daemon's own do: a script that writes an event the
        daemon could not is an error here, not a page that silently ignores it."""
        import time

        from controller.events import decode
        from controller.memory.critical import canonical
        from controller.memory.store import Event

        payload = decode(kind, payload).payload()
        event = Event(len(self.log) + 1, time.time(), kind, "info", device, None, payload,
                      "", "", canonical(payload))
        self.log.append(event)
        self.server.publish(event)
        return event.at


class ScriptedDisplay:
    """A ScriptedDaemon and the display service following it, in this process:
    ``async with ScriptedDisplay(tmp_path, table, status) as (daemon, served)``."""

    def __init__(self, workdir: Any, table: dict[str, Any], status: dict[str, Any]) -> None:
        self.daemon = ScriptedDaemon(str(workdir / "control.sock"), status)
        self.table = table
        self._tasks: list[Any] = []
        self._service: Any = None

    async def __aenter__(self) -> tuple[ScriptedDaemon, Served]:
        import asyncio

        from controller.display.service import DisplayService

        await self.daemon.server.start()
        self._service = DisplayService(self.daemon.server.path, self.table)
        port = await self._service.web.start("127.0.0.1", 0)
        self._tasks = [asyncio.create_task(self._service.follow_daemon()),
                       asyncio.create_task(self._service.publish_changes())]
        return self.daemon, Served(port)

    async def __aexit__(self, *exc: object) -> None:
        import asyncio

        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._service.web.close()
        await self.daemon.server.close()


def result_of(record: dict[str, Any], *, twenty_one: bool = False) -> dict[str, Any]:
    """A `tablectl simulate` round record (controller/rules/simulate.py) as the daemon's
    `round_settled` result: a natural is a two-card 8 or 9 (631a.6(c)), in 21 Baccarat a
    two-card 21 (681a.1)."""
    player = [c["card"] for c in record["cards"] if c["hand"] == "player"]
    banker = [c["card"] for c in record["cards"] if c["hand"] == "banker"]
    naturals = (21,) if twenty_one else (8, 9)
    return {"player": player, "banker": banker, "player_total": record["player_total"],
            "banker_total": record["banker_total"], "winner": record["outcome"],
            "player_natural": len(player) == 2 and record["player_total"] in naturals,
            "banker_natural": len(banker) == 2 and record["banker_total"] in naturals}


def settled_wager(simulated: dict[str, Any]) -> dict[str, Any]:
    """A `tablectl simulate` settlement as the daemon logs it (events.SettledWager): a
    wager that was not paid carries the odds "0" (the rules' Fraction), not null."""
    return {**simulated, "odds": simulated.get("odds") or "0"}


def play_round(daemon: ScriptedDaemon, record: dict[str, Any], round_no: int, *,
               settle: bool = True, twenty_one: bool = False) -> None:
    """One round as the daemon logs it: bets, the lock-out, the cards, the settlement; the
    daemon's status follows (the display asks for it after events)."""
    daemon.status = {**daemon.status, "state": "betting_open"}
    daemon.emit("prompt", {"action": "place_bets", "round_no": round_no})
    daemon.status = {**daemon.status, "state": "no_more_bets"}
    daemon.emit("no_more_bets", {"cause": "dealer", "round_no": round_no, "wagers": [],
                                 "progressive_seats": []})
    if record.get("last_hand"):
        daemon.emit("prompt", {"action": "last_hand"})
    daemon.status = {**daemon.status, "state": "dealing"}
    dealt = {"player": 0, "banker": 0}
    for i, card in enumerate(c for c in record["cards"] if c["hand"] in dealt):
        n = dealt[card["hand"]]  # 631a.9(c)-(d); in 21 Baccarat every card after two draws
        slot = f"{card['hand']}_" + (("first", "second")[n] if n < 2 else
                                      "draw" if twenty_one else "third")
        dealt[card["hand"]] += 1
        daemon.emit("card", {"index": i, "card": card["card"], "hand": card["hand"],
                             "slot": slot, "back": "red"}, device="shoe")
    if settle:
        daemon.emit("round_settled", {"round_no": round_no, "simulated": False,
                                      "settlements": [settled_wager(w) for w in
                                                      record.get("settlements_json", [])],
                                      "table_net_cents": 0,
                                      "result": result_of(record, twenty_one=twenty_one)})
